#!/bin/sh
# Pairs of one-thread runs, both arms of a seed at once, for the same wall time
# (loop.max_hours = 0.25 in every config of cfg/); seed 2 after seed 1. cfg/base-s*.toml is
# configs/cpu.toml with the in-run arena off and the time limit; cfg/soft-s*.toml the same with
# network.soft_policy = true (KataGo's soft policy head, training.soft_policy_weight at its
# default 8). The commands are ../ab/run_ab.sh's.
D=$(cd $(dirname $0) && pwd)
ARM=soft CFG=$D/cfg X=${X:-/tmp/soft/xqz} A=${A:-/tmp/soft} exec $D/../ab/run_ab.sh
