#!/bin/sh
# Both arms of a seed at once, one thread each, for one hour (loop.max_hours = 1 in cfg/); seed 2
# after seed 1, through ../ab/run_ab.sh. cfg/base-s*.toml is configs/cpu.toml of e657d07 with the
# in-run arena off, the hour's limit and the seed; cfg/n3x32-s*.toml the same with
# network.blocks = 3 and network.filters = 32.
X=${X:-/tmp/s13/xqz} A=${A:-/tmp/s13/size} ARM=n3x32 CFG=$(cd $(dirname $0) && pwd)/cfg \
  exec sh $(dirname $0)/../ab/run_ab.sh
