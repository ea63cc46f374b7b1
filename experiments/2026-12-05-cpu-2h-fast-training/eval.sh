#!/bin/sh
# The copies of seed 1's run at 90 and 120 minutes (snap/minM) against the fixed opponents of
# ../2026-12-05-cpu-1h-fast-training/eval.sh, which already played its copies at 30 and 60
# minutes: 32 Gumbel simulations, win_check = "tree", colour-swapped pairs over the 8 built-in
# openings, seed 11, two matches at a time, one thread each. Matches count games, not seconds:
# the host's speed does not enter them. Then: each copy against the one 30 minutes older; the
# copies at 60 and 120 minutes against the earlier two-hour record's copies at the same minutes
# (../2026-12-05-cpu-2h/, config and code of 81d205f); and the second win_piece set (`--seed 7`,
# 300 positions) for every copy but the 60-minute one, which the one-hour record measured.
X=${X:-/tmp/fast/xqz}; R=${R:-/tmp/fast/seed1}; OUT=${OUT:-/tmp/fast/eval2h}
mkdir -p $OUT
export RAYON_NUM_THREADS=1
E=$(cd $(dirname $0)/.. && pwd)
SAME=net:$E/2026-12-05-cpu-1h-current/seed1/net-min60
OTHER=net:$E/2026-12-05-cpu-1h-current/seed2/net-min60
G="--sims 32 --seed 11 --a-option algorithm=gumbel --a-option win_check=tree"
NETB="--b-option algorithm=gumbel --b-option win_check=tree"
FSF="uci:/usr/games/fairy-stockfish --b-option UCI_Variant=xiangqi --b-ranks 1"
echo "eval start $(date -u +%FT%TZ)"
for m in 90 120; do
  N=$R/snap/min$m
  NET="--a net:$N $G"
  O=$OUT/min$m; mkdir -p $O
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
  for c in tree off; do
    echo "== seed1 min$m win_check=$c"
    $X tactics --player net:$N --option algorithm=gumbel --option win_check=$c --sims 32 --count 100 \
      --out $O/tactics-$c.tsv
  done > $O/tactics.txt 2> $O/tactics.err
  echo "min$m done $(date -u +%FT%TZ)"
done
vs() { # A-minutes B-net name
  $X arena --a net:$R/snap/min$1 $G --b $2 $NETB --games 100 --pgn $OUT/$3.pgn > $OUT/$3.txt 2> $OUT/$3.err
}
vs 90 net:$R/snap/min60 min90-vs-min60 &
vs 120 net:$R/snap/min90 min120-vs-min90
wait
vs 60 net:$E/2026-12-05-cpu-2h/net-min60 min60-vs-2h-record-min60 &
vs 120 net:$E/2026-12-05-cpu-2h/net-min120 min120-vs-2h-record-min120
wait
T="--seed 7 --count 300"
TN="--option algorithm=gumbel --option win_check=tree --sims 32"
mkdir -p $OUT/heldout
$X tactics --player net:$R/snap/min30 $TN $T --out $OUT/heldout/min30.tsv > $OUT/heldout/min30.txt 2>&1 &
$X tactics --player net:$R/snap/min90 $TN $T --out $OUT/heldout/min90.tsv > $OUT/heldout/min90.txt 2>&1
wait
$X tactics --player net:$R/snap/min120 $TN $T --out $OUT/heldout/min120.tsv > $OUT/heldout/min120.txt 2>&1 &
$X tactics --player net:$E/2026-12-05-cpu-2h/net-min120 $TN $T --out $OUT/heldout/2h-record-min120.tsv \
  > $OUT/heldout/2h-record-min120.txt 2>&1
wait
echo "eval end $(date -u +%FT%TZ)"
echo eval-done > $OUT/DONE
