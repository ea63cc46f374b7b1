#!/bin/sh
# Seed 2 of this record, right after seed 1's hour on the same host in the same session:
# `xqz train --config seed2.toml` (configs/cpu.toml with both seeds set to 2, nothing else
# changed), two threads, SIGINT at 60 minutes, alone on the machine; `xqz bench` before and after;
# then eval-seed2.sh. The same binary (011c62e). The commands are ../hour/run_hour.sh's.
D=$(cd $(dirname $0) && pwd)
export X=${X:-/tmp/h5/xqz} R=${R:-/tmp/h6}
SEED=2 CFG=$D/seed2.toml EVAL="$D/eval-seed2.sh" exec $D/../hour/run_hour.sh
