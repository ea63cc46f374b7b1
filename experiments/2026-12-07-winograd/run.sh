#!/bin/sh
# `xqz bench` of the build before (BASE) and the build with Winograd's convolutions (NEW), in
# turn, beside ONNX Runtime on the same exported nets, on an otherwise idle machine. Run from the
# repository root.
#   BASE  the binary of e657d07; NEW the binary of the change
#   ORT   a Python with numpy, onnx, onnxruntime and safetensors (../shared/tools/onnx_bench.py)
#   ROUNDS (default 2); SECONDS_EACH (default 2) for every measurement
# The nets: the built-in 2 x 24 (configs/cpu.toml), 3 x 32 (the net-size A/B's arm) and 6 x 64
# (../2026-12-01-cpu-kernels/6x64.toml), each exported once by NEW's `xqz bench --export` (a
# fresh net of the config's shape). After each round, ONNX Runtime on each export and PyTorch
# 1.13 (Debian's python3-torch, ../shared/tools/torch_bench.py) on the 2 x 24 and 6 x 64 shapes.
set -eu
D=experiments/2026-12-07-winograd; OUT=$D/out; mkdir -p "$OUT"
ONNX=${ONNX:-../shared/tools/onnx_bench.py}
TORCH=${TORCH:-../shared/tools/torch_bench.py}
T=${SECONDS_EACH:-2}
config() {
    case $1 in
        2x24) echo configs/cpu.toml;;
        3x32) echo experiments/2026-12-07-net-size-1h-ab/cfg/n3x32-s1.toml;;
        6x64) echo experiments/2026-12-01-cpu-kernels/6x64.toml;;
    esac
}
for net in 2x24 3x32 6x64; do
    rm -rf /tmp/wino-$net
    "$NEW" bench --config $(config $net) --batches 64 --seconds 1 --export /tmp/wino-$net > "$OUT/export-$net.txt" 2>&1
done
for round in $(seq 1 ${ROUNDS:-2}); do
    for net in 2x24 3x32 6x64; do
        for b in base new; do
            case $b in base) X=$BASE;; new) X=$NEW;; esac
            "$X" bench --config $(config $net) --batches 64,256,1024 --seconds $T > "$OUT/bench-$net-$b-$round.txt" 2>&1
        done
        "$ORT" "$ONNX" /tmp/wino-$net --seconds $T > "$OUT/ort-$net-$round.txt" 2>&1
    done
    /usr/bin/python3 "$TORCH" --blocks 2 --filters 24 --seconds $T > "$OUT/torch-2x24-$round.txt" 2>&1
    /usr/bin/python3 "$TORCH" --blocks 6 --filters 64 --seconds $T > "$OUT/torch-6x64-$round.txt" 2>&1
done
grep -H "batch" "$OUT"/bench-*.txt "$OUT"/ort-*.txt "$OUT"/torch-*.txt
