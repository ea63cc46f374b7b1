#!/bin/sh
# The one-hour record's nets (../2026-12-07-cpu-1h-legal-policy/seed*/net-min60) playing with
# Gumbel's c_scale C instead of their recorded 1.0, 32 simulations a move, everything else the
# recorded [search]: against the same nets with the recorded search (100 distinct games over 50
# openings, colour-swapped), against Fairy-Stockfish 11.1 at one node (100 games over the 8
# built-in openings, as the record's evaluation), and `xqz tactics` on the reported set and on a
# second set (seed 777). Two matches at a time, one thread each; matches count games, not
# seconds. Run from the repository root.
#   X  the xqz binary;  C  the c_scale
: "${X:?}" "${C:?}"
D=experiments/2026-12-07-play-c-scale; OUT=$D/out; mkdir -p $OUT
OPEN=experiments/2026-12-02-pretrain-ab/openings.txt
FSF="uci:/usr/games/fairy-stockfish --b-option UCI_Variant=xiangqi --b-ranks 1 --b-nodes 1"
export RAYON_NUM_THREADS=1
for s in 1 2; do
  N=experiments/2026-12-07-cpu-1h-legal-policy/seed$s/net-min60
  P="--a net:$N --a-option gumbel_c_scale=$C --sims 32 --seed 11"
  T=c$C-s$s
  $X arena $P --b net:$N --games 100 --openings $OPEN --pgn $OUT/$T-vs-recorded.pgn > $OUT/$T-vs-recorded.txt 2> $OUT/$T-vs-recorded.err &
  $X arena $P --b $FSF --games 100 --pgn $OUT/$T-fsf1.pgn > $OUT/$T-fsf1.txt 2> $OUT/$T-fsf1.err
  wait
  for seed in 20261201 777; do
    $X tactics --player net:$N --option gumbel_c_scale=$C --sims 32 --count 100 --seed $seed --out $OUT/$T-tactics-$seed.tsv > $OUT/$T-tactics-$seed.txt 2> $OUT/$T-tactics-$seed.err
  done
done
echo done > $OUT/DONE-c$C
