#!/bin/sh
# The final nets of run_ab.sh's runs, with ../ab/eval.sh (head to head, greedy, Fairy-Stockfish
# 11.1 at one node, xqz tactics; 100 distinct games a match, one thread a match).
D=$(cd $(dirname $0) && pwd)
ARM=mh8 X=${X:-/tmp/xqz-mh} R=${R:-/tmp/mh/runs} O=$D/eval exec $D/../ab/eval.sh
