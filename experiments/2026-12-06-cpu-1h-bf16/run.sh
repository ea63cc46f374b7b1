#!/bin/sh
# The one-hour record of the README's main job with self-play in bfloat16 on AMX
# (configs/cpu.toml's loop.precision = "auto", after ../2026-12-06-bf16-ab/), seed 1 only (the
# session's time allowed one hour of an idle machine). `xqz train` without --config (the embedded
# configs/cpu.toml), two threads (every core), then SIGINT (a user's Ctrl-C: the last checkpoint
# is written) at 60 minutes; the newest checkpoint is copied at 30 minutes. `xqz bench` before
# and after; then eval.sh.
X=${X:-/tmp/h1/xqz}; R=${R:-/tmp/h1}; D=$(cd $(dirname $0) && pwd)
cd $D/../..   # the repository root
{ time $X bench --seconds 3; } > $R/bench-before.txt 2>&1
S=$R/seed1; mkdir -p $S/snap
echo "start $(date -u +%FT%TZ)" >> $S/snap/index.txt
timeout -s INT 3600 $X train --run-dir $S/run --quiet > $S/run.log 2>&1 &
T=$!
sleep 1800
c=$(ls -d $S/run/checkpoints/ckpt-* | sort | tail -1)
cp -r "$c" $S/snap/min30
echo "min30 $(basename $c) $(date -u +%FT%TZ)" >> $S/snap/index.txt
wait $T
c=$(ls -d $S/run/checkpoints/ckpt-* | sort | tail -1)
cp -r "$c" $S/snap/min60
echo "min60 $(basename $c) $(date -u +%FT%TZ)" >> $S/snap/index.txt
{ time $X bench --seconds 3; } > $R/bench-after.txt 2>&1
echo done > $R/DONE
$D/eval.sh > $R/eval.out 2>&1
echo all-done > $R/ALLDONE
