#!/bin/sh
# The matches against the 2026-12-04 record's seed-1 net, rerun once the loader took an export
# without its model.onnx (the first eval.sh run could not load it).
X=/tmp/long/xqz2; R=/tmp/long; OUT=/tmp/long/eval
export RAYON_NUM_THREADS=1
E=/work/main/experiments
PREV=net:$E/2026-12-04-cpu-1h-features/seed1/net
G="--sims 32 --seed 11 --a-option algorithm=gumbel --a-option win_check=tree"
NETB="--b-option algorithm=gumbel --b-option win_check=tree"
for m in 30 60 90 120; do
  O=$OUT/min$m
  $X arena --a net:$R/snap/min$m $G --b $PREV $NETB --games 100 --pgn $O/previous.pgn > $O/previous.txt 2> $O/previous.err &
  [ $m = 60 ] && wait
done
wait
echo prev-done > $OUT/PREV_DONE
