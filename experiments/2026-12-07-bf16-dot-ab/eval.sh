#!/bin/sh
# The final nets of run_ab.sh's runs, with ../ab/eval.sh (head to head, greedy, Fairy-Stockfish
# 11.1 at one node, xqz tactics; 100 distinct games a match, one thread a match).
D=$(cd $(dirname $0) && pwd)
ARM=dot X=${X:-/tmp/dot/xqz} R=${R:-/tmp/dot/runs} O=$D/eval exec $D/../ab/eval.sh
