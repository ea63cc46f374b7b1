#!/bin/sh
# Pairs of one-thread runs, both arms of a seed at once, for the same wall time
# (loop.max_hours = 0.25 in every config of cfg/); seed 2 after seed 1. cfg/base-s*.toml is
# configs/cpu.toml with the in-run arena off and the time limit; cfg/lr4-s*.toml the same
# with training.learning_rate = 0.004 instead of 0.002.
X=${X:-/tmp/lr4/xqz}; A=${A:-/tmp/lr4}; C=$(cd $(dirname $0) && pwd)/cfg
mkdir -p $A/runs
for s in ${SEEDS:-1 2}; do
  for arm in lr4 base; do
    $X train --config $C/$arm-s$s.toml --run-dir $A/runs/$arm-s$s --threads 1 --quiet > $A/runs/$arm-s$s.log 2>&1 &
  done
  wait
done
echo all-done > $A/runs/DONE
