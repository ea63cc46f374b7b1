#!/bin/sh
# xqz bench beside ONNX Runtime (onnx_bench.py, inference) and PyTorch (torch_bench.py, training)
# on the same nets: configs/cpu.toml's 2 x 24 and the 6 x 64 of
# experiments/2026-12-01-cpu-kernels/6x64.toml, alternately, two rounds, on an idle machine.
# Usage: speed.sh XQZ WORK_DIR ORT_PYTHON (a python with numpy, onnx, onnxruntime, safetensors);
# PyTorch is Debian's python3-torch under /usr/bin/python3.
set -eu
X=$1; D=$2; P=$3
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$HERE/../..
T=$ROOT/../shared/tools
C64=$ROOT/experiments/2026-12-01-cpu-kernels/6x64.toml
mkdir -p "$D"; cd "$D"
[ -d e2x24 ] || "$X" bench --export e2x24 > bench-2x24-export.txt 2>&1
[ -d e6x64 ] || "$X" bench --config "$C64" --export e6x64 > bench-6x64-export.txt 2>&1
for r in 1 2; do
  echo "== round $r $(date -u +%FT%TZ)"
  echo "-- xqz 2x24"; "$X" bench 2>&1
  echo "-- ort 2x24"; "$P" "$T/onnx_bench.py" e2x24 2>&1
  echo "-- torch 2x24"; /usr/bin/python3 "$T/torch_bench.py" --blocks 2 --filters 24 2>&1
  echo "-- xqz 6x64"; "$X" bench --config "$C64" 2>&1
  echo "-- ort 6x64"; "$P" "$T/onnx_bench.py" e6x64 2>&1
  echo "-- torch 6x64"; /usr/bin/python3 "$T/torch_bench.py" --blocks 6 --filters 64 2>&1
done
