import sys, collections
VAL = {'r': 9, 'c': 5, 'h': 4, 'n': 4, 'a': 2, 'e': 2, 'b': 2, 'p': 1, 'k': 0}
def board(fen):
    rows = fen.split()[0].split('/')
    b = {}
    for i, row in enumerate(rows):
        rank = 9 - i; f = 0
        for ch in row:
            if ch.isdigit(): f += int(ch)
            else: b[(f, rank)] = ch; f += 1
    return b
def sq(s): return (ord(s[0]) - 97, int(s[1:]))
def play(b, m):
    fr, to = sq(m[:2]), sq(m[2:])
    b[to] = b.pop(fr)
cats = collections.Counter(); rows = []
for line in open(sys.argv[1]):
    kind, fen, moves, sols, ans = line.rstrip('\n').split('\t')
    if kind != 'win_piece': continue
    b = board(fen)
    for m in moves.split(): play(b, m)
    sol = sols.split()
    if ans in sol: cats['solved'] += 1; continue
    cap = b.get(sq(ans[2:]))
    best = max((b.get(sq(s[2:]), '?') for s in sol), key=lambda p: VAL.get(p.lower(), 0))
    if cap is None: c = 'no capture'
    elif VAL[cap.lower()] < VAL[best.lower()]: c = f'lesser capture ({cap.lower()} for {best.lower()})'
    else: c = f'other capture of {cap.lower()} (recapturable?)'
    cats[c.split(' (')[0] if 'lesser' in c else c] += 1
    rows.append((c, fen, moves, sols, ans))
for k, v in cats.most_common(): print(f'{v:4d} {k}')
if len(sys.argv) > 2:
    for r in rows: print(*r, sep=' | ')
