#!/usr/bin/env python3
"""Of a judged file's real misses, how many captures the net's search never visited.

usage: considered.py XQZ NET JUDGED.txt TACTICS_OUT.tsv

Asks `XQZ analysis --net NET` for each position of a real miss (judge.py's "real" lines) at 32
visits, the engine's settings for that budget (the net's recorded [search], Gumbel), and prints
the correct captures' visits and priors beside the move the search put first.
"""
import json
import subprocess
import sys


def main():
    xqz, net, judged, tactics = sys.argv[1:5]
    answers = {}
    for line in open(tactics):
        kind, fen, moves, correct, answer = line.rstrip("\n").split("\t")[:5]
        if kind == "win_piece":
            answers.setdefault((answer, correct), []).append((fen, moves.split()))
    queries, wanted = [], []
    for line in open(judged):
        if not line.startswith("real"):
            continue
        _, answer, _, correct, _ = line.rstrip("\n").split("\t")
        fen, moves = answers[(answer, correct)].pop(0)
        queries.append(json.dumps({"id": str(len(queries)), "initialFen": fen, "moves": moves,
                                   "maxVisits": 32, "maxMoveInfos": 200}))
        wanted.append((answer, correct.split()))
    out = subprocess.run([xqz, "analysis", "--net", net], input="\n".join(queries) + "\n",
                         capture_output=True, text=True, check=True).stdout
    never = 0
    for line in out.splitlines():
        a = json.loads(line)
        answer, correct = wanted[int(a["id"])]
        infos = {m["move"]: m for m in a["moveInfos"]}
        seen = [(m, infos[m]["visits"], round(infos[m]["prior"], 3)) for m in correct if m in infos]
        never += not seen
        print(f"played {answer}, first {a['moveInfos'][0]['move']}; captures visited: {seen or 'none'}")
    print(f"# {len(wanted)} real misses; in {never} of them no correct capture was visited")


if __name__ == "__main__":
    main()
