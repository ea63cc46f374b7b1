#!/bin/sh
# Pairs of one-thread runs, both arms of a seed at once, for the same wall time
# (loop.max_hours = 0.25 in every config of cfg/); seed 2 after seed 1. cfg/base-s*.toml is
# configs/cpu.toml with the in-run arena off and the time limit; cfg/sims64-s*.toml the same
# with search.simulations = 64: the full searches (a quarter of the moves, those whose policy
# is trained) make 64 simulations instead of 32; the cheap ones stay at 8.
# The commands are ../ab/run_ab.sh's, shared by the A/Bs of 2026-12-06.
D=$(cd $(dirname $0) && pwd)
ARM=sims64 CFG=$D/cfg X=${X:-/tmp/sims/xqz} A=${A:-/tmp/sims} exec $D/../ab/run_ab.sh
