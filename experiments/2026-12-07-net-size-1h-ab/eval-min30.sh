#!/bin/sh
# The two arms' 30-minute nets (each run's newest checkpoint 30 minutes after its seed started,
# copied by a watcher beside the runs: S/<arm>-s<seed>-min30) head to head, as eval.sh plays
# its matches; and each arm's 60-minute net against its own 30-minute one.
X=${X:-/tmp/s13/xqz}; R=${R:-/tmp/s13/size/runs}; S=${S:-/tmp/s13/size/snap}; O=${O:-/tmp/s13/size/eval}
mkdir -p $O
OPEN=$(cd $(dirname $0)/.. && pwd)/2026-12-02-pretrain-ab/openings.txt
A="--sims 32 --seed 11 --games 100 --openings $OPEN"
export RAYON_NUM_THREADS=1
for s in 1 2; do
  $X arena --a net:$S/n3x32-s$s-min30 --b net:$S/base-s$s-min30 $A > $O/h2h-min30-s$s.txt 2> $O/h2h-min30-s$s.err &
  for arm in n3x32 base; do
    $X arena --a net:$R/$arm-s$s --b net:$S/$arm-s$s-min30 $A > $O/$arm-s$s-vs-min30.txt 2> $O/$arm-s$s-vs-min30.err
  done
  wait
done
echo min30-done > $O/DONE-min30
