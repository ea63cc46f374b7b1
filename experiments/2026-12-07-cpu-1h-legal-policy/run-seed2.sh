#!/bin/sh
# Seed 2 of this record, made on 2026-12-07 in the session after seed 1's, on the same kind of
# host: `xqz train --config seed2.toml` (configs/cpu.toml with both seeds set to 2, nothing else
# changed), two threads, SIGINT at 60 minutes, alone on the machine; `xqz bench` before and after;
# then eval-seed2.sh. The binary is 6536b4f's: 67a5bab's (seed 1's) with the chosen outputs' code
# moved to another file, no behaviour changed. The commands are ../hour/run_hour.sh's.
D=$(cd $(dirname $0) && pwd)
export X=${X:-/tmp/h4/xqz} R=${R:-/tmp/h4}
SEED=2 CFG=$D/seed2.toml EVAL="$D/eval-seed2.sh" exec $D/../hour/run_hour.sh
