#!/bin/sh
# Pairs of one-thread runs, both arms of a seed at once, for the same wall time
# (loop.max_hours = 0.25 in every config of cfg/); seed 2 after seed 1. cfg/base-s*.toml is
# configs/cpu.toml with the in-run arena off and the time limit; cfg/anneal-s*.toml the same
# with training.schedule = "cosine_run" and final_lr_fraction = 0.1: the learning rate falls
# from 0.002 to 0.0002 along a cosine over the run's 15 minutes.
# The commands are ../ab/run_ab.sh's, shared by the A/Bs of 2026-12-06.
D=$(cd $(dirname $0) && pwd)
ARM=anneal CFG=$D/cfg X=${X:-/tmp/lr/xqz} A=${A:-/tmp/lr} exec $D/../ab/run_ab.sh
