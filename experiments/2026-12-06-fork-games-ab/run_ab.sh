#!/bin/sh
# Pairs of one-thread runs, both arms of a seed at once, for the same wall time
# (loop.max_hours = 0.25 in every config of cfg/); seed 2 after seed 1. cfg/base-s*.toml is
# configs/cpu.toml with the in-run arena off and the time limit; cfg/fork-s*.toml the same
# with selfplay.fork_game_prob = 0.25: a quarter of the new games branch off the last finished
# game at a random searched ply with a uniformly random other move.
X=${X:-/tmp/fork/xqz}; A=${A:-/tmp/fork}; C=$(cd $(dirname $0) && pwd)/cfg
mkdir -p $A/runs
for s in ${SEEDS:-1 2}; do
  for arm in fork base; do
    $X train --config $C/$arm-s$s.toml --run-dir $A/runs/$arm-s$s --threads 1 --quiet > $A/runs/$arm-s$s.log 2>&1 &
  done
  wait
done
echo all-done > $A/runs/DONE
