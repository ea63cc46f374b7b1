#!/bin/sh
# The final net of this record (newest checkpoint of RUN) at the config's 32 Gumbel simulations
# with the config's search (win_check = "tree"), under the site rules: colour-swapped pairs over
# janggi's 8 built-in openings (the horse-elephant arrangements), a 600-ply cap, seed 11, as the
# xiangqi records' eval.sh. The issue's bar: 100 games each against random and greedy.
X=${X:-/tmp/xqz-janggi}; RUN=net:${RUN:-/tmp/jrun/run}; OUT=${OUT:-/tmp/jrun/eval}
mkdir -p $OUT
NET="--a $RUN --sims 32 --a-option algorithm=gumbel --a-option win_check=tree --seed 11"
$X arena $NET --b greedy --games 100 --pgn $OUT/greedy.pgn > $OUT/greedy.txt 2> $OUT/greedy.err &
$X arena $NET --b random --games 100 --pgn $OUT/random.pgn > $OUT/random.txt 2> $OUT/random.err
wait
# The initial (untrained) net of the same run with the same search: what the hour added.
$X arena $NET --b net:${RUN#net:}/checkpoints/ckpt-000000 --b-option algorithm=gumbel \
  --b-option win_check=tree --games 100 --pgn $OUT/initial.pgn > $OUT/initial.txt 2> $OUT/initial.err &
# The baselines against each other, for scale.
$X arena --game janggi --a greedy --b random --games 100 --seed 11 > $OUT/greedy-random.txt 2>&1
wait
