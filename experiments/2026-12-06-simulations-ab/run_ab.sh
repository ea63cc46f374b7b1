#!/bin/sh
# Pairs of one-thread runs, both arms of a seed at once, for the same wall time
# (loop.max_hours = 0.25 in every config of cfg/); seed 2 after seed 1. cfg/base-s*.toml is
# configs/cpu.toml with the in-run arena off and the time limit; cfg/sims64-s*.toml the same
# with search.simulations = 64: the full searches (a quarter of the moves, those whose policy
# is trained) make 64 simulations instead of 32; the cheap ones stay at 8.
X=${X:-/tmp/sims/xqz}; A=${A:-/tmp/sims}; C=$(cd $(dirname $0) && pwd)/cfg
mkdir -p $A/runs
for s in ${SEEDS:-1 2}; do
  for arm in sims64 base; do
    $X train --config $C/$arm-s$s.toml --run-dir $A/runs/$arm-s$s --threads 1 --quiet > $A/runs/$arm-s$s.log 2>&1 &
  done
  wait
done
echo all-done > $A/runs/DONE
