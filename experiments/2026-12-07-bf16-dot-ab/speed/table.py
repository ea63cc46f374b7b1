#!/usr/bin/env python3
"""Medians of speed/run.sh's outputs: xqz bench's f32 and bf16 inference and ONNX Runtime's,
positions/s at batch 64 / 256 / 1024 for each net, and self-play's simulations/s. Standard library
only. usage: table.py OUT_DIR"""
import re
import statistics
import sys
from pathlib import Path

out = Path(sys.argv[1])
med = lambda xs: statistics.median(xs) if xs else float("nan")
for net in ("2x24", "6x64"):
    rows = {"f32": {}, "bf16": {}, "ort": {}}
    for f in sorted(out.glob(f"bench-{net}-*.txt")):
        for line in f.read_text().splitlines():
            m = re.match(r"inference  batch\s+(\d+):\s+(\d+)", line)
            if m:
                rows["f32"].setdefault(int(m[1]), []).append(int(m[2]))
            m = re.match(r"inference \(bf16\)\s+(\d+):\s+(\d+)", line)
            if m:
                rows["bf16"].setdefault(int(m[1]), []).append(int(m[2]))
    for f in sorted(out.glob(f"ort-{net}-*.txt")):
        for line in f.read_text().splitlines():
            m = re.search(r"batch\s+(\d+)\D+?([\d.]+) positions/s", line)
            if m:
                rows["ort"].setdefault(int(m[1]), []).append(float(m[2]))
    for k, v in rows.items():
        cells = " / ".join(f"{med(v.get(b, [])):,.0f}" for b in (64, 256, 1024))
        spread = " ; ".join(f"{min(v[b]):,.0f}-{max(v[b]):,.0f}" for b in (64, 256, 1024) if b in v)
        print(f"{net} {k:5} medians {cells}   (ranges {spread})")
for p in ("bf16", "f32"):
    sims = []
    for f in sorted(out.glob(f"selfplay-{p}-*.txt")):
        m = re.search(r"(\d+) simulations in ([\d.]+) s", f.read_text())
        if m:
            sims.append(round(int(m[1]) / float(m[2])))
    print(f"selfplay {p}: {sims} median {med(sims):,.0f}")
