#!/bin/sh
# The one-hour record of the README's main job with self-play's evaluator asking for the legal
# moves' policy logits only and the bfloat16 tower's input gathered (../2026-12-07-legal-policy/),
# seed 1 (the session's time allowed one idle hour). `xqz train` without --config (the embedded
# configs/cpu.toml, unchanged since ../2026-12-06-cpu-1h-bf16/), two threads (every core), SIGINT
# at 60 minutes; the newest checkpoint copied at 30 minutes. `xqz bench` before and after; then
# eval.sh. The commands are ../hour/run_hour.sh's.
D=$(cd $(dirname $0) && pwd)
X=${X:-/tmp/h3/xqz} R=${R:-/tmp/h3} EVAL=$D/eval.sh exec $D/../hour/run_hour.sh
