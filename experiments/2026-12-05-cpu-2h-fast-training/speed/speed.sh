#!/bin/sh
# xqz bench beside ONNX Runtime (onnx_bench.py) on the same exported nets, 2 x 24 (configs/cpu.toml)
# and 6 x 64 (experiments/2026-12-01-cpu-kernels/6x64.toml), alternately, two rounds.
X=/tmp/fast/xqz; D=/tmp/spd; P=/tmp/ortvenv/bin/python; T=/work/shared/tools/onnx_bench.py
C64=/work/main/experiments/2026-12-01-cpu-kernels/6x64.toml
cd $D
[ -d e2x24 ] || $X bench --export e2x24 > bench-2x24-export.txt 2>&1
[ -d e6x64 ] || $X bench --config $C64 --export e6x64 > bench-6x64-export.txt 2>&1
for r in 1 2; do
  echo "== round $r $(date -u +%FT%TZ)"
  echo "-- xqz 2x24"; $X bench 2>&1
  echo "-- ort 2x24"; $P $T e2x24 2>&1
  echo "-- xqz 6x64"; $X bench --config $C64 2>&1
  echo "-- ort 6x64"; $P $T e6x64 2>&1
done
