#!/bin/sh
# The final net of each run at the config's search (the nets' recorded [search]: 32 Gumbel
# simulations, win_check = "tree"), two matches at a time, one thread each, over the first 50 of
# 1,000 distinct 8-ply openings, colour-swapped. The commands are ../ab/eval.sh's.
D=$(cd $(dirname $0) && pwd)
ARM=n3x32 X=${X:-/tmp/s13/xqz} R=${R:-/tmp/s13/size/runs} O=${O:-/tmp/s13/size/eval} exec $D/../ab/eval.sh
