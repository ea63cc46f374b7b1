#!/bin/sh
# The one-hour record of the README's main job at d13b491: configs/cpu.toml unchanged since the
# record of 39e315c (../2026-12-05-cpu-1h-current/), with stop 42's training kernels and stop 43's
# self-play changes. Two threads (every core), 60 minutes per seed on an otherwise idle machine,
# then SIGINT (a user's Ctrl-C: the last checkpoint is written). Seed 1 runs `xqz train` without
# --config (the embedded configs/cpu.toml); seed 2 the same file with both seeds set to 2
# (seed2.toml). The seeds run one after the other, each alone on the machine. The newest
# checkpoint is copied at 30 minutes; the interrupt's checkpoint is the hour's. Then eval.sh.
X=${X:-/tmp/fast/xqz}; R=${R:-/tmp/fast}; D=$(cd $(dirname $0) && pwd)
cd $D/../..   # the repository root
{ time $X bench --config configs/cpu.toml --seconds 3; } > $R/bench-before.txt 2>&1
for s in 1 2; do
  S=$R/seed$s; mkdir -p $S/snap
  if [ $s = 1 ]; then CFG=""; else CFG="--config $D/seed2.toml"; fi
  echo "start $(date -u +%FT%TZ)" >> $S/snap/index.txt
  timeout -s INT 3600 $X train $CFG --run-dir $S/run --quiet > $S/run.log 2>&1 &
  T=$!
  sleep 1800
  c=$(ls -d $S/run/checkpoints/ckpt-* | sort | tail -1)
  cp -r "$c" $S/snap/min30
  echo "min30 $(basename $c) $(date -u +%FT%TZ)" >> $S/snap/index.txt
  wait $T
  c=$(ls -d $S/run/checkpoints/ckpt-* | sort | tail -1)
  cp -r "$c" $S/snap/min60
  echo "min60 $(basename $c) $(date -u +%FT%TZ)" >> $S/snap/index.txt
done
{ time $X bench --config configs/cpu.toml --seconds 3; } > $R/bench-after.txt 2>&1
echo done > $R/DONE
$D/eval.sh > $R/eval.out 2>&1
