#!/bin/sh
# The hour's net against the fixed opponents of the previous records (../hour/eval_hour.sh): 32
# Gumbel simulations, win_check = "tree", colour-swapped pairs over the 8 built-in openings, seed
# 11, two matches at a time, one thread each; head to head against the previous record's hour of
# seed 1 (../2026-12-06-cpu-1h-bf16/, the build before these changes, the same config). Then the
# issue's set's win_piece misses judged by Fairy-Stockfish 11.1 at depth 12
# (../2026-12-06-win-piece-judged/judge.py).
D=$(cd $(dirname $0) && pwd)
export X=${X:-/tmp/h3/xqz} R=${R:-/tmp/h3} OUT=${OUT:-/tmp/h3/eval}
PREV=net:$D/../2026-12-06-cpu-1h-bf16/seed1/net-min60 $D/../hour/eval_hour.sh
mkdir -p $OUT/judged
python3 $D/../2026-12-06-win-piece-judged/judge.py $OUT/seed1-min60/tactics-tree.tsv \
  > $OUT/judged/judged-seed1.txt 2>&1
echo judged-done > $OUT/DONE2
