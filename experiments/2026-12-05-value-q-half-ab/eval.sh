#!/bin/sh
# The final net of each run at the config's search (32 Gumbel simulations, win_check = "tree"),
# colour-swapped pairs over the 8 built-in openings, seed 11; two matches at a time, one thread
# each. The same matches as ../2026-12-05-opening-plies-ab/eval.sh.
X=${X:-/tmp/s43/xqz-new}; R=${R:-/tmp/s43/vq/runs}; O=${O:-/tmp/s43/vq/eval}; mkdir -p $O
S="--sims 32 --seed 11"
AO="--a-option algorithm=gumbel --a-option win_check=tree"
BO="--b-option algorithm=gumbel --b-option win_check=tree"
FSF="uci:/usr/games/fairy-stockfish --b-option UCI_Variant=xiangqi --b-ranks 1 --b-nodes 1"
export RAYON_NUM_THREADS=1
for s in ${SEEDS:-1 2}; do
  $X arena --a net:$R/vq50-s$s $AO --b net:$R/base-s$s $BO $S --games 100 --pgn $O/h2h-s$s.pgn > $O/h2h-s$s.txt 2> $O/h2h-s$s.err &
  $X arena --a net:$R/vq50-s$s $AO --b greedy $S --games 100 > $O/vq50-s$s-greedy.txt 2> $O/vq50-s$s-greedy.err
  wait
  $X arena --a net:$R/base-s$s $AO --b greedy $S --games 100 > $O/base-s$s-greedy.txt 2> $O/base-s$s-greedy.err &
  $X arena --a net:$R/vq50-s$s $AO --b $FSF $S --games 50 > $O/vq50-s$s-fsf1.txt 2> $O/vq50-s$s-fsf1.err
  wait
  $X arena --a net:$R/base-s$s $AO --b $FSF $S --games 50 > $O/base-s$s-fsf1.txt 2> $O/base-s$s-fsf1.err &
  for arm in vq50 base; do
    echo "== $arm-s$s win_check=tree"
    $X tactics --player net:$R/$arm-s$s --option algorithm=gumbel --option win_check=tree --sims 32 --count 100
  done > $O/tactics-s$s.txt 2> $O/tactics-s$s.err
  wait
done
echo eval-done > $O/DONE
