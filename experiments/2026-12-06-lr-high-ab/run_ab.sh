#!/bin/sh
# Pairs of one-thread runs, both arms of a seed at once, for the same wall time
# (loop.max_hours = 0.25 in every config of cfg/); seed 2 after seed 1. cfg/base-s*.toml is
# configs/cpu.toml with the in-run arena off and the time limit; cfg/lr4-s*.toml the same
# with training.learning_rate = 0.004 instead of 0.002.
# The commands are ../ab/run_ab.sh's, shared by the A/Bs of 2026-12-06.
D=$(cd $(dirname $0) && pwd)
ARM=lr4 CFG=$D/cfg X=${X:-/tmp/lr4/xqz} A=${A:-/tmp/lr4} exec $D/../ab/run_ab.sh
