#!/bin/sh
# eval.sh for seed 2: the same matches, in seed 2's folders, head to head against the previous
# record's hour of seed 2 (../2026-12-07-cpu-1h-legal-policy/seed2/).
D=$(cd $(dirname $0) && pwd)
SEED=2 X=${X:-/tmp/h5/xqz} R=${R:-/tmp/h6} OUT=${OUT:-/tmp/h6/eval} exec $D/eval.sh
