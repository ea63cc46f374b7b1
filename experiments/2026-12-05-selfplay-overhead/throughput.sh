#!/bin/sh
# The README main job (the built-in config, seed 1) with each build, both at once, one thread
# each, for the same 10 minutes of wall time; then the runs' logs give iterations, self-play
# samples and optimizer steps. Usage: throughput.sh BASE_XQZ NEW_XQZ WORK_DIR
set -eu
BASE=$1; NEW=$2; W=$3
mkdir -p "$W"
"$BASE" train --run-dir "$W/base" --threads 1 --hours 0.16667 --quiet > "$W/base.log" 2>&1 &
"$NEW" train --run-dir "$W/new" --threads 1 --hours 0.16667 --quiet > "$W/new.log" 2>&1 &
wait
tail -n 3 "$W/base.log" "$W/new.log"
