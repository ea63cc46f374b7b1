#!/bin/sh
# The training step of three builds side by side, in one sitting on an otherwise idle machine:
# `xqz bench` (inference at batch 256 and the `training` lines, f32 and bfloat16) on 2 x 24
# (configs/cpu.toml) and 6 x 64, the builds in turn within each round, three rounds; then
# PyTorch 1.13 (Debian's python3-torch, CPU, 2 threads, AdamW; ../shared/tools/torch_bench.py) on
# the same shapes. Run from the repository root.
#   BASE  the binary of 711762e (before)
#   CE    the binary of f3cd228 (the fused cross-entropy)
#   NEW   the binary of 9b9cf6d (the fused cross-entropy and glibc's allocator kept)
set -eu
D=experiments/2026-12-07-training-step-memory; OUT=$D/out
TORCH=${TORCH:-../shared/tools/torch_bench.py}
SIXBYSIX=experiments/2026-12-01-cpu-kernels/6x64.toml
for round in 1 2 3; do
    for b in base ce new; do
        case $b in base) X=$BASE;; ce) X=$CE;; new) X=$NEW;; esac
        "$X" bench --config configs/cpu.toml --batches 256 --seconds 5 > "$OUT/$b-224-$round.txt" 2>&1
        "$X" bench --config "$SIXBYSIX" --batches 256 --seconds 5 > "$OUT/$b-664-$round.txt" 2>&1
    done
    /usr/bin/python3 "$TORCH" --blocks 2 --filters 24 --seconds 5 > "$OUT/torch-224-$round.txt" 2>&1
    /usr/bin/python3 "$TORCH" --blocks 6 --filters 64 --seconds 5 > "$OUT/torch-664-$round.txt" 2>&1
done
grep -H "training\|samples" "$OUT"/*.txt
