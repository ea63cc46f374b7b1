#!/bin/sh
# Pairs of one-thread runs, both arms of a seed at once, for the same wall time
# (loop.max_hours = 0.25 in every config of cfg/); seed 2 after seed 1. cfg/base-s*.toml is
# configs/cpu.toml with the in-run arena off and the time limit; cfg/fork-s*.toml the same
# with selfplay.fork_game_prob = 0.25: a quarter of the new games branch off the last finished
# game at a random searched ply with a uniformly random other move.
# The commands are ../ab/run_ab.sh's, shared by the A/Bs of 2026-12-06.
D=$(cd $(dirname $0) && pwd)
ARM=fork CFG=$D/cfg X=${X:-/tmp/fork/xqz} A=${A:-/tmp/fork} exec $D/../ab/run_ab.sh
