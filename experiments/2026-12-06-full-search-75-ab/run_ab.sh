#!/bin/sh
# Pairs of one-thread runs, both arms of a seed at once, for the same wall time
# (loop.max_hours = 0.25 in every config of cfg/); seed 2 after seed 1. cfg/base-s*.toml is
# configs/cpu.toml (full_search_prob = 0.5) with the in-run arena off and the time limit;
# cfg/full75-s*.toml the same with search.full_search_prob = 0.75.
# The commands are ../ab/run_ab.sh's, shared by the A/Bs of 2026-12-06.
D=$(cd $(dirname $0) && pwd)
ARM=full75 CFG=$D/cfg X=${X:-/tmp/full75/xqz} A=${A:-/tmp/full75} exec $D/../ab/run_ab.sh
