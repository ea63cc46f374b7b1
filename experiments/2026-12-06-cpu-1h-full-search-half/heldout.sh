#!/bin/sh
# win_piece on the second, larger set of positions kept back (`--seed 7`, 300 of each kind), as in
# ../2026-12-05-cpu-1h-fast-training/heldout.sh: the new hours, scored beside that record's files
# for its hours, the earlier hours, greedy and Fairy-Stockfish 11.1 at 10,000 nodes (the same
# positions; compare.py refuses files of other positions). 32 Gumbel simulations,
# win_check = "tree", one thread each, two at a time.
X=${X:-/tmp/half1h/xqz}; OUT=${OUT:-/tmp/half1h/heldout}; R=${R:-/tmp/half1h}
D=$(cd $(dirname $0) && pwd); P=$D/../2026-12-05-cpu-1h-fast-training/eval/heldout
mkdir -p $OUT; export RAYON_NUM_THREADS=1
T="--seed 7 --count 300"
N="--option algorithm=gumbel --option win_check=tree --sims 32"
$X tactics --player net:$R/seed1/snap/min60 $N $T --out $OUT/half-seed1.tsv > $OUT/half-seed1.txt 2>&1 &
$X tactics --player net:$R/seed2/snap/min60 $N $T --out $OUT/half-seed2.tsv > $OUT/half-seed2.txt 2>&1
wait
cd $OUT && python3 $D/../2026-12-05-cpu-1h-current/tactics/compare.py $P/fsf-10000.tsv half-seed1.tsv \
  half-seed2.tsv $P/new-seed1.tsv $P/new-seed2.tsv $P/greedy.tsv > compare.txt
