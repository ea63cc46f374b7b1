#!/bin/sh
# `xqz bench` of the build before (BASE, 835140c) and after (NEW) the change to whole-vector
# loads and stores, in turn, beside ONNX Runtime on the same exported nets, on an otherwise idle
# machine. Run from the repository root.
#   BASE, NEW  the two xqz binaries
#   ORT   a Python with numpy, onnx, onnxruntime and safetensors (../shared/tools/onnx_bench.py)
#   ROUNDS (default 3); SECONDS_EACH (default 3) for every measurement
# The nets: the built-in 2 x 24 (configs/cpu.toml), 3 x 32 (the net-size A/B's arm) and 6 x 64
# (../2026-12-01-cpu-kernels/6x64.toml), each exported once by NEW's `xqz bench --export` (a
# fresh net of the config's shape).
set -eu
D=experiments/2026-12-07-whole-vector-stores; OUT=$D/out; mkdir -p "$OUT"
ONNX=${ONNX:-../shared/tools/onnx_bench.py}
T=${SECONDS_EACH:-3}
config() {
    case $1 in
        2x24) echo configs/cpu.toml;;
        3x32) echo experiments/2026-12-07-net-size-1h-ab/cfg/n3x32-s1.toml;;
        6x64) echo experiments/2026-12-01-cpu-kernels/6x64.toml;;
    esac
}
for net in 2x24 3x32 6x64; do
    rm -rf /tmp/wvs-$net
    "$NEW" bench --config $(config $net) --batches 64 --seconds 1 --export /tmp/wvs-$net > "$OUT/export-$net.txt" 2>&1
done
for round in $(seq 1 ${ROUNDS:-3}); do
    for net in 2x24 3x32 6x64; do
        for b in base new; do
            case $b in base) X=$BASE;; new) X=$NEW;; esac
            "$X" bench --config $(config $net) --batches 64,256,1024 --seconds $T > "$OUT/bench-$net-$b-$round.txt" 2>&1
        done
        "$ORT" "$ONNX" /tmp/wvs-$net --seconds $T > "$OUT/ort-$net-$round.txt" 2>&1
    done
done
grep -H "batch" "$OUT"/bench-*.txt "$OUT"/ort-*.txt
