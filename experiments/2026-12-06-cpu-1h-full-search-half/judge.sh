#!/bin/sh
# The new hours' win_piece misses (the issue's set, eval/seedN-min60/tactics-tree.tsv) judged by
# Fairy-Stockfish 11.1 at depth 12, as ../2026-12-06-win-piece-judged/ judged the previous
# hours': a miss is real when the net's move scores more than 100 centipawns below the best
# correct capture.
OUT=${OUT:-/tmp/half1h/eval}; D=$(cd $(dirname $0) && pwd)
for s in 1 2; do
  python3 $D/../2026-12-06-win-piece-judged/judge.py $OUT/seed$s-min60/tactics-tree.tsv \
    > $OUT/judged-seed$s.txt 2>&1
done
