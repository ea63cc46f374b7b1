#!/usr/bin/env python3
"""Positions analysed per second: `xqz analysis` with all positions in flight against the same
positions searched one after another by `xqz uci`, with the same net, visits and threads.

Usage: analysis_bench.py XQZ NET [VISITS] [POSITIONS] [DEVICE]   (defaults 800, 64, cpu)

DEVICE is passed to both engines as `--device` (cpu, wgpu, wgpu:N, cuda:N).

The positions are the start and the lines that the net's own analysis of the start position
names: every visited first move (ply 1), then longer prefixes of their principal variations
(up to 11 plies), until POSITIONS distinct ones are in hand.
"""
import json
import subprocess
import sys
import time


DEVICE = ["--device", sys.argv[5]] if len(sys.argv) > 5 else []


def analysis_lines(xqz, net, queries):
    """Runs `xqz analysis` on `queries` (dicts) after one warm-up query (so that loading the
    net is not timed, as it is not for `xqz uci`); returns (answers, seconds from the first
    query written to the last answer read)."""
    p = subprocess.Popen([xqz, "analysis", "--net", net] + DEVICE, stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True, bufsize=1)
    p.stdin.write(json.dumps({"id": "warm-up", "maxVisits": 8}) + "\n")
    p.stdin.flush()
    p.stdout.readline()
    start = time.perf_counter()
    p.stdin.write("".join(json.dumps(q) + "\n" for q in queries))
    p.stdin.flush()
    answers = [json.loads(p.stdout.readline()) for _ in queries]
    seconds = time.perf_counter() - start
    p.stdin.close()
    p.wait()
    return answers, seconds


def positions(xqz, net, count):
    answers, _ = analysis_lines(xqz, net, [{"id": "start", "maxVisits": 800}])
    found = [[]]
    pvs = [info["pv"] for info in answers[0]["moveInfos"]]
    for length in range(1, 12):
        for pv in pvs:
            line = pv[:length]
            if len(line) == length and line not in found:
                found.append(line)
            if len(found) >= count:
                return found
    return found


def uci_sequential(xqz, net, lines, visits):
    """Searches each line's position with `go nodes VISITS`, one after another, in one engine."""
    p = subprocess.Popen([xqz, "uci", "--net", net] + DEVICE, stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True, bufsize=1)

    def until(prefix):
        while True:
            l = p.stdout.readline()
            if not l:
                raise SystemExit("xqz uci ended early")
            if l.startswith(prefix):
                return l

    p.stdin.write("uci\n")
    until("uciok")
    start = time.perf_counter()
    for line in lines:
        moves = " moves " + " ".join(line) if line else ""
        p.stdin.write(f"position startpos{moves}\ngo nodes {visits}\n")
        p.stdin.flush()
        until("bestmove")
    seconds = time.perf_counter() - start
    p.stdin.write("quit\n")
    p.stdin.close()
    p.wait()
    return seconds


def main():
    xqz, net = sys.argv[1], sys.argv[2]
    visits = int(sys.argv[3]) if len(sys.argv) > 3 else 800
    count = int(sys.argv[4]) if len(sys.argv) > 4 else 64
    lines = positions(xqz, net, count)
    queries = [{"id": str(k), "moves": line, "maxVisits": visits} for k, line in enumerate(lines)]
    answers, a_seconds = analysis_lines(xqz, net, queries)
    assert len(answers) == len(lines) and all("error" not in a for a in answers), answers[:2]
    u_seconds = uci_sequential(xqz, net, lines, visits)
    n = len(lines)
    print(f"{n} positions at {visits} visits, device {DEVICE[1] if DEVICE else 'cpu'}")
    print(f"xqz analysis, all in flight: {a_seconds:8.2f} s  {n / a_seconds:8.2f} positions/s")
    print(f"xqz uci, one after another:  {u_seconds:8.2f} s  {n / u_seconds:8.2f} positions/s")
    print(f"ratio {u_seconds / a_seconds:.2f}")


if __name__ == "__main__":
    main()
