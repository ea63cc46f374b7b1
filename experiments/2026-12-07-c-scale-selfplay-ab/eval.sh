#!/bin/sh
# The final nets of run_ab.sh's runs, with ../ab/eval.sh (head to head, greedy, Fairy-Stockfish
# 11.1 at one node, xqz tactics; 100 distinct games a match, one thread a match). Each net plays
# with its recorded [search], so the arm's nets play with c_scale 0.1.
D=$(cd $(dirname $0) && pwd)
ARM=cs01 X=${X:-/tmp/cs/xqz} R=${R:-/tmp/cs/runs} O=$D/eval exec $D/../ab/eval.sh
