#!/bin/sh
# win_piece on the second, larger set of positions kept back (`--seed 7`, 300 of each kind), as in
# ../2026-12-06-cpu-1h-full-search-half/heldout.sh: both seeds' hours (seed 1's net from this
# record's seed1/net-min60), beside the files of the earlier records' hours, greedy and
# Fairy-Stockfish 11.1 at 10,000 nodes (the same positions; compare.py refuses others). 32 Gumbel
# simulations, win_check = "tree", one thread each, two at a time.
D=$(cd $(dirname $0) && pwd)
X=${X:-/tmp/h2/xqz}; R=${R:-/tmp/h2}; OUT=${OUT:-/tmp/h2/heldout}
F=$D/../2026-12-05-cpu-1h-fast-training/eval/heldout; H=$D/../2026-12-06-cpu-1h-full-search-half/eval/heldout
mkdir -p $OUT; export RAYON_NUM_THREADS=1
T="--seed 7 --count 300"
N="--option algorithm=gumbel --option win_check=tree --sims 32"
$X tactics --player net:$D/seed1/net-min60 $N $T --out $OUT/bf16-seed1.tsv > $OUT/bf16-seed1.txt 2>&1 &
$X tactics --player net:$R/seed2/snap/min60 $N $T --out $OUT/bf16-seed2.tsv > $OUT/bf16-seed2.txt 2>&1
wait
cd $OUT && python3 $D/../2026-12-05-cpu-1h-current/tactics/compare.py $F/fsf-10000.tsv bf16-seed1.tsv \
  bf16-seed2.tsv $H/half-seed1.tsv $H/half-seed2.tsv $F/greedy.tsv > compare.txt
