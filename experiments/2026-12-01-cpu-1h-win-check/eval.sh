#!/bin/sh
# The final net of this record (newest checkpoint of RUN) at the config's 32 Gumbel simulations
# with the config's search (win_check = "tree"): colour-swapped pairs over the 8 built-in
# openings, a 600-ply cap, seed 11, as ../2026-12-01-cpu-1h/eval.sh.
X=${X:-/tmp/hour3/xqz-13ab63c}; RUN=net:${RUN:-/tmp/hour3/run}; OUT=${OUT:-/tmp/hour3/eval}
mkdir -p $OUT
E=/work/main/experiments
SEED1=net:$E/2026-12-01-cpu-1h/net; SEED2=net:$E/2026-12-01-cpu-1h-seed2/net
PREV=net:$E/2026-11-30-cpu-1h/net
NET="--a $RUN --sims 32 --a-option algorithm=gumbel --a-option win_check=tree --seed 11"
FSF="uci:/usr/games/fairy-stockfish --b-option UCI_Variant=xiangqi --b-ranks 1"
$X arena $NET --b greedy --games 200 --pgn $OUT/greedy.pgn > $OUT/greedy.txt 2> $OUT/greedy.err &
$X arena $NET --b random --games 200 --pgn $OUT/random.pgn > $OUT/random.txt 2> $OUT/random.err
wait
# The earlier records' nets with the same search, so that only the training differs.
$X arena $NET --b $SEED1 --b-option algorithm=gumbel --b-option win_check=tree --games 100 \
  --pgn $OUT/seed1.pgn > $OUT/seed1.txt 2> $OUT/seed1.err &
$X arena $NET --b $SEED2 --b-option algorithm=gumbel --b-option win_check=tree --games 100 \
  --pgn $OUT/seed2.pgn > $OUT/seed2.txt 2> $OUT/seed2.err
wait
$X arena $NET --b $FSF --b-nodes 1 --games 50 --pgn $OUT/fsf-1node.pgn > $OUT/fsf-1node.txt 2> $OUT/fsf-1node.err &
$X arena $NET --b $FSF --b-option "Skill Level=0" --b-nodes 32 --games 50 --pgn $OUT/fsf-skill0.pgn \
  > $OUT/fsf-skill0.txt 2> $OUT/fsf-skill0.err
wait
$X arena $NET --b $PREV --b-option algorithm=gumbel --b-option win_check=tree --games 100 \
  --pgn $OUT/previous.pgn > $OUT/previous.txt 2> $OUT/previous.err &
# Tactical positions kept back from training (default seed), 100 of each kind, with the search
# check (tree) and without it (off: the net's own skill).
for c in tree off; do
  echo "== $RUN win_check=$c"
  $X tactics --player $RUN --option algorithm=gumbel --option win_check=$c --sims 32 --count 100
done > $OUT/tactics.txt 2> $OUT/tactics.err
wait
