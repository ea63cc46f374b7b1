#!/bin/sh
# Pairs of one-thread runs, both arms of a seed at once, for the same wall time
# (loop.max_hours = 0.25 in every config of cfg/); seed 2 after seed 1. cfg/base-s*.toml is
# configs/cpu.toml with the in-run arena off and the time limit; cfg/considered8-s*.toml the
# same with search.gumbel_considered_moves = 8 (half the config's 16). The commands are
# ../ab/run_ab.sh's.
D=$(cd $(dirname $0) && pwd)
ARM=considered8 CFG=$D/cfg X=${X:-/tmp/considered8/xqz} A=${A:-/tmp/considered8} exec $D/../ab/run_ab.sh
