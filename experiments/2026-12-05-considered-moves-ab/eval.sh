#!/bin/sh
# The final net of each run at the config's search (32 Gumbel simulations, win_check = "tree"),
# each arm with its own gumbel_considered_moves, colour-swapped pairs over the 8 built-in
# openings, seed 11; two matches at a time, one thread each. As ../2026-12-04-auxiliary-targets-ab.
X=${X:-/tmp/cm/xqz}; R=${R:-/tmp/cm/runs}; O=${O:-/tmp/cm/eval}; mkdir -p $O
S="--sims 32 --seed 11"
A16="--a-option algorithm=gumbel --a-option win_check=tree --a-option gumbel_considered_moves=16"
A32="--a-option algorithm=gumbel --a-option win_check=tree --a-option gumbel_considered_moves=32"
B16="--b-option algorithm=gumbel --b-option win_check=tree --b-option gumbel_considered_moves=16"
FSF="uci:/usr/games/fairy-stockfish --b-option UCI_Variant=xiangqi --b-ranks 1 --b-nodes 1"
export RAYON_NUM_THREADS=1
for s in ${SEEDS:-1 2}; do
  $X arena --a net:$R/cm32-s$s $A32 --b net:$R/cm16-s$s $B16 $S --games 100 --pgn $O/h2h-s$s.pgn > $O/h2h-s$s.txt 2> $O/h2h-s$s.err &
  $X arena --a net:$R/cm32-s$s $A32 --b greedy $S --games 100 > $O/cm32-s$s-greedy.txt 2> $O/cm32-s$s-greedy.err
  wait
  $X arena --a net:$R/cm16-s$s $A16 --b greedy $S --games 100 > $O/cm16-s$s-greedy.txt 2> $O/cm16-s$s-greedy.err &
  $X arena --a net:$R/cm32-s$s $A32 --b $FSF $S --games 50 > $O/cm32-s$s-fsf1.txt 2> $O/cm32-s$s-fsf1.err
  wait
  $X arena --a net:$R/cm16-s$s $A16 --b $FSF $S --games 50 > $O/cm16-s$s-fsf1.txt 2> $O/cm16-s$s-fsf1.err &
  for arm in 16 32; do
    echo "== cm$arm-s$s win_check=tree"
    $X tactics --player net:$R/cm$arm-s$s --option algorithm=gumbel --option win_check=tree \
      --option gumbel_considered_moves=$arm --sims 32 --count 100
  done > $O/tactics-s$s.txt 2> $O/tactics-s$s.err
  wait
done
echo eval-done > $O/DONE
