#!/usr/bin/env python3
"""Judge a player's misses on `xqz tactics`' win_piece positions with Fairy-Stockfish.

usage: judge.py TACTICS_OUT.tsv [DEPTH] [MARGIN_CP]

TACTICS_OUT.tsv is what `xqz tactics --out` writes (kind, start FEN, moves to the position,
correct moves, the player's answer; tab-separated, squares with ranks 0-9). For every win_piece
position the player did not solve, Fairy-Stockfish (xiangqi, /usr/games/fairy-stockfish) scores
at DEPTH (default 12) the best of the correct captures and the player's move, each with
`go depth D searchmoves M`. The miss is "real" when the player's move scores more than
MARGIN_CP (default 100) centipawns below the capture; otherwise the engine rates the player's
move about as good as, or better than, taking the piece. Mate scores count as +/-100,000.
"""
import re
import subprocess
import sys

ENGINE = "/usr/games/fairy-stockfish"


def to_engine(move):
    """The project's ranks 0-9 to Fairy-Stockfish's 1-10."""
    return re.sub(r"([a-i])(\d)", lambda g: g.group(1) + str(int(g.group(2)) + 1), move)


class Engine:
    def __init__(self):
        self.p = subprocess.Popen([ENGINE], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  text=True, bufsize=1)
        self.send("uci")
        self.send("setoption name UCI_Variant value xiangqi")
        self.send("setoption name Threads value 1")
        self.send("isready")
        while self.p.stdout.readline().strip() != "readyok":
            pass

    def send(self, line):
        self.p.stdin.write(line + "\n")

    def score(self, fen, moves, move, depth):
        self.send(f"position fen {fen} moves {' '.join(to_engine(m) for m in moves)}".rstrip())
        self.send(f"go depth {depth} searchmoves {to_engine(move)}")
        last = None
        while True:
            words = self.p.stdout.readline().split()
            if not words:
                continue
            if words[0] == "info" and "score" in words:
                i = words.index("score")
                kind, value = words[i + 1], int(words[i + 2])
                last = value if kind == "cp" else (100_000 if value > 0 else -100_000)
            if words[0] == "bestmove":
                if last is None:
                    raise RuntimeError(f"no score for {move} in {fen} {moves}")
                return last


def main():
    path = sys.argv[1]
    depth = int(sys.argv[2]) if len(sys.argv) > 2 else 12
    margin = int(sys.argv[3]) if len(sys.argv) > 3 else 100
    engine = Engine()
    total = solved = real = 0
    for line in open(path):
        kind, fen, moves, correct, answer = line.rstrip("\n").split("\t")[:5]
        if kind != "win_piece":
            continue
        total += 1
        correct = correct.split()
        if answer in correct:
            solved += 1
            continue
        moves = moves.split()
        take = max(engine.score(fen, moves, m, depth) for m in correct)
        played = engine.score(fen, moves, answer, depth)
        is_real = played < take - margin
        real += is_real
        print(f"{'real' if is_real else 'fine'}\t{answer}\t{played}\t{' '.join(correct)}\t{take}")
    print(f"# {path}: {total} win_piece positions, {solved} solved, {total - solved} missed, "
          f"{real} of them real (the move scores more than {margin} cp below taking the piece "
          f"at depth {depth}); solved or rated as good: {total - real}")


if __name__ == "__main__":
    main()
