#!/bin/sh
# Seed 2 of the one-hour record: the README's main job (configs/cpu.toml with loop.seed and
# selfplay.seed = 2, nothing else changed: seed2.toml), two threads, 60 minutes on an otherwise
# idle machine, then SIGINT (a user's Ctrl-C: the last checkpoint is written). Seed 1 is the
# first hour of ../2026-12-05-cpu-2h/. The newest checkpoint is copied at 30 minutes, as there.
X=${X:-/tmp/s2/xqz}; R=${R:-/tmp/s2}
mkdir -p $R/snap
timeout -s INT 3600 $X train --config $(dirname $0)/seed2.toml --run-dir $R/run --quiet > $R/run.log 2>&1 &
T=$!
sleep 1800
c=$(ls -d $R/run/checkpoints/ckpt-* | sort | tail -1)
cp -r "$c" $R/snap/min30
echo "min30 $(basename $c) $(date -u +%FT%TZ)" >> $R/snap/index.txt
wait $T
c=$(ls -d $R/run/checkpoints/ckpt-* | sort | tail -1)
cp -r "$c" $R/snap/min60
echo "min60 $(basename $c) $(date -u +%FT%TZ)" >> $R/snap/index.txt
echo done > $R/DONE
