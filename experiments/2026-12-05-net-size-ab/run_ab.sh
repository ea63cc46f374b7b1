#!/bin/sh
# Pairs of one-thread runs, both arms of a seed at once, for the same wall time (loop.max_hours
# = 0.25 in every config of cfg/); seed 2 after seed 1. cfg/base-s*.toml is configs/cpu.toml of
# b1ca510 with the in-run arena off and the time limit; cfg/n3x32-s*.toml the same with
# network.blocks = 3 and network.filters = 32.
X=${X:-/tmp/s43/xqz}; A=${A:-/tmp/s43/size}; C=$(cd $(dirname $0) && pwd)/cfg
mkdir -p $A/runs
for s in ${SEEDS:-1 2}; do
  for arm in n3x32 base; do
    $X train --config $C/$arm-s$s.toml --run-dir $A/runs/$arm-s$s --threads 1 --quiet > $A/runs/$arm-s$s.log 2>&1 &
  done
  wait
done
echo all-done > $A/runs/DONE
