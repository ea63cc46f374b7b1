#!/bin/sh
# Fixed nets (the two one-hour records), win_check off / root / tree, at the records' own
# settings: 32 Gumbel simulations, colour-swapped pairs over the 8 built-in openings, seed 11.
# The "off" arm is the records' own matches; one of them (seed 1 vs random) was replayed with
# this binary and came out identical, game for game totals (195-3-2).
# X is the binary of commit 13ab63c. (The "root" arm was played by an interim build of the same
# code whose option was a boolean, root_win_check=true; it searches exactly as win_check=root.)
X=${X:-./target/release/xqz}; E=experiments; OUT=${OUT:-/tmp/win-check}; mkdir -p $OUT
S1=net:$E/2026-12-01-cpu-1h/net; S2=net:$E/2026-12-01-cpu-1h-seed2/net
m() { $X arena --a $1 --sims 32 --a-option algorithm=gumbel --a-option win_check=$3 --seed 11 \
        --b $2 --games 200 > $OUT/$4.txt 2> $OUT/$4.err; }
for s in 1 2; do
  eval S=\$S$s
  for c in root tree; do m $S random $c s$s-$c-random & m $S greedy $c s$s-$c-greedy; wait; done
done
m $S1 random off s1-off-random
for w in $S1 $S2; do for c in off root tree; do
  echo "== $w win_check=$c"
  $X tactics --player $w --option algorithm=gumbel --option win_check=$c --sims 32 --count 100
done; done > $OUT/tactics.txt
