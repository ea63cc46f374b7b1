#!/bin/sh
# The bfloat16 tower on AVX-512 BF16 beside the f32 kernels and ONNX Runtime, on an otherwise
# idle machine without AMX. Run from the repository root.
#   X     the xqz binary (4ef4bd7)
#   NET   a trained main-job net, so that self-play's games are as long as a trained net plays them
#   ORT   a Python with numpy, onnx, onnxruntime and safetensors (../shared/tools/onnx_bench.py)
# 1. `xqz bench` (its `inference` lines are f32, its `inference (bf16)` lines the new kernel)
#    for the built-in 2 x 24 net and a 6 x 64 one (../../2026-12-01-cpu-kernels/6x64.toml), batches
#    64 / 256 / 1024, and ONNX Runtime on the same exported nets, three rounds.
# 2. `xqz selfplay`, 128 games of configs/cpu.toml with NET, both threads, bf16 and f32 in turn,
#    three rounds.
set -eu
D=experiments/2026-12-07-bf16-dot-ab/speed; OUT=$D/out; mkdir -p "$OUT"
ONNX=${ONNX:-../shared/tools/onnx_bench.py}
config() {
    case $1 in
        2x24) echo configs/cpu.toml;;
        6x64) echo experiments/2026-12-01-cpu-kernels/6x64.toml;;
    esac
}
for net in 2x24 6x64; do
    rm -rf /tmp/dot-$net
    "$X" bench --config $(config $net) --batches 64 --seconds 1 --export /tmp/dot-$net > "$OUT/export-$net.txt" 2>&1
done
for round in 1 2 3; do
    for net in 2x24 6x64; do
        "$X" bench --config $(config $net) --batches 64,256,1024 --seconds 3 > "$OUT/bench-$net-$round.txt" 2>&1
        "$ORT" "$ONNX" /tmp/dot-$net --seconds 3 > "$OUT/ort-$net-$round.txt" 2>&1
    done
done
for round in 1 2 3; do
    for precision in bf16 f32; do
        rm -rf /tmp/dot-sp
        "$X" selfplay --config configs/cpu.toml --games 128 --out /tmp/dot-sp --net "$NET" \
            --precision $precision > "$OUT/selfplay-$precision-$round.txt" 2>&1
    done
done
grep -H "positions/s\|samples/s\|simulations" "$OUT"/*.txt
