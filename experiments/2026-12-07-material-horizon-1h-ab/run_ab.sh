#!/bin/sh
# One pair of one-thread runs for an hour each, both arms at once (loop.max_hours = 1 in both
# configs of cfg/), seed 1. cfg/base-s1.toml is configs/cpu.toml at 7984d5b with the in-run arena
# off and the time limit; cfg/mh8-s1.toml the same with loop.material_plies = 8. The commands
# are ../ab/run_ab.sh's.
D=$(cd $(dirname $0) && pwd)
SEEDS=1 ARM=mh8 CFG=$D/cfg X=${X:-/tmp/xqz-mh} A=${A:-/tmp/mh1h} exec $D/../ab/run_ab.sh
