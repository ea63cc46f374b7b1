#!/bin/sh
# One hour of the main job's config (configs/cpu.toml), two seeds side by side, one thread each
# (each run gets one of the machine's two cores: half of what `xqz train` takes by default).
# seed2.toml is configs/cpu.toml with loop.seed and selfplay.seed = 2.
# Ctrl-C (SIGINT) after 3,600 s writes the last checkpoint, as a user's Ctrl-C does.
X=${X:-/tmp/hour/xqz}; R=${R:-/tmp/hour}; C=/work/main/configs/cpu.toml
E=/work/main/experiments/2026-12-04-cpu-1h-features
mkdir -p $R
timeout -s INT 3600 $X train --config $C --run-dir $R/seed1 --threads 1 --quiet > $R/seed1.log 2>&1 &
timeout -s INT 3600 $X train --config $E/seed2.toml --run-dir $R/seed2 --threads 1 --quiet > $R/seed2.log 2>&1 &
wait
echo done > $R/DONE
