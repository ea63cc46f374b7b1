#!/bin/sh
# The shared driver of a one-hour record of the README's main job (issue #25): `xqz bench`
# before; `xqz train` without --config (the embedded configs/cpu.toml), two threads (every core),
# SIGINT (a user's Ctrl-C: the last checkpoint is written) at 60 minutes, the newest checkpoint
# copied at 30 minutes; `xqz bench` after; then the record's evaluation.
#   X     the xqz binary
#   R     the working folder: R/seedSEED/run (the run), R/seedSEED/snap/min30 and min60, R/DONE
#   EVAL  the record's evaluation script, run last (its output in R/eval.out)
#   SEED  the seed's number, 1 unless set: the folder R/seedSEED
#   CFG   a config file for `xqz train --config` (seeds other than 1: configs/cpu.toml with both
#         seeds changed); unset, the embedded configs/cpu.toml
: "${X:?}" "${R:?}" "${EVAL:?}"
SEED=${SEED:-1}
cd "$(dirname "$0")/../.."   # the repository root
{ time $X bench --seconds 3; } > $R/bench-before.txt 2>&1
S=$R/seed$SEED; mkdir -p $S/snap
echo "start $(date -u +%FT%TZ)" >> $S/snap/index.txt
timeout -s INT 3600 $X train ${CFG:+--config $CFG} --run-dir $S/run --quiet > $S/run.log 2>&1 &
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
$EVAL > $R/eval.out 2>&1
echo all-done > $R/ALLDONE
