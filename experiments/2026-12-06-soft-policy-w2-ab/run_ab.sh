#!/bin/sh
# Pairs of one-thread runs, both arms of a seed at once, for the same wall time
# (loop.max_hours = 0.25 in every config of cfg/); seed 2 after seed 1. cfg/base-s*.toml is
# configs/cpu.toml with the in-run arena off and the time limit; cfg/soft2-s*.toml the same
# with network.soft_policy = true and training.soft_policy_weight = 2.0 (a quarter of KataGo's
# 8). The commands are ../ab/run_ab.sh's.
D=$(cd $(dirname $0) && pwd)
ARM=soft2 CFG=$D/cfg X=${X:-/tmp/soft2/xqz} A=${A:-/tmp/soft2} exec $D/../ab/run_ab.sh
