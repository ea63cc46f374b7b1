#!/bin/sh
# What ran after run.sh's seed 1 had started (see README.md, "What went wrong"): a first copy of
# run.sh, stopped too late, started seed 2's run beside seed 1 from 06:28:12 to 06:30:40 UTC. Seed
# 1 lost about 71 s of machine time in those minutes (9 iterations in 2.9 min where it did one
# every 0.19 min before), so its run gets 71 s more: SIGINT at 3671 s after its start (05:59:13).
# Then seed 2 from scratch alone (run.sh's loop body), `xqz bench` again, and eval.sh.
X=${X:-/tmp/cur/xqz}; R=${R:-/tmp/cur}; D=$(cd $(dirname $0) && pwd)
cd $D/../..
PID=$1   # seed 1's `xqz train`
sleep $(( $(date -d "05:59:13 today + 3671 seconds" +%s) - $(date +%s) ))
kill -INT $PID
while kill -0 $PID 2>/dev/null; do sleep 1; done
S=$R/seed1
c=$(ls -d $S/run/checkpoints/ckpt-* | sort | tail -1)
cp -r "$c" $S/snap/min60
echo "min60 $(basename $c) $(date -u +%FT%TZ)" >> $S/snap/index.txt
S=$R/seed2; mkdir -p $S/snap
timeout -s INT 3600 $X train --config $D/seed2.toml --run-dir $S/run --quiet > $S/run.log 2>&1 &
T=$!
sleep 1800
c=$(ls -d $S/run/checkpoints/ckpt-* | sort | tail -1)
cp -r "$c" $S/snap/min30
echo "min30 $(basename $c) $(date -u +%FT%TZ)" >> $S/snap/index.txt
wait $T
c=$(ls -d $S/run/checkpoints/ckpt-* | sort | tail -1)
cp -r "$c" $S/snap/min60
echo "min60 $(basename $c) $(date -u +%FT%TZ)" >> $S/snap/index.txt
{ time $X bench --config configs/cpu.toml --seconds 3; } > $R/bench-after.txt 2>&1
echo done > $R/DONE
$D/eval.sh > $R/eval.out 2>&1
