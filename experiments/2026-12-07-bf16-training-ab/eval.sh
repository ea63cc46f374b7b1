#!/bin/sh
# The final net of each run at the config's search (the nets' recorded [search]: 32 Gumbel
# simulations, win_check = "tree"), two matches at a time, one thread each, over the first 50 of
# 1,000 distinct 8-ply openings, colour-swapped. The commands are ../ab/eval.sh's.
D=$(cd $(dirname $0) && pwd)
ARM=bf16t X=${X:-/tmp/bf16t/xqz} R=${R:-/tmp/bf16t/runs} O=${O:-/tmp/bf16t/eval} exec $D/../ab/eval.sh
