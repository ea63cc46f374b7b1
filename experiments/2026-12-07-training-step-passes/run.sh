#!/bin/sh
# The training step with AdamW in one pass, the batch encoded on every thread and the augmented
# copies cut once, against the build before, in one sitting on an otherwise idle machine. Run
# from the repository root.
#   BASE  the binary of 6536b4f (before)
#   NEW   the binary of the change
# 1. `xqz bench --batches 256 --seconds 5` on configs/cpu.toml (2 x 24) and 6 x 64, the builds
#    in turn, three rounds; PyTorch 1.13 (Debian's python3-torch; ../shared/tools/torch_bench.py)
#    on both shapes after each round.
# 2. The main job (`xqz train`, built-in config, seed 1, two threads) for 3 minutes, the builds
#    in turn, two rounds: the training phase's samples/s from each run's metrics.csv.
# 3. Both builds at once, one thread each, 3 minutes: the same games and the same losses.
set -eu
D=experiments/2026-12-07-training-step-passes; OUT=$D/out
TORCH=${TORCH:-../shared/tools/torch_bench.py}
SIX=experiments/2026-12-01-cpu-kernels/6x64.toml
for round in 1 2 3; do
    for b in base new; do
        case $b in base) X=$BASE;; new) X=$NEW;; esac
        "$X" bench --batches 256 --seconds 5 > "$OUT/bench-$b-224-$round.txt" 2>&1
        "$X" bench --config "$SIX" --batches 256 --seconds 5 > "$OUT/bench-$b-664-$round.txt" 2>&1
    done
    /usr/bin/python3 "$TORCH" --blocks 2 --filters 24 --seconds 5 > "$OUT/torch-224-$round.txt" 2>&1
    /usr/bin/python3 "$TORCH" --blocks 6 --filters 64 --seconds 5 > "$OUT/torch-664-$round.txt" 2>&1
done
for round in 1 2; do
    for b in base new; do
        case $b in base) X=$BASE;; new) X=$NEW;; esac
        R=/tmp/tsp-main-$b-$round; rm -rf "$R"
        timeout -s INT 180 "$X" train --run-dir "$R" --quiet > "$OUT/main-$b-$round.log" 2>&1 || true
        cp "$R/metrics.csv" "$OUT/main-$b-$round.csv"
    done
done
for b in base new; do
    case $b in base) X=$BASE;; new) X=$NEW;; esac
    R=/tmp/tsp-same-$b; rm -rf "$R"
    (timeout -s INT 180 "$X" train --threads 1 --run-dir "$R" --quiet > "$OUT/same-$b.log" 2>&1 || true
     cp "$R/metrics.csv" "$OUT/same-$b.csv") &
done
wait
grep -H "training" "$OUT"/bench-*.txt; grep -H "samples/s" "$OUT"/torch-*.txt
