#!/bin/sh
# The second seed's one-hour net (newest checkpoint of RUN) at the config's 32 Gumbel
# simulations, the same matches as ../2026-12-01-cpu-1h/eval.sh, plus the tactical check of
# both seeds' nets.
X=/tmp/hour2/xqz-new; RUN=net:/tmp/hour2/run; OUT=/tmp/hour2/eval; mkdir -p $OUT
SEED1=/work/main/experiments/2026-12-01-cpu-1h/net
NET="--a $RUN --sims 32 --a-option algorithm=gumbel --seed 11"
$X arena $NET --b greedy --games 200 --pgn $OUT/greedy.pgn > $OUT/greedy.txt 2> $OUT/greedy.err &
$X arena $NET --b random --games 200 --pgn $OUT/random.pgn > $OUT/random.txt 2> $OUT/random.err
wait
$X arena $NET --b net:$SEED1 --b-option algorithm=gumbel --games 100 --pgn $OUT/seed1.pgn > $OUT/seed1.txt 2> $OUT/seed1.err &
$X arena $NET --b uci:/usr/games/fairy-stockfish --b-option UCI_Variant=xiangqi --b-ranks 1 --b-nodes 1 --games 50 --pgn $OUT/fsf-1node.pgn > $OUT/fsf-1node.txt 2> $OUT/fsf-1node.err
wait
$X arena $NET --b uci:/usr/games/fairy-stockfish --b-option UCI_Variant=xiangqi --b-option "Skill Level=0" --b-ranks 1 --b-nodes 32 --games 50 --pgn $OUT/fsf-skill0.pgn > $OUT/fsf-skill0.txt 2> $OUT/fsf-skill0.err &
$X arena $NET --b net:/work/main/experiments/2026-11-30-cpu-1h/net --b-option algorithm=gumbel --games 100 --pgn $OUT/previous.pgn > $OUT/previous.txt 2> $OUT/previous.err
wait
# Tactical positions kept back from training (default seed), 100 of each kind.
for who in "$RUN" "net:$SEED1" "net:/work/main/experiments/2026-11-30-cpu-1h/net"; do
  $X tactics --player $who --option algorithm=gumbel --sims 32 --count 100
done > $OUT/tactics-nets.txt 2> $OUT/tactics-nets.err
for who in greedy random; do $X tactics --player $who --count 100; done > $OUT/tactics-baselines.txt
