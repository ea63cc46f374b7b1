# Per run: games whose first sample is past the opening plies (forks), and the share of samples.
import sys, glob, numpy as np
for run in sys.argv[1:]:
    games = forks = samples = fsamples = 0
    for f in sorted(glob.glob(run + '/shards/*.npz')):
        z = np.load(f)
        gid, ply = z['game_id'], z['ply']
        for g in np.unique(gid):
            m = gid == g
            games += 1; samples += m.sum()
            if ply[m].min() > 4:
                forks += 1; fsamples += m.sum()
    print(f"{run}: {games} games, {forks} forks ({forks/max(games,1):.1%}), samples {samples}, of forks {fsamples/max(samples,1):.1%}")
