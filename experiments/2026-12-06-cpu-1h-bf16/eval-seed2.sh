#!/bin/sh
# eval.sh for seed 2: the same matches, against the previous record's hour of seed 2; then the
# positions kept back for both seeds (heldout.sh) and the judged misses (judge.sh).
D=$(cd $(dirname $0) && pwd)
export X=${X:-/tmp/h2/xqz} R=${R:-/tmp/h2} OUT=${OUT:-/tmp/h2/eval}
SEED=2 PREV=net:$D/../2026-12-06-cpu-1h-full-search-half/seed2/net-min60 $D/../hour/eval_hour.sh
OUT=$OUT/heldout $D/heldout.sh > $R/heldout.out 2>&1
$D/judge.sh > $R/judge.out 2>&1
