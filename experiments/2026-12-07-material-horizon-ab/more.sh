#!/bin/sh
# After eval.sh: head to head again over 100 other openings (lines 51-150 of
# ../2026-12-02-pretrain-ab/openings.txt, colour-swapped: 200 games a seed), both seeds at once,
# one thread each; then xqz tactics on a second set of positions (--seed 777) for the four nets.
D=$(cd $(dirname $0) && pwd)
X=${X:-/tmp/xqz-mh} R=${R:-/tmp/mh/runs} O=$D/eval
export RAYON_NUM_THREADS=1
sed -n 51,150p $D/../2026-12-02-pretrain-ab/openings.txt > $O/openings-51-150.txt
for s in 1 2; do
  $X arena --a net:$R/mh8-s$s --b net:$R/base-s$s --sims 32 --seed 11 --games 200 \
    --openings $O/openings-51-150.txt --pgn $O/h2h-more-s$s.pgn > $O/h2h-more-s$s.txt 2> $O/h2h-more-s$s.err &
done
wait
for r in mh8-s1 base-s1 mh8-s2 base-s2; do
  echo "== $r"
  $X tactics --player net:$R/$r --sims 32 --count 100 --seed 777 --out $O/tactics777-$r.tsv
done > $O/tactics777.txt 2> $O/tactics777.err
