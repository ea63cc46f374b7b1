#!/bin/sh
# The one-hour record of the README's main job with self-play in bfloat16 on AMX
# (configs/cpu.toml's loop.precision = "auto", after ../2026-12-06-bf16-ab/), seed 1 only (the
# session's time allowed one hour of an idle machine). `xqz train` without --config (the embedded
# configs/cpu.toml), two threads (every core), then SIGINT (a user's Ctrl-C: the last checkpoint
# is written) at 60 minutes; the newest checkpoint is copied at 30 minutes. `xqz bench` before
# and after; then eval.sh. The commands are ../hour/run_hour.sh's.
D=$(cd $(dirname $0) && pwd)
X=${X:-/tmp/h1/xqz} R=${R:-/tmp/h1} EVAL=$D/eval.sh exec $D/../hour/run_hour.sh
