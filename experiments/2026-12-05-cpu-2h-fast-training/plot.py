#!/usr/bin/env python3
"""Collects the matches of seed 1's copies at 30, 60, 90 and 120 minutes into a Markdown table
and draws progress.svg: the score against each fixed opponent, with its 95% interval, against the
minutes of training. The copies at 30 and 60 minutes were played by
../2026-12-05-cpu-1h-fast-training/eval.sh (its eval/seed1-min30, eval/seed1-min60 and
eval/heldout/new-seed1.txt), those at 90 and 120 by this record's eval.sh (eval/minM,
eval/heldout/minM.txt). Standard library only.

Usage: python3 plot.py
"""
import math
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
HOUR = os.path.join(HERE, "..", "2026-12-05-cpu-1h-fast-training", "eval")
EVAL = os.path.join(HERE, "eval")
# Each copy's match directory and its file of the second win_piece set (300 positions).
DIRS = {
    30: (os.path.join(HOUR, "seed1-min30"), os.path.join(EVAL, "heldout", "min30.txt")),
    60: (os.path.join(HOUR, "seed1-min60"), os.path.join(HOUR, "heldout", "new-seed1.txt")),
    90: (os.path.join(EVAL, "min90"), os.path.join(EVAL, "heldout", "min90.txt")),
    120: (os.path.join(EVAL, "min120"), os.path.join(EVAL, "heldout", "min120.txt")),
}
MATCHES = [
    ("fsf-1node", "Fairy-Stockfish, 1 node"),
    ("greedy", "greedy"),
    ("random", "random"),
    ("fsf-skill0", "Fairy-Stockfish Skill 0, 32 nodes"),
    ("previous", "earlier hour (39e315c), seed 1"),
    ("previous-other-seed", "earlier hour (39e315c), seed 2"),
]
COLOURS = ["#d62728", "#1f77b4", "#7f7f7f", "#ff7f0e", "#2ca02c", "#9467bd", "#000000", "#8c564b"]


def score_interval(w, d, l):
    """Score and its 95% interval (Wilson's, on the score's per-game variance)."""
    n = w + d + l
    s = (w + 0.5 * d) / n
    var = (w * (1 - s) ** 2 + d * (0.5 - s) ** 2 + l * s ** 2) / n
    half = 1.96 * math.sqrt(var / n)
    return s, max(0.0, s - half), min(1.0, s + half)


def read_match(path):
    with open(path) as f:
        text = f.read()
    m = re.search(r"^A total\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)", text, re.M)
    if not m:
        return None
    n, w, d, l = map(int, m.groups())
    elo = re.search(r"Elo \(A - B\): (\S+), 95% interval \[(\S+), (\S+)\]", text)
    return {"n": n, "w": w, "d": d, "l": l, "elo": elo.groups() if elo else None}


def read_tactics(path):
    out = {}
    mode = None
    with open(path) as f:
        for line in f:
            if line.startswith("=="):
                mode = line.split("win_check=")[1].strip()
            m = re.match(r"(\w+)\s+(\d+)\s+(\d+)\s+([\d.]+)%", line)
            if m and mode:
                out[(mode, m.group(1))] = (int(m.group(3)), int(m.group(2)))
    return out


def wilson(k, n):
    """A proportion and its 95% Wilson interval."""
    p, z = k / n, 1.96
    c = (p + z * z / (2 * n)) / (1 + z * z / n)
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return p, c - h, c + h


def read_heldout(path):
    """(solved, positions) of the win_piece line of an `xqz tactics` report."""
    with open(path) as f:
        for line in f:
            m = re.match(r"win_piece\s+(\d+)\s+(\d+)\s", line)
            if m:
                return int(m.group(2)), int(m.group(1))
    return None


def main():
    mins = sorted(DIRS)
    rows, series = [], {k: [] for k, _ in MATCHES}
    series["win_piece"] = []
    series["win_piece_300"] = []
    for m in mins:
        d, held = DIRS[m]
        row = [f"{m}"]
        for key, _ in MATCHES:
            p = os.path.join(d, key + ".txt")
            r = read_match(p) if os.path.exists(p) else None
            if r is None:
                row.append("")
                continue
            s, lo, hi = score_interval(r["w"], r["d"], r["l"])
            series[key].append((m, s, lo, hi))
            elo = f", {float(r['elo'][0]):+.0f} [{float(r['elo'][1]):+.0f}, {float(r['elo'][2]):+.0f}]" if r["elo"] else ""
            row.append(f"{r['w']}-{r['d']}-{r['l']}, {100 * s:.1f}%{elo}")
        t = os.path.join(d, "tactics.txt")
        tac = read_tactics(t) if os.path.exists(t) else {}
        if ("tree", "win_piece") in tac:
            k, n = tac[("tree", "win_piece")]
            series["win_piece"].append((m, *wilson(k, n)))
            row.append(f"{100 * k / n:.0f}%")
        else:
            row.append("")
        k_n = read_heldout(held) if held and os.path.exists(held) else None
        if k_n:
            k, n = k_n
            p, lo, hi = wilson(k, n)
            series["win_piece_300"].append((m, p, lo, hi))
            row.append(f"{100 * p:.1f}% [{100 * lo:.1f}, {100 * hi:.1f}]")
        else:
            row.append("")
        rows.append(row)
    head = ["minutes"] + [name for _, name in MATCHES] + ["win_piece, 100 (tree)", "win_piece, second set of 300"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows:
        print("| " + " | ".join(r) + " |")
    draw(series, mins)


def draw(series, mins):
    W, H, L, R, T, B = 720, 420, 60, 250, 30, 50
    x0, x1 = 0, max(mins + [120])
    px = lambda m: round(L + (W - L - R) * (m - x0) / (x1 - x0), 1)
    py = lambda s: round(T + (H - T - B) * (1 - s), 1)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12">',
           f'<rect width="{W}" height="{H}" fill="white"/>',
           f'<text x="{L}" y="18">Score of the main job\'s net (32 Gumbel simulations) by minutes of training</text>']
    for s in [0, 0.25, 0.5, 0.75, 1.0]:
        out.append(f'<line x1="{L}" x2="{W - R}" y1="{py(s)}" y2="{py(s)}" stroke="#ddd"/>')
        out.append(f'<text x="{L - 8}" y="{py(s) + 4}" text-anchor="end">{int(100 * s)}%</text>')
    for m in mins:
        out.append(f'<text x="{px(m)}" y="{H - B + 18}" text-anchor="middle">{m}</text>')
    out.append(f'<text x="{(L + W - R) / 2}" y="{H - 12}" text-anchor="middle">minutes of `xqz train` (2 threads)</text>')
    names = dict(MATCHES)
    names["win_piece"] = "win_piece, 100 positions"
    names["win_piece_300"] = "win_piece, second set of 300"
    for i, (key, pts) in enumerate(series.items()):
        if not pts:
            continue
        c = COLOURS[i % len(COLOURS)]
        path = " ".join(f"{px(m)},{py(s)}" for m, s, _, _ in pts)
        out.append(f'<polyline points="{path}" fill="none" stroke="{c}" stroke-width="2"/>')
        for m, s, lo, hi in pts:
            out.append(f'<line x1="{px(m)}" x2="{px(m)}" y1="{py(lo)}" y2="{py(hi)}" stroke="{c}"/>')
            out.append(f'<circle cx="{px(m)}" cy="{py(s)}" r="3" fill="{c}"/>')
        y = T + 20 + 18 * i
        out.append(f'<line x1="{W - R + 15}" x2="{W - R + 35}" y1="{y - 4}" y2="{y - 4}" stroke="{c}" stroke-width="2"/>')
        out.append(f'<text x="{W - R + 40}" y="{y}">{names[key]}</text>')
    out.append("</svg>")
    with open(os.path.join(HERE, "progress.svg"), "w") as f:
        f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
