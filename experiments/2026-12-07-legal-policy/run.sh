#!/bin/sh
# Self-play's network with the legal-move policy and the gathered bfloat16 input, against the
# build before, in one sitting on an otherwise idle machine. Run from the repository root.
#   BASE  the binary of c68eb0a (before)
#   NEW   the binary of 5d3d6c4 (the policy logits of the legal moves only; the bfloat16
#         tower's input by AVX-512 gathers)
#   NET   a trained main-job net, so that games are as long as a trained net plays them
#   ORT   a Python with numpy, onnx, onnxruntime and safetensors (../shared/tools/onnx_bench.py)
# 1. `xqz bench` (built-in config, batches 64 / 256 / 1024), the builds in turn, three rounds;
#    ONNX Runtime on the measured net after each round of the new build.
# 2. `xqz selfplay`, 128 games of configs/cpu.toml with NET, both threads, bfloat16 and f32,
#    the builds in turn, three rounds.
set -eu
D=experiments/2026-12-07-legal-policy; OUT=$D/out
ONNX=${ONNX:-../shared/tools/onnx_bench.py}
for round in 1 2 3; do
    for b in base new; do
        case $b in base) X=$BASE;; new) X=$NEW;; esac
        rm -rf /tmp/legal-export
        "$X" bench --batches 64,256,1024 --seconds 3 --export /tmp/legal-export > "$OUT/bench-$b-$round.txt" 2>&1
    done
    "$ORT" "$ONNX" /tmp/legal-export > "$OUT/ort-$round.txt" 2>&1
done
for round in 1 2 3; do
    for precision in bf16 f32; do
        for b in base new; do
            case $b in base) X=$BASE;; new) X=$NEW;; esac
            rm -rf /tmp/legal-sp
            "$X" selfplay --config configs/cpu.toml --games 128 --out /tmp/legal-sp --net "$NET" \
                --precision $precision > "$OUT/selfplay-$b-$precision-$round.txt" 2>&1
        done
    done
done
grep -H "positions/s\|samples/s\|simulations in" "$OUT"/*.txt
