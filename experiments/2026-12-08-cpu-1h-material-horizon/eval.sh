#!/bin/sh
# The hour's net against the fixed opponents of the previous records (../hour/eval_hour.sh): 32
# Gumbel simulations, win_check = "tree", colour-swapped pairs over the 8 built-in openings, seed
# 11, two matches at a time, one thread each; head to head against the previous record's hour of
# the same seed (../2026-12-07-cpu-1h-legal-policy/, the same config without material_plies).
# Then the set's win_piece misses judged by Fairy-Stockfish 11.1 at depth 12
# (../2026-12-06-win-piece-judged/judge.py), and a second tactics set (--seed 777).
#   SEED 1 unless set (eval-seed2.sh sets 2 and seed 2's folders).
D=$(cd $(dirname $0) && pwd)
SEED=${SEED:-1}
export SEED X=${X:-/tmp/h5/xqz} R=${R:-/tmp/h5} OUT=${OUT:-/tmp/h5/eval}
PREV=net:$D/../2026-12-07-cpu-1h-legal-policy/seed$SEED/net-min60 $D/../hour/eval_hour.sh
mkdir -p $OUT/judged
python3 $D/../2026-12-06-win-piece-judged/judge.py $OUT/seed$SEED-min60/tactics-tree.tsv \
  > $OUT/judged/judged-seed$SEED.txt 2>&1
RAYON_NUM_THREADS=1 $X tactics --player net:$R/seed$SEED/snap/min60 --option algorithm=gumbel \
  --sims 32 --count 100 --seed 777 --option win_check=tree \
  --out $OUT/seed$SEED-min60/tactics-777.tsv > $OUT/seed$SEED-min60/tactics-777.txt 2>&1
echo judged-done > $OUT/DONE2
