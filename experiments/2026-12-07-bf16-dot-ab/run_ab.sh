#!/bin/sh
# Pairs of one-thread runs, both arms of a seed at once, for the same wall time
# (loop.max_hours = 0.25 in every config of cfg/); seed 2 after seed 1. cfg/base-s*.toml is
# configs/cpu.toml with the in-run arena off, the time limit and loop.precision = "f32";
# cfg/dot-s*.toml the same with loop.precision = "bf16" (on this host without AMX: the AVX-512
# BF16 kernel). The commands are ../ab/run_ab.sh's.
D=$(cd $(dirname $0) && pwd)
ARM=dot CFG=$D/cfg X=${X:-/tmp/dot/xqz} A=${A:-/tmp/dot} exec $D/../ab/run_ab.sh
