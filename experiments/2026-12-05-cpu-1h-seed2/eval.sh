#!/bin/sh
# The same matches as ../2026-12-05-cpu-2h/eval.sh (seed 1's record), for seed 2's copies at 30
# and 60 minutes: 32 Gumbel simulations, win_check = "tree", colour-swapped pairs over the 8
# built-in openings, seed 11, two matches at a time, one thread each. Matches count games, not
# seconds: the host's speed does not enter them. Then the two seeds' hour nets head to head.
X=${X:-/tmp/s2/xqz}; R=${R:-/tmp/s2}; OUT=${OUT:-/tmp/s2/eval}
mkdir -p $OUT
export RAYON_NUM_THREADS=1
E=/work/main/experiments
PREV=net:$E/2026-12-04-cpu-1h-features/seed1/net
OLD=net:$E/2026-12-01-cpu-1h-win-check/net
SEED1=net:$E/2026-12-05-cpu-2h/net-min60
G="--sims 32 --seed 11 --a-option algorithm=gumbel --a-option win_check=tree"
NETB="--b-option algorithm=gumbel --b-option win_check=tree"
FSF="uci:/usr/games/fairy-stockfish --b-option UCI_Variant=xiangqi --b-ranks 1"
for m in ${MINUTES:-60 30}; do
  NET="--a net:$R/snap/min$m $G"
  O=$OUT/min$m; mkdir -p $O
  $X arena $NET --b $FSF --b-nodes 1 --games 100 --pgn $O/fsf-1node.pgn > $O/fsf-1node.txt 2> $O/fsf-1node.err &
  $X arena $NET --b greedy --games 200 --pgn $O/greedy.pgn > $O/greedy.txt 2> $O/greedy.err
  wait
  $X arena $NET --b random --games 200 --pgn $O/random.pgn > $O/random.txt 2> $O/random.err &
  $X arena $NET --b $FSF --b-option "Skill Level=0" --b-nodes 32 --games 50 --pgn $O/fsf-skill0.pgn \
    > $O/fsf-skill0.txt 2> $O/fsf-skill0.err
  wait
  $X arena $NET --b $PREV $NETB --games 100 --pgn $O/previous.pgn > $O/previous.txt 2> $O/previous.err &
  $X arena $NET --b $OLD $NETB --games 100 --pgn $O/old-record.pgn > $O/old-record.txt 2> $O/old-record.err
  wait
  for c in tree off; do
    echo "== min$m win_check=$c"
    $X tactics --player net:$R/snap/min$m --option algorithm=gumbel --option win_check=$c --sims 32 --count 100
  done > $O/tactics.txt 2> $O/tactics.err
done
$X arena --a net:$R/snap/min60 $G --b net:$R/snap/min30 $NETB --games 100 \
  --pgn $OUT/min60-vs-min30.pgn > $OUT/min60-vs-min30.txt 2> $OUT/min60-vs-min30.err &
$X arena --a net:$R/snap/min60 $G --b $SEED1 $NETB --games 100 \
  --pgn $OUT/seed2-vs-seed1.pgn > $OUT/seed2-vs-seed1.txt 2> $OUT/seed2-vs-seed1.err
wait
echo eval-done > $OUT/DONE
