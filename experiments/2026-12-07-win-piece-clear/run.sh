#!/bin/sh
# The clear win-a-piece positions of `xqz tactics` (issue #25), default set (seed 20261201, 100
# of each kind). Run from the repository root with X the binary of the commit that adds them.
set -eu
D=experiments/2026-12-07-win-piece-clear; OUT=$D/out
$X tactics --player greedy --out $OUT/tactics-greedy.tsv
$X tactics --player uci:/usr/games/fairy-stockfish --nodes 1000000 --out $OUT/tactics-fsf-1m.tsv > $OUT/tactics-fsf-1m.txt
for s in 1 2; do
    $X tactics --player net:experiments/2026-12-06-cpu-1h-bf16/seed$s/net-min60 --option algorithm=gumbel \
        --sims 32 --count 100 --option win_check=tree --out $OUT/tactics-seed$s-min60.tsv
done
# Fairy-Stockfish at depth 12 on every miss among the clear positions (judge.py of
# ../2026-12-06-win-piece-judged/).
for p in fsf-1m seed1-min60 seed2-min60; do
    awk -F'\t' '$1=="win_piece" && $6=="clear"' $OUT/tactics-$p.tsv | cut -f1-5 > /tmp/clear-$p.tsv
    python3 experiments/2026-12-06-win-piece-judged/judge.py /tmp/clear-$p.tsv 12 > $OUT/judged-$p-clear.txt
done
