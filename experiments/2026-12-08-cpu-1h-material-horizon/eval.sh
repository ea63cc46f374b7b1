#!/bin/sh
# The hour's net against the fixed opponents of the previous records (../hour/eval_hour.sh): 32
# Gumbel simulations, win_check = "tree", colour-swapped pairs over the 8 built-in openings, seed
# 11, two matches at a time, one thread each; head to head against the previous record's hour of
# seed 1 (../2026-12-07-cpu-1h-legal-policy/, the same config without material_plies). Then the
# issue's set's win_piece misses judged by Fairy-Stockfish 11.1 at depth 12
# (../2026-12-06-win-piece-judged/judge.py), and a second tactics set (--seed 777).
D=$(cd $(dirname $0) && pwd)
export X=${X:-/tmp/h5/xqz} R=${R:-/tmp/h5} OUT=${OUT:-/tmp/h5/eval}
PREV=net:$D/../2026-12-07-cpu-1h-legal-policy/seed1/net-min60 $D/../hour/eval_hour.sh
mkdir -p $OUT/judged
python3 $D/../2026-12-06-win-piece-judged/judge.py $OUT/seed1-min60/tactics-tree.tsv \
  > $OUT/judged/judged-seed1.txt 2>&1
RAYON_NUM_THREADS=1 $X tactics --player net:$R/seed1/snap/min60 --option algorithm=gumbel --sims 32 \
  --count 100 --seed 777 --option win_check=tree --out $OUT/seed1-min60/tactics-777.tsv \
  > $OUT/seed1-min60/tactics-777.txt 2>&1
echo judged-done > $OUT/DONE2
