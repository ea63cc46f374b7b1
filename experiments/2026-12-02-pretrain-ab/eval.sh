#!/bin/sh
# eval.sh: the four final nets at the config's 32 Gumbel simulations with its search
# (win_check = "tree"), colour-swapped pairs over the 8 built-in openings, a 600-ply cap,
# seed 11: each against greedy (100 games) and Fairy-Stockfish 11.1 at one node (100 games),
# and each pretrained net against the self-play net of its seed (100 games).
X=${X:-/work/main/target/release/xqz}; R=${R:-/tmp/pt/runs}; OUT=${OUT:-/tmp/pt/eval}
mkdir -p $OUT
S="--sims 32 --seed 11"
A() { echo "--a net:$R/$1 --a-option algorithm=gumbel --a-option win_check=tree"; }
FSF="uci:/usr/games/fairy-stockfish --b-option UCI_Variant=xiangqi --b-ranks 1 --b-nodes 1"
for run in self-s1 pre-s1 self-s2 pre-s2; do
  $X arena $(A $run) $S --b greedy --games 100 > $OUT/$run-greedy.txt 2> $OUT/$run-greedy.err &
  $X arena $(A $run) $S --b $FSF --games 100 > $OUT/$run-fsf.txt 2> $OUT/$run-fsf.err
  wait
done
for s in 1 2; do
  $X arena $(A pre-s$s) $S --b net:$R/self-s$s --b-option algorithm=gumbel \
    --b-option win_check=tree --games 100 > $OUT/h2h-s$s.txt 2> $OUT/h2h-s$s.err &
done
wait
