#!/usr/bin/env python3
"""The two tables of a paired A/B's record, from its runs' metrics.csv and eval/ outputs.

usage: table.py RECORD_DIR ARM [SEEDS...]   (seeds default to 1 2)

RECORD_DIR holds ARM-s<seed>/metrics.csv and base-s<seed>/metrics.csv (copied from the runs) and
eval/ as ../ab/eval.sh writes it. Standard library only."""
import csv
import re
import statistics
import sys
from pathlib import Path

rec, arm = Path(sys.argv[1]), sys.argv[2]
seeds = sys.argv[3:] or ["1", "2"]
ev = rec / "eval"

print("| run | iterations | self-play samples | optimizer steps of 256 | simulations/s "
      "| training samples/s | mean game length | held-out policy / value loss |")
# Medians over the iterations; game length over the last 5; held-out losses of the last.
print("|---|---|---|---|---|---|---|---|")
for s in seeds:
    for a in (arm, "base"):
        rows = list(csv.DictReader(open(rec / f"{a}-s{s}" / "metrics.csv")))
        last = rows[-1]
        med = lambda k: statistics.median(float(r[k]) for r in rows if r[k])
        length = statistics.mean(float(r["mean_game_length"]) for r in rows[-5:])
        print(f"| {a}, seed {s} | {last['iteration']} | {int(last['total_samples']):,} "
              f"| {int(last['total_steps']):,} | {med('simulations_per_s'):,.0f} "
              f"| {med('train_samples_per_s'):,.0f} | {length:.0f} "
              f"| {float(last['heldout_policy_loss']):.3f} / {float(last['heldout_value_loss']):.3f} |")

score = re.compile(r"A total\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+([\d.]+)%")
elo = re.compile(r"Elo \(A - B\): ([-+\d.]+), 95% interval \[([-+\d.]+), ([-+\d.]+)\]")


def match(name):
    text = (ev / name).read_text()
    m = score.search(text)
    out = f"{m.group(2)}-{m.group(3)}-{m.group(4)}, {m.group(5)}%"
    e = elo.search(text)
    if e and float(m.group(5)) not in (0.0, 100.0):
        out += f", {float(e.group(1)):+.0f} [{float(e.group(2)):+.0f}, {float(e.group(3)):+.0f}]"
    return out


def tactics(s, a):
    text = (ev / f"tactics-s{s}.txt").read_text()
    block = text.split(f"== {a}-s{s}\n")[1].split("==")[0]
    solved = {l.split()[0]: l.split()[2] for l in block.splitlines() if l[:1].islower()
              and len(l.split()) > 3 and l.split()[1].isdigit()}
    return " / ".join(solved[k] for k in ("mate_in_one", "stop_mate_in_one", "win_piece"))


print()
print("| match, 100 games | " + " | ".join(f"seed {s}" for s in seeds) + " |")
print("|---|" + "---|" * len(seeds))
rows = [
    (f"**{arm} against base**", lambda s: match(f"h2h-s{s}.txt")),
    (f"{arm} against greedy", lambda s: match(f"{arm}-s{s}-greedy.txt")),
    ("base against greedy", lambda s: match(f"base-s{s}-greedy.txt")),
    (f"{arm} against Fairy-Stockfish 11.1 at 1 node", lambda s: match(f"{arm}-s{s}-fsf1.txt")),
    ("base against Fairy-Stockfish 11.1 at 1 node", lambda s: match(f"base-s{s}-fsf1.txt")),
    (f"`xqz tactics` (mate in one / stop a mate / win a piece), {arm}", lambda s: tactics(s, arm)),
    ("`xqz tactics`, base", lambda s: tactics(s, "base")),
]
for name, f in rows:
    print(f"| {name} | " + " | ".join(f(s) for s in seeds) + " |")
