#!/bin/sh
# The shared evaluation of a paired A/B's final nets: for each seed in SEEDS (default "1 2"), arm
# ARM against `base` head to head, each against greedy and against Fairy-Stockfish 11.1 at one
# node, and `xqz tactics` for both; each net with its recorded [search] at SIMS simulations a
# move (default 32), two matches at a time, one thread each. Every match plays colour-swapped
# pairs over the first 50 of 1,000 distinct 8-ply openings (../2026-12-02-pretrain-ab/openings.txt),
# so its 100 games are 100 different games: over the 8 built-in openings two deterministic
# players repeat 16 games (../2026-12-03-engine-search/).
#   ARM   the arm's name; X the xqz binary; R the runs folder; O the output folder
: "${ARM:?}" "${X:?}" "${R:?}" "${O:?}"
mkdir -p $O
OPEN=$(cd $(dirname $0)/.. && pwd)/2026-12-02-pretrain-ab/openings.txt
S="--sims ${SIMS:-32} --seed 11 --games 100 --openings $OPEN"
FSF="uci:/usr/games/fairy-stockfish --b-option UCI_Variant=xiangqi --b-ranks 1 --b-nodes 1"
export RAYON_NUM_THREADS=1
for s in ${SEEDS:-1 2}; do
  $X arena --a net:$R/$ARM-s$s --b net:$R/base-s$s $S --pgn $O/h2h-s$s.pgn > $O/h2h-s$s.txt 2> $O/h2h-s$s.err &
  $X arena --a net:$R/$ARM-s$s --b greedy $S > $O/$ARM-s$s-greedy.txt 2> $O/$ARM-s$s-greedy.err
  wait
  $X arena --a net:$R/base-s$s --b greedy $S > $O/base-s$s-greedy.txt 2> $O/base-s$s-greedy.err &
  $X arena --a net:$R/$ARM-s$s --b $FSF $S > $O/$ARM-s$s-fsf1.txt 2> $O/$ARM-s$s-fsf1.err
  wait
  $X arena --a net:$R/base-s$s --b $FSF $S > $O/base-s$s-fsf1.txt 2> $O/base-s$s-fsf1.err &
  for arm in $ARM base; do
    echo "== $arm-s$s"
    $X tactics --player net:$R/$arm-s$s --sims ${SIMS:-32} --count 100 --out $O/tactics-$arm-s$s.tsv
  done > $O/tactics-s$s.txt 2> $O/tactics-s$s.err
  wait
done
echo eval-done > $O/DONE
