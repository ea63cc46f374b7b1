#!/bin/sh
# Training speed in one sitting: `xqz bench` (its `training` line in f32 and its
# `training  (bf16)` line) on 2 x 24 (configs/cpu.toml) and 6 x 64, then PyTorch 1.13 (Debian's
# python3-torch, CPU, 2 threads, AdamW) on the same shapes through ../shared/tools/torch_bench.py;
# three rounds. Run from the repository root on an otherwise idle machine: XQZ=path/to/xqz.
set -eu
XQZ=${XQZ:-target/release/xqz}; TORCH=${TORCH:-../shared/tools/torch_bench.py}
OUT=experiments/2026-12-07-bf16-training-ab/speed
SIXBYSIX=experiments/2026-12-01-cpu-kernels/6x64.toml
for round in 1 2 3; do
    "$XQZ" bench --config configs/cpu.toml --batches 256 --seconds 5 > "$OUT/xqz-224-$round.txt" 2>&1
    "$XQZ" bench --config "$SIXBYSIX" --batches 256 --seconds 5 > "$OUT/xqz-664-$round.txt" 2>&1
    /usr/bin/python3 "$TORCH" --blocks 2 --filters 24 --seconds 5 > "$OUT/torch-224-$round.txt" 2>&1
    /usr/bin/python3 "$TORCH" --blocks 6 --filters 64 --seconds 5 > "$OUT/torch-664-$round.txt" 2>&1
done
grep -H "training\|samples" "$OUT"/*.txt
