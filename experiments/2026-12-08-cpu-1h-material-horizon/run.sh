#!/bin/sh
# The one-hour record of the README's main job with `loop.material_plies = 8` in configs/cpu.toml
# (04f9566; ../2026-12-07-material-horizon-1h-ab/), seed 1, binary of 011c62e. `xqz train` without
# --config (the embedded configs/cpu.toml), two threads (every core), alone on the machine, SIGINT
# at 60 minutes; the newest checkpoint copied at 30 minutes. `xqz bench` before and after; then
# eval.sh. The commands are ../hour/run_hour.sh's.
D=$(cd $(dirname $0) && pwd)
X=${X:-/tmp/h5/xqz} R=${R:-/tmp/h5} EVAL=$D/eval.sh exec $D/../hour/run_hour.sh
