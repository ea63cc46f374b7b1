#!/usr/bin/env python3
"""The policy surprise the runs' searches recorded (numpy): for the oldest kept, middle and last shard
of each run, the full searches' surprise (KL of the target from the prior, nats) and the
sampling weights policy_surprise_weight = 0.5 gives them, (1 - w) + w * s / mean.
usage: surprise_stats.py RUNS_DIR"""
import glob
import sys

import numpy as np

w = 0.5
print("run shard samples full-searches | surprise mean median p90 max | weight p10 p90 max | cheap searches' mean")
for run in ["surprise-s1", "base-s1", "surprise-s2", "base-s2"]:
    shards = sorted(glob.glob(f"{sys.argv[1]}/{run}/shards/*.npz"))
    for f in [shards[0], shards[len(shards) // 2], shards[-1]]:
        s = np.load(f)
        sp, full = s["policy_surprise"], s["full_search"] == 1
        x = sp[full]
        weight = (1 - w) + w * x / x.mean()
        print(f"{run} {f.split('/')[-1]} {len(sp)} {full.sum()} | {x.mean():.3f} {np.median(x):.3f} "
              f"{np.quantile(x, .9):.3f} {x.max():.2f} | {np.quantile(weight, .1):.2f} "
              f"{np.quantile(weight, .9):.2f} {weight.max():.2f} | {sp[~full].mean():.3f}")
