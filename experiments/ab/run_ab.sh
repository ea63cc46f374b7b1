#!/bin/sh
# The shared driver of a paired A/B's runs (issue #25's method): for each seed in SEEDS (default
# "1 2"), arm ARM and arm `base` train at once, one thread each, for the wall time their configs
# set (loop.max_hours), seed 2 after seed 1.
#   ARM   the arm's name: its configs are CFG/ARM-s<seed>.toml beside CFG/base-s<seed>.toml
#   CFG   the record's cfg/ folder
#   X     the xqz binary; A the working folder (runs go to A/runs, A/runs/DONE at the end)
: "${ARM:?}" "${CFG:?}" "${X:?}" "${A:?}"
mkdir -p $A/runs
for s in ${SEEDS:-1 2}; do
  for arm in $ARM base; do
    $X train --config $CFG/$arm-s$s.toml --run-dir $A/runs/$arm-s$s --threads 1 --quiet > $A/runs/$arm-s$s.log 2>&1 &
  done
  wait
done
echo all-done > $A/runs/DONE
