#!/bin/sh
# The one-hour net (newest checkpoint of RUN) at the config's 32 Gumbel simulations.
X=/tmp/xqz-hour; RUN=net:/tmp/hour/run; OUT=/tmp/hour/eval; mkdir -p $OUT
NET="--a $RUN --sims 32 --a-option algorithm=gumbel --seed 11"
FSF="uci:/usr/games/fairy-stockfish --b-option UCI_Variant=xiangqi --b-ranks 1"
$X arena $NET --b greedy --games 200 --pgn $OUT/greedy.pgn > $OUT/greedy.txt 2> $OUT/greedy.err &
$X arena $NET --b random --games 200 --pgn $OUT/random.pgn > $OUT/random.txt 2> $OUT/random.err
wait
$X arena $NET --b net:/work/main/experiments/2026-11-30-cpu-1h/net --b-option algorithm=gumbel --games 100 --pgn $OUT/previous.pgn > $OUT/previous.txt 2> $OUT/previous.err &
$X arena $NET --b uci:/usr/games/fairy-stockfish --b-option UCI_Variant=xiangqi --b-ranks 1 --b-nodes 1 --games 50 --pgn $OUT/fsf-1node.pgn > $OUT/fsf-1node.txt 2> $OUT/fsf-1node.err
wait
$X arena $NET --b uci:/usr/games/fairy-stockfish --b-option UCI_Variant=xiangqi --b-option "Skill Level=0" --b-ranks 1 --b-nodes 32 --games 50 --pgn $OUT/fsf-skill0.pgn > $OUT/fsf-skill0.txt 2> $OUT/fsf-skill0.err
