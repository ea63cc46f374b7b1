#!/bin/sh
# The final net of each run with its recorded [search] (Gumbel, win_check = "tree") at SIMS
# simulations a move for both players (default 32, the base config's; the runs were evaluated
# at 32 and, with SIMS=64 O=.../eval64, at 64), two matches at a time, one thread each. Every match plays
# colour-swapped pairs over the first 50 of 1,000 distinct 8-ply openings
# (../2026-12-02-pretrain-ab/openings.txt), so its 100 games are 100 different games: over the
# 8 built-in openings two deterministic players repeat 16 games (../2026-12-03-engine-search/).
# The commands are ../ab/eval.sh's, shared by the A/Bs of 2026-12-06.
D=$(cd $(dirname $0) && pwd)
ARM=sims64 X=${X:-/tmp/sims/xqz} R=${R:-/tmp/sims/runs} O=${O:-/tmp/sims/eval} exec $D/../ab/eval.sh
