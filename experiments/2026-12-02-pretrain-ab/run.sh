#!/bin/sh
# run.sh SEED: the two arms of one seed side by side, one thread each, 20 minutes of wall time
# each (`--hours 0.3333`, pretraining included), from configs/cpu.toml with `arena_every = 0`
# and both seeds (`loop.seed`, `selfplay.seed`) set to SEED.
#   self: the main job as it is (pure self-play);
#   pre:  the same, pretrained first on the imported Fairy-Stockfish games (PRETRAIN_STEPS
#         steps of 256: one pass over their samples), then self-play for the rest of the time.
X=${X:-/work/main/target/release/xqz}; R=${R:-/tmp/pt/runs}; SH=${SH:-/tmp/pt/shards}
s=$1; P=${PRETRAIN_STEPS:?one pass over the shards: samples / 256}
mkdir -p $R
sed -e 's/^arena_every = .*/arena_every = 0/' -e "s/^seed = .*/seed = $s/" \
  /work/main/configs/cpu.toml > $R/cpu-s$s.toml
$X train --config $R/cpu-s$s.toml --run-dir $R/self-s$s --threads 1 --hours 0.3333 --quiet \
  > $R/self-s$s.log 2>&1 &
$X train --config $R/cpu-s$s.toml --run-dir $R/pre-s$s --threads 1 --hours 0.3333 --quiet \
  --pretrain $SH --pretrain-steps $P > $R/pre-s$s.log 2>&1
wait
