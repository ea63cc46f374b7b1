#!/bin/sh
# Pairs of one-thread runs, both arms of a seed at once, for the same wall time
# (loop.max_hours = 0.25 in every config of cfg/); seed 2 after seed 1. cfg/base-s*.toml is
# configs/cpu.toml with the in-run arena off and the time limit; cfg/bf16t-s*.toml the same with
# training.precision = "auto" (the tower's training convolutions in bfloat16 on AMX). The commands are ../ab/run_ab.sh's.
D=$(cd $(dirname $0) && pwd)
ARM=bf16t CFG=$D/cfg X=${X:-/tmp/bf16t/xqz} A=${A:-/tmp/bf16t} exec $D/../ab/run_ab.sh
