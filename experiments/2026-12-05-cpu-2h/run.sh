#!/bin/sh
# The README's main job as a new user runs it (configs/cpu.toml, embedded in `xqz train`, two
# threads, seed 1) for 120 minutes, then SIGINT (a user's Ctrl-C: the last checkpoint is
# written). Every 30 minutes the newest checkpoint is copied aside; eval.sh plays each copy
# against the fixed opponents afterwards, so the matches take no CPU from the run.
X=${X:-/tmp/long/xqz}; R=${R:-/tmp/long}
mkdir -p $R/snap
timeout -s INT 7200 $X train --run-dir $R/run --quiet > $R/run.log 2>&1 &
T=$!
for m in 30 60 90; do
  sleep 1800
  # the newest complete checkpoint (written to a temporary name, then renamed)
  c=$(ls -d $R/run/checkpoints/ckpt-* | sort | tail -1)
  cp -r "$c" $R/snap/min$m
  echo "min$m $(basename $c) $(date -u +%FT%TZ)" >> $R/snap/index.txt
done
wait $T
c=$(ls -d $R/run/checkpoints/ckpt-* | sort | tail -1)
cp -r "$c" $R/snap/min120
echo "min120 $(basename $c) $(date -u +%FT%TZ)" >> $R/snap/index.txt
echo done > $R/DONE
