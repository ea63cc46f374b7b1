#!/bin/sh
# Both hours' win_piece misses (the issue's set, eval/seedN-min60/tactics-tree.tsv) judged by
# Fairy-Stockfish 11.1 at depth 12, as ../2026-12-06-win-piece-judged/ judged earlier hours': a
# miss is real when the net's move scores more than 100 centipawns below the best correct capture.
# Writes OUT/judged/judged-seed{1,2}.txt.
D=$(cd $(dirname $0) && pwd); OUT=${OUT:-/tmp/h2/eval}
mkdir -p $OUT/judged
python3 $D/../2026-12-06-win-piece-judged/judge.py $D/eval/seed1-min60/tactics-tree.tsv \
  > $OUT/judged/judged-seed1.txt 2>&1
python3 $D/../2026-12-06-win-piece-judged/judge.py $OUT/seed2-min60/tactics-tree.tsv \
  > $OUT/judged/judged-seed2.txt 2>&1
