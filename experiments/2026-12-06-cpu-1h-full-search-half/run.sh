#!/bin/sh
# The one-hour record of the README's main job at c37a3de: configs/cpu.toml with
# full_search_prob = 0.5 (feab810; ../2026-12-06-full-search-half-ab/), otherwise as at the
# previous record (../2026-12-05-cpu-1h-fast-training/), run the same way. Two threads (every
# core), 60 minutes per seed on an otherwise idle machine, then SIGINT (a user's Ctrl-C: the last
# checkpoint is written). Seed 1 runs `xqz train` without --config (the embedded
# configs/cpu.toml); seed 2 the same file with both seeds set to 2 (seed2.toml). The seeds run one
# after the other, each alone on the machine. The newest checkpoint is copied at 30 minutes; the
# interrupt's checkpoint is the hour's. Then eval.sh and heldout.sh.
X=${X:-/tmp/half1h/xqz}; R=${R:-/tmp/half1h}; D=$(cd $(dirname $0) && pwd)
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
$D/heldout.sh > $R/heldout.out 2>&1
echo all-done > $R/ALLDONE
