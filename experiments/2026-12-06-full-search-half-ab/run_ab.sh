#!/bin/sh
# Pairs of one-thread runs, both arms of a seed at once, for the same wall time
# (loop.max_hours = 0.25 in every config of cfg/); seed 2 after seed 1. cfg/base-s*.toml is
# configs/cpu.toml with the in-run arena off and the time limit; cfg/fullhalf-s*.toml the same
# with search.full_search_prob = 0.5 (half the moves searched in full, where the config has a
# quarter).
# The commands are ../ab/run_ab.sh's, shared by the A/Bs of 2026-12-06.
D=$(cd $(dirname $0) && pwd)
ARM=fullhalf CFG=$D/cfg X=${X:-/tmp/fullhalf/xqz} A=${A:-/tmp/fullhalf} exec $D/../ab/run_ab.sh
