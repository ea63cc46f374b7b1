#!/bin/sh
# The hour's net against the previous record's fixed opponents, as there
# (../2026-12-06-cpu-1h-full-search-half/eval.sh): 32 Gumbel simulations, win_check = "tree",
# colour-swapped pairs over the 8 built-in openings, seed 11, two matches at a time, one thread
# each; and head to head against that record's hour of the same seed ("previous", self-play in
# f32 on a faster host). Matches count games, not seconds: the host's speed does not enter them.
# The commands are ../hour/eval_hour.sh's.
D=$(cd $(dirname $0) && pwd)
X=${X:-/tmp/h1/xqz} R=${R:-/tmp/h1} OUT=${OUT:-/tmp/h1/eval} \
  PREV=net:$D/../2026-12-06-cpu-1h-full-search-half/seed1/net-min60 exec $D/../hour/eval_hour.sh
