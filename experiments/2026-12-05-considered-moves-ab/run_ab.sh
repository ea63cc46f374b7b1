#!/bin/sh
# Pairs of one-thread runs, both arms of a seed at once, for the same wall time (loop.max_hours
# = 0.25 in every config of cfg/); seed 2 after seed 1. cfg/ is configs/cpu.toml of 91e1898
# with the in-run arena off and the time limit; cm32 considers 32 root moves instead of 16.
X=${X:-/tmp/cm/xqz}; A=${A:-/tmp/cm}; C=/work/main/experiments/2026-12-05-considered-moves-ab/cfg
mkdir -p $A/runs
for s in ${SEEDS:-1 2}; do
  for arm in cm16 cm32; do
    $X train --config $C/$arm-s$s.toml --run-dir $A/runs/$arm-s$s --threads 1 --quiet > $A/runs/$arm-s$s.log 2>&1 &
  done
  wait
done
echo all-done > $A/runs/DONE
