#!/bin/sh
# The one-hour net of seed 2 at 32 simulations against itself with another play-time search:
# PUCT, and Gumbel with 32 considered moves, each against the net's recorded search (Gumbel,
# 16 considered moves), 100 games over the first 50 distinct openings, colour-swapped; then
# the tactics answers of each variant. One thread.
X=${X:-/work/main/target/release/xqz}; E=$(cd $(dirname $0)/.. && pwd); O=$(cd $(dirname $0) && pwd)/out
N=$E/2026-12-05-cpu-1h-fast-training/seed2/net-min60
S="--sims 32 --games 100 --seed 1 --openings $E/2026-12-02-pretrain-ab/openings.txt"
export RAYON_NUM_THREADS=1
$X arena --a net:$N --a-option algorithm=puct --b net:$N $S > $O/puct-vs-gumbel-1h-seed2.txt 2>/dev/null
$X arena --a net:$N --a-option gumbel_considered_moves=32 --b net:$N $S > $O/considered32-vs-16-1h-seed2.txt 2>/dev/null
$X tactics --player $N --option algorithm=puct --sims 32 > $O/tactics-puct-1h-seed2.txt 2>/dev/null
$X tactics --player $N --option gumbel_considered_moves=32 --sims 32 > $O/tactics-considered32-1h-seed2.txt 2>/dev/null
