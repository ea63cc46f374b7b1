#!/bin/sh
# The final net of each run at the config's search (the nets' recorded [search]: 32 Gumbel
# simulations, win_check = "tree"), two matches at a time, one thread each. Every match plays
# colour-swapped pairs over the first 50 of 1,000 distinct 8-ply openings
# (../2026-12-02-pretrain-ab/openings.txt), so its 100 games are 100 different games: over the
# 8 built-in openings two deterministic players repeat 16 games (../2026-12-03-engine-search/).
# The commands are ../ab/eval.sh's, shared by the A/Bs of 2026-12-06.
D=$(cd $(dirname $0) && pwd)
ARM=full75 X=${X:-/tmp/full75/xqz} R=${R:-/tmp/full75/runs} O=${O:-/tmp/full75/eval} exec $D/../ab/eval.sh
