#!/bin/sh
# Seed 2 of this record, made on 2026-12-07 in a later session on the same kind of host: `xqz
# train --config seed2.toml` (configs/cpu.toml with both seeds set to 2, nothing else changed),
# two threads, SIGINT at 60 minutes, alone on the machine; `xqz bench` before and after; then
# eval-seed2.sh and heldout.sh. The binary is 711762e's, whose self-play is 73a9942's; its
# training step adds its per-chunk sums in fixed chunks of 16 positions (e018f57), which moves
# f32 results in the last bits and nothing else. The commands are ../hour/run_hour.sh's.
D=$(cd $(dirname $0) && pwd)
export X=${X:-/tmp/h2/xqz} R=${R:-/tmp/h2}
SEED=2 CFG=$D/seed2.toml EVAL="$D/eval-seed2.sh" exec $D/../hour/run_hour.sh
