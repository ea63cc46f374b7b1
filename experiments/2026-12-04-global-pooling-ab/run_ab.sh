#!/bin/sh
# Pairs of one-thread runs, both arms of a seed at once, for the same wall time.
cd /tmp/ab2
for s in 1 2; do
  for arm in feat gp; do
    /tmp/xqz-gp train --config cfg/$arm-s$s.toml --run-dir runs/$arm-s$s --threads 1 --quiet > runs/$arm-s$s.log 2>&1 &
  done
  wait
done
echo all-done > runs/DONE
