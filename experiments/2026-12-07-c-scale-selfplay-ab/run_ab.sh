#!/bin/sh
# Pairs of one-thread runs, both arms of a seed at once, for the same wall time
# (loop.max_hours = 0.25 in every config of cfg/); seed 2 after seed 1. cfg/base-s*.toml is
# configs/cpu.toml with the in-run arena off and the time limit; cfg/cs01-s*.toml the same with
# search.gumbel_c_scale = 0.1. The commands are ../ab/run_ab.sh's.
D=$(cd $(dirname $0) && pwd)
ARM=cs01 CFG=$D/cfg X=${X:-/tmp/cs/xqz} A=${A:-/tmp/cs} exec $D/../ab/run_ab.sh
