#!/bin/sh
# How much of self-play's speed an iteration's tail costs: the main job plays each iteration's
# 64 games all at once (games_in_flight = games_per_iteration = 64), so towards its end fewer and
# fewer games are left to batch. `xqz selfplay` with configs/cpu.toml and a trained net, both
# threads, alternately: 64 games (an iteration: every slot's one game, then the tail) and 320
# games (the slots refilled as games end; one tail in five iterations' worth of games).
# `xqz bench` before and after, on the otherwise idle host.
#   X the xqz binary; NET a run directory or checkpoint; O the output folder; ROUNDS (default 3)
: "${X:?}" "${NET:?}" "${O:?}"
C=$(cd $(dirname $0)/../.. && pwd)/configs/cpu.toml
mkdir -p $O
$X bench > $O/bench-before.txt 2>&1
for r in $(seq ${ROUNDS:-3}); do
  for g in 64 320; do
    rm -rf $O/shards-$g-$r
    $X selfplay --config $C --net $NET --games $g --seed $r --out $O/shards-$g-$r > $O/g$g-r$r.txt 2>&1
    rm -rf $O/shards-$g-$r
  done
done
$X bench > $O/bench-after.txt 2>&1
echo done > $O/DONE
