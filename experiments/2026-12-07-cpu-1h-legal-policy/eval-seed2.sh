#!/bin/sh
# eval.sh for seed 2: the same matches, head to head against the previous record's hour of seed 2
# (../2026-12-06-cpu-1h-bf16/seed2/); then the set's win_piece misses judged by
# Fairy-Stockfish 11.1 at depth 12 (../2026-12-06-win-piece-judged/judge.py).
D=$(cd $(dirname $0) && pwd)
export X=${X:-/tmp/h4/xqz} R=${R:-/tmp/h4} OUT=${OUT:-/tmp/h4/eval}
SEED=2 PREV=net:$D/../2026-12-06-cpu-1h-bf16/seed2/net-min60 $D/../hour/eval_hour.sh
mkdir -p $OUT/judged
python3 $D/../2026-12-06-win-piece-judged/judge.py $OUT/seed2-min60/tactics-tree.tsv \
  > $OUT/judged/judged-seed2.txt 2>&1
echo judged-done > $OUT/DONE2
