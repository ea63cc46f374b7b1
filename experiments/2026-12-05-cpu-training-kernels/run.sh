#!/bin/sh
# Training speed side by side: the build before this change (BASE) and after it (NEW), three
# rounds alternately, on 2 x 24 (configs/cpu.toml) and 6 x 64; then PyTorch 1.13 (Debian's
# python3-torch) on the same nets through ../shared/tools/torch_bench.py.
# Run from the repository root on an otherwise idle machine.
set -eu
BASE=$1; NEW=$2; TORCH=${3:-../shared/tools/torch_bench.py}
OUT=experiments/2026-12-05-cpu-training-kernels
SIXBYSIX=experiments/2026-12-01-cpu-kernels/6x64.toml
for round in 1 2 3; do
    for arm in base new; do
        bin=$BASE; [ "$arm" = new ] && bin=$NEW
        "$bin" bench --config configs/cpu.toml --seconds 5 > "$OUT/$arm-224-$round.txt" 2>&1
        "$bin" bench --config "$SIXBYSIX" --seconds 5 > "$OUT/$arm-664-$round.txt" 2>&1
    done
    /usr/bin/python3 "$TORCH" --blocks 2 --filters 24 --seconds 5 > "$OUT/torch-224-$round.txt" 2>&1 || true
    /usr/bin/python3 "$TORCH" --blocks 6 --filters 64 --seconds 5 > "$OUT/torch-664-$round.txt" 2>&1 || true
done
grep -H training "$OUT"/*-224-*.txt "$OUT"/*-664-*.txt
