#!/bin/sh
# Seed 2 of this config: its final net against greedy and random, as eval.sh does for seed 1.
X=/tmp/hour3/xqz-13ab63c; RUN=net:/tmp/hour3/run2; OUT=/tmp/hour3/eval2; mkdir -p $OUT
NET="--a $RUN --sims 32 --a-option algorithm=gumbel --a-option win_check=tree --seed 11"
$X arena $NET --b greedy --games 200 --pgn $OUT/greedy.pgn > $OUT/greedy.txt 2> $OUT/greedy.err &
$X arena $NET --b random --games 200 --pgn $OUT/random.pgn > $OUT/random.txt 2> $OUT/random.err
wait
echo done > $OUT/finished
