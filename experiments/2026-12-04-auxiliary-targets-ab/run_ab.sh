#!/bin/sh
# Pairs of one-thread runs, both arms of a seed at once, for the same wall time (loop.max_hours
# = 0.25 in every config of cfg/); seed 2 after seed 1.
X=${X:-/tmp/ab/xqz}; A=${A:-/tmp/ab}; C=/work/main/experiments/2026-12-04-auxiliary-targets-ab/cfg
mkdir -p $A/runs
for s in 1 2; do
  for arm in base aux; do
    $X train --config $C/$arm-s$s.toml --run-dir $A/runs/$arm-s$s --threads 1 --quiet > $A/runs/$arm-s$s.log 2>&1 &
  done
  wait
done
echo all-done > $A/runs/DONE
