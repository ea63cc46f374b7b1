#!/bin/sh
# Calibrates the skill levels of the recorded xiangqi and janggi nets, the tables written into
# the nets' manifests, with JSON reports and logs here (as run on 2026-12-03: the xiangqi net
# first, one thread; then the janggi net, two threads, at a smaller budget to fit the session).
#   XQZ=target/release/xqz FSF=/usr/games/fairy-stockfish sh experiments/2026-12-03-strength-levels/run.sh
set -eu
XQZ=${XQZ:-target/release/xqz}
FSF=${FSF:-/usr/games/fairy-stockfish}
D=experiments/2026-12-03-strength-levels
# xiangqi over the 100 varied eight-ply lines of the engine-search record (deterministic
# players repeat their games over the 8 built-in openings), Fairy-Stockfish at one node on the
# ladder.
"$XQZ" calibrate --net experiments/2026-12-01-cpu-1h-win-check/net --simulations 400 \
    --games 60 --threads 1 --engine "uci:$FSF" --engine-nodes 1 --engine-levels 14,17,20 \
    --openings experiments/2026-12-03-engine-search/openings.txt \
    --json "$D/xiangqi.json" > "$D/xiangqi.txt" 2> "$D/xiangqi.log"
# janggi over its 8 built-in openings; no engine: Fairy-Stockfish 11.1 (Debian's) plays
# traditional janggi, and under the net's `site` rules (a cannon may slide without a screen) it
# drops such a move of ours and answers for the wrong side, forfeiting every game.
"$XQZ" calibrate --net experiments/2026-12-01-janggi-cpu-1h/net --simulations 200 \
    --games 40 --threads 2 \
    --json "$D/janggi.json" > "$D/janggi.txt" 2> "$D/janggi.log"
