#!/bin/sh
# The final net of each run (newest checkpoint) at the config's search (32 Gumbel simulations,
# win_check = "tree"), colour-swapped pairs over the 8 built-in openings, seed 11. Two matches
# at a time, one thread each.
X=${X:-/tmp/ab/xqz}; R=${R:-/tmp/ab/runs}; O=${O:-/tmp/ab/eval}; mkdir -p $O
S="--sims 32 --seed 11"
A="--a-option algorithm=gumbel --a-option win_check=tree"
B="--b-option algorithm=gumbel --b-option win_check=tree"
FSF="uci:/usr/games/fairy-stockfish --b-option UCI_Variant=xiangqi --b-ranks 1 --b-nodes 1"
export RAYON_NUM_THREADS=1
for s in 1 2; do
  $X arena --a net:$R/aux-s$s --b net:$R/base-s$s $A $B $S --games 100 --pgn $O/h2h-s$s.pgn > $O/h2h-s$s.txt 2> $O/h2h-s$s.err &
  $X arena --a net:$R/aux-s$s --b greedy $A $S --games 100 > $O/aux-s$s-greedy.txt 2> $O/aux-s$s-greedy.err
  wait
  $X arena --a net:$R/base-s$s --b greedy $A $S --games 100 > $O/base-s$s-greedy.txt 2> $O/base-s$s-greedy.err &
  $X arena --a net:$R/aux-s$s --b $FSF $A $S --games 50 > $O/aux-s$s-fsf1.txt 2> $O/aux-s$s-fsf1.err
  wait
  $X arena --a net:$R/base-s$s --b $FSF $A $S --games 50 > $O/base-s$s-fsf1.txt 2> $O/base-s$s-fsf1.err &
  for arm in aux base; do
    echo "== $arm-s$s win_check=off"
    $X tactics --player net:$R/$arm-s$s --option algorithm=gumbel --option win_check=off --sims 32 --count 100
  done > $O/tactics-s$s.txt 2> $O/tactics-s$s.err
  wait
done
echo eval-done > $O/DONE
