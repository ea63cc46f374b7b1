#!/bin/sh
# The matches of the previous one-hour record (../2026-12-05-cpu-1h-fast-training/eval.sh) for
# both seeds' copies at 30 and 60 minutes: 32 Gumbel simulations, win_check = "tree",
# colour-swapped pairs over the 8 built-in openings, seed 11, two matches at a time, one thread
# each. Matches count games, not seconds: the host's speed does not enter them. "previous" is the
# previous record's hour of the same seed (../2026-12-05-cpu-1h-fast-training/seedN/net-min60:
# full_search_prob = 0.25). Then each hour against the other seed's previous hour and against the
# two-hour net (../2026-12-05-cpu-2h-fast-training/net-min120), the two new hours head to head,
# each hour against its 30-minute net, and the previous hours' and the two-hour net's tactics
# again with this binary.
X=${X:-/tmp/half1h/xqz}; R=${R:-/tmp/half1h}; OUT=${OUT:-/tmp/half1h/eval}
mkdir -p $OUT
export RAYON_NUM_THREADS=1
E=$(cd $(dirname $0)/.. && pwd)
OLD1=net:$E/2026-12-05-cpu-1h-fast-training/seed1/net-min60
OLD2=net:$E/2026-12-05-cpu-1h-fast-training/seed2/net-min60
TWO=net:$E/2026-12-05-cpu-2h-fast-training/net-min120
G="--sims 32 --seed 11 --a-option algorithm=gumbel --a-option win_check=tree"
NETB="--b-option algorithm=gumbel --b-option win_check=tree"
FSF="uci:/usr/games/fairy-stockfish --b-option UCI_Variant=xiangqi --b-ranks 1"
TAC="--option algorithm=gumbel --sims 32 --count 100"
echo "eval start $(date -u +%FT%TZ)"
for s in 1 2; do
  if [ $s = 1 ]; then SAME=$OLD1; OTHER=$OLD2; else SAME=$OLD2; OTHER=$OLD1; fi
  for m in ${MINUTES:-60 30}; do
    N=$R/seed$s/snap/min$m
    NET="--a net:$N $G"
    O=$OUT/seed$s-min$m; mkdir -p $O
    $X arena $NET --b $FSF --b-nodes 1 --games 100 --pgn $O/fsf-1node.pgn > $O/fsf-1node.txt 2> $O/fsf-1node.err &
    $X arena $NET --b greedy --games 200 --pgn $O/greedy.pgn > $O/greedy.txt 2> $O/greedy.err
    wait
    $X arena $NET --b random --games 200 --pgn $O/random.pgn > $O/random.txt 2> $O/random.err &
    $X arena $NET --b $FSF --b-option "Skill Level=0" --b-nodes 32 --games 50 --pgn $O/fsf-skill0.pgn \
      > $O/fsf-skill0.txt 2> $O/fsf-skill0.err
    wait
    $X arena $NET --b $SAME $NETB --games 100 --pgn $O/previous.pgn > $O/previous.txt 2> $O/previous.err &
    $X arena $NET --b $OTHER $NETB --games 100 --pgn $O/previous-other-seed.pgn \
      > $O/previous-other-seed.txt 2> $O/previous-other-seed.err
    wait
    if [ $m = 60 ]; then
      $X arena $NET --b $TWO $NETB --games 100 --pgn $O/two-hour.pgn > $O/two-hour.txt 2> $O/two-hour.err
    fi
    for c in tree off; do
      echo "== seed$s min$m win_check=$c"
      $X tactics --player net:$N $TAC --option win_check=$c --out $O/tactics-$c.tsv
    done > $O/tactics.txt 2> $O/tactics.err
    echo "seed$s min$m done $(date -u +%FT%TZ)"
  done
  $X arena --a net:$R/seed$s/snap/min60 $G --b net:$R/seed$s/snap/min30 $NETB --games 100 \
    --pgn $OUT/seed$s-min60-vs-min30.pgn > $OUT/seed$s-min60-vs-min30.txt 2> $OUT/seed$s-min60-vs-min30.err
done
$X arena --a net:$R/seed2/snap/min60 $G --b net:$R/seed1/snap/min60 $NETB --games 100 \
  --pgn $OUT/seed2-vs-seed1.pgn > $OUT/seed2-vs-seed1.txt 2> $OUT/seed2-vs-seed1.err
mkdir -p $OUT/earlier
for n in "previous-seed1 $OLD1" "previous-seed2 $OLD2" "two-hour $TWO"; do
  set -- $n
  $X tactics --player $2 $TAC --option win_check=tree --out $OUT/earlier/$1.tsv > $OUT/earlier/$1.txt 2>&1
done
echo "eval end $(date -u +%FT%TZ)"
echo eval-done > $OUT/DONE
