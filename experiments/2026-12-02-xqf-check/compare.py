"""Main lines of XQF files read by `xqz import` against an independent reader.

Usage: python compare.py XQF_DIR IMPORT_DIR
  XQF_DIR     XQF files (here: the test files of walker8088/cchess, tests/data/*.xqf)
  IMPORT_DIR  one folder per file, `IMPORT_DIR/<stem>/`, written by
              `xqz import XQF_DIR/<stem>.xqf --out IMPORT_DIR/<stem>`
Needs `pip install cchess numpy` (cchess is walker8088's Python library; its read_from_xqf
builds the game tree, and its first line is the main line).
"""
import glob, os, sys
import numpy as np
from cchess.read_xqf import read_from_xqf

xqf_dir, import_dir = sys.argv[1], sys.argv[2]
square = lambda q: "abcdefghi"[q % 9] + str(q // 9)
for path in sorted(glob.glob(os.path.join(xqf_dir, "*.xqf"))):
    stem = os.path.basename(path)[:-4]
    lines = read_from_xqf(path).dump_fen_iccs_moves()
    theirs = [m for _, m in lines[0]] if lines else []
    shards = glob.glob(os.path.join(import_dir, stem, "*.npz"))
    if not shards:
        print(f"{stem}: cchess {len(theirs)} plies; xqz imported nothing")
        continue
    s = np.load(shards[0])
    off, moves, probs = s["policy_offsets"], s["policy_moves"], s["policy_probs"]
    ours = []
    for i in range(len(s["ply"])):
        lo, hi = off[i], off[i + 1]
        code = int(moves[lo + int(np.argmax(probs[lo:hi]))])  # Move::to_u16: from | to << 7
        ours.append(square(code & 0x7F) + square(code >> 7))
    verdict = "identical" if ours == theirs else f"DIFFER: {ours} / {theirs}"
    print(f"{stem}: {len(ours)} plies {verdict}")
