#!/bin/sh
# eval.sh for seed 2: the same matches, head to head against the previous record's hour of seed 2
# (../2026-12-07-cpu-1h-legal-policy/seed2/); then the set's win_piece misses judged by
# Fairy-Stockfish 11.1 at depth 12 (../2026-12-06-win-piece-judged/judge.py), and the second
# tactics set (--seed 777).
D=$(cd $(dirname $0) && pwd)
export X=${X:-/tmp/h5/xqz} R=${R:-/tmp/h6} OUT=${OUT:-/tmp/h6/eval}
SEED=2 PREV=net:$D/../2026-12-07-cpu-1h-legal-policy/seed2/net-min60 $D/../hour/eval_hour.sh
mkdir -p $OUT/judged
python3 $D/../2026-12-06-win-piece-judged/judge.py $OUT/seed2-min60/tactics-tree.tsv \
  > $OUT/judged/judged-seed2.txt 2>&1
RAYON_NUM_THREADS=1 $X tactics --player net:$R/seed2/snap/min60 --option algorithm=gumbel --sims 32 \
  --count 100 --seed 777 --option win_check=tree --out $OUT/seed2-min60/tactics-777.tsv \
  > $OUT/seed2-min60/tactics-777.txt 2>&1
echo judged-done > $OUT/DONE2
