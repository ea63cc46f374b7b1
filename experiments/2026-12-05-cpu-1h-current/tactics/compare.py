"""Scores players' `xqz tactics --out` files on the win_piece positions against a reference
player's file of the same positions (standard library only).

    python3 compare.py REFERENCE.tsv PLAYER.tsv...

For each player: positions solved (the test's own score), positions solved among those the
reference solves, and positions where the player's move is the reference's move."""
import sys


def load(path):
    out = {}
    for line in open(path):
        kind, fen, moves, solutions, answer = line.rstrip('\n').split('\t')
        if kind == 'win_piece':
            out[(fen, moves)] = (answer in solutions.split(), answer)
    return out


ref = load(sys.argv[1])
ref_solved = [k for k, (ok, _) in ref.items() if ok]
print(f'reference {sys.argv[1]}: {len(ref_solved)} of {len(ref)} solved')
print(f'{"player":40} {"solved":>7} {"of the reference solved":>24} {"same move":>10}')
for path in sys.argv[2:]:
    d = load(path)
    if set(d) != set(ref):
        sys.exit(f'{path}: not the reference\'s positions')
    solved = sum(ok for ok, _ in d.values())
    both = sum(d[k][0] for k in ref_solved)
    same = sum(d[k][1] == ref[k][1] for k in d)
    print(f'{path:40} {solved:>7} {both:>17} / {len(ref_solved):<4} {same:>10}')
