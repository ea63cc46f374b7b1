#!/bin/sh
# The final nets of run_ab.sh's pair, with ../ab/eval.sh (head to head, greedy, Fairy-Stockfish
# 11.1 at one node, xqz tactics; 100 distinct games a match, one thread a match); then, as
# ../2026-12-07-material-horizon-ab/more.sh, head to head over the next 100 openings (200 games)
# and xqz tactics on a second set of positions (--seed 777).
D=$(cd $(dirname $0) && pwd)
export X=${X:-/tmp/xqz-mh} R=${R:-/tmp/mh1h/runs}
SEEDS=1 ARM=mh8 O=$D/eval $D/../ab/eval.sh
O=$D/eval
export RAYON_NUM_THREADS=1
sed -n 51,150p $D/../2026-12-02-pretrain-ab/openings.txt > $O/openings-51-150.txt
$X arena --a net:$R/mh8-s1 --b net:$R/base-s1 --sims 32 --seed 11 --games 200 \
  --openings $O/openings-51-150.txt --pgn $O/h2h-more-s1.pgn > $O/h2h-more-s1.txt 2> $O/h2h-more-s1.err &
for r in mh8-s1 base-s1; do
  echo "== $r"
  $X tactics --player net:$R/$r --sims 32 --count 100 --seed 777 --out $O/tactics777-$r.tsv
done > $O/tactics777.txt 2> $O/tactics777.err
wait
echo more-done > $O/DONE2
