#!/bin/sh
# The one-hour record's nets (../2026-12-07-cpu-1h-legal-policy/seed*/net-min60) playing with
# PUCT instead of their recorded Gumbel search, 32 simulations a move, everything else the
# recorded [search]: against the same nets with Gumbel (100 distinct games over 50 openings,
# colour-swapped), against Fairy-Stockfish 11.1 at one node (100 games over the 8 built-in
# openings, as the record's evaluation), and `xqz tactics`. Two matches at a time, one thread
# each; matches count games, not seconds. Run from the repository root.
#   X  the xqz binary
: "${X:?}"
D=experiments/2026-12-07-play-puct; OUT=$D/out; mkdir -p $OUT
OPEN=experiments/2026-12-02-pretrain-ab/openings.txt
FSF="uci:/usr/games/fairy-stockfish --b-option UCI_Variant=xiangqi --b-ranks 1 --b-nodes 1"
export RAYON_NUM_THREADS=1
for s in 1 2; do
  N=experiments/2026-12-07-cpu-1h-legal-policy/seed$s/net-min60
  P="--a net:$N --a-option algorithm=puct --sims 32 --seed 11"
  $X arena $P --b net:$N --games 100 --openings $OPEN --pgn $OUT/puct-vs-gumbel-s$s.pgn > $OUT/puct-vs-gumbel-s$s.txt 2> $OUT/puct-vs-gumbel-s$s.err &
  $X arena $P --b $FSF --games 100 --pgn $OUT/puct-fsf1-s$s.pgn > $OUT/puct-fsf1-s$s.txt 2> $OUT/puct-fsf1-s$s.err
  wait
  $X tactics --player net:$N --option algorithm=puct --sims 32 --count 100 --out $OUT/tactics-puct-s$s.tsv > $OUT/tactics-puct-s$s.txt 2> $OUT/tactics-puct-s$s.err
done
echo done > $OUT/DONE
