#!/bin/sh
# Pairs of one-thread runs, both arms of a seed at once, for the same wall time (loop.max_hours
# = 0.25 in every config of cfg/); seed 2 after seed 1. cfg/base-s*.toml is configs/cpu.toml of
# b9de5ce with the in-run arena off and the time limit; cfg/vq50-s*.toml the same with
# loop.value_q_weight = 0.5 and loop.material_weight = 0.3333.
X=${X:-/tmp/s43/xqz-new}; A=${A:-/tmp/s43/vq}; C=$(cd $(dirname $0) && pwd)/cfg
mkdir -p $A/runs
for s in ${SEEDS:-1 2}; do
  for arm in vq50 base; do
    $X train --config $C/$arm-s$s.toml --run-dir $A/runs/$arm-s$s --threads 1 --quiet > $A/runs/$arm-s$s.log 2>&1 &
  done
  wait
done
echo all-done > $A/runs/DONE
