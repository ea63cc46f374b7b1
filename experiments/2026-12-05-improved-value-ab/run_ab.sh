#!/bin/sh
# Pairs of one-thread runs, both arms of a seed at once, for the same wall time (loop.max_hours
# = 0.25 in every config of cfg/); seed 2 after seed 1. cfg/mean-s*.toml is configs/cpu.toml with
# the in-run arena off and the time limit (the same files as ../2026-12-05-considered-moves-ab/cfg/cm16-s*.toml).
X=${X:-/tmp/ab/xqz}; A=${A:-/tmp/ab/improved-value}; C=$(cd $(dirname $0) && pwd)/cfg
mkdir -p $A/runs
for s in ${SEEDS:-1 2}; do
  for arm in improved mean; do
    $X train --config $C/$arm-s$s.toml --run-dir $A/runs/$arm-s$s --threads 1 --quiet > $A/runs/$arm-s$s.log 2>&1 &
  done
  wait
done
echo all-done > $A/runs/DONE
