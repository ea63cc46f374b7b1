#!/bin/sh
# Pairs of one-thread runs, both arms of a seed at once, for the same wall time
# (loop.max_hours = 0.25 in every config of cfg/); seed 2 after seed 1. cfg/base-s*.toml is
# configs/cpu.toml with the in-run arena off and the time limit; cfg/window30k-s*.toml the same
# with loop.window_samples = 30000 (half the config's 60,000). The commands are
# ../ab/run_ab.sh's.
D=$(cd $(dirname $0) && pwd)
ARM=window30k CFG=$D/cfg X=${X:-/tmp/window30k/xqz} A=${A:-/tmp/window30k} exec $D/../ab/run_ab.sh
