#!/bin/sh
# win_piece on a second, larger set of positions that no one had looked at (`--seed 7`, 300 of
# each kind): the new hours, the earlier hours (../2026-12-05-cpu-1h-current/), greedy, and
# Fairy-Stockfish 11.1 at 10,000 nodes. 32 Gumbel simulations, win_check = "tree", one thread
# each, two at a time.
X=${X:-/tmp/fast/xqz}; OUT=${OUT:-/tmp/fast/heldout}; D=$(cd $(dirname $0) && pwd)
mkdir -p $OUT; export RAYON_NUM_THREADS=1
T="--seed 7 --count 300"
N="--option algorithm=gumbel --option win_check=tree --sims 32"
$X tactics --player net:$D/seed1/net-min60 $N $T --out $OUT/new-seed1.tsv > $OUT/new-seed1.txt 2>&1 &
$X tactics --player net:$D/seed2/net-min60 $N $T --out $OUT/new-seed2.tsv > $OUT/new-seed2.txt 2>&1
wait
$X tactics --player net:$D/../2026-12-05-cpu-1h-current/seed1/net-min60 $N $T --out $OUT/old-seed1.tsv > $OUT/old-seed1.txt 2>&1 &
$X tactics --player net:$D/../2026-12-05-cpu-1h-current/seed2/net-min60 $N $T --out $OUT/old-seed2.tsv > $OUT/old-seed2.txt 2>&1
wait
$X tactics --player greedy $T --out $OUT/greedy.tsv > $OUT/greedy.txt 2>&1 &
$X tactics --player uci:/usr/games/fairy-stockfish --option UCI_Variant=xiangqi --ranks 1 --nodes 10000 $T \
  --out $OUT/fsf-10000.tsv > $OUT/fsf-10000.txt 2>&1
wait
cd $OUT && python3 $D/../2026-12-05-cpu-1h-current/tactics/compare.py fsf-10000.tsv new-seed1.tsv \
  new-seed2.tsv old-seed1.tsv old-seed2.tsv greedy.tsv > compare.txt
