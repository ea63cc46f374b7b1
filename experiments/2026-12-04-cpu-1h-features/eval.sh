#!/bin/sh
# The final net of each seed (newest checkpoint of RUN) at the config's 32 Gumbel simulations
# with win_check = "tree": colour-swapped pairs over the 8 built-in openings, seed 11, as
# ../2026-12-01-cpu-1h-win-check/eval.sh. Two matches at a time, one thread each. Matches count
# games, not seconds, so they do not depend on the host's speed.
X=${X:-/tmp/hour/xqz}; R=${R:-/tmp/hour}; OUT=${OUT:-/tmp/hour/eval}
mkdir -p $OUT
export RAYON_NUM_THREADS=1
E=/work/main/experiments
PREV=net:$E/2026-12-01-cpu-1h-win-check/net
G="--sims 32 --seed 11 --a-option algorithm=gumbel --a-option win_check=tree"
NETB="--b-option algorithm=gumbel --b-option win_check=tree"
FSF="uci:/usr/games/fairy-stockfish --b-option UCI_Variant=xiangqi --b-ranks 1"
for s in 1 2; do
  NET="--a net:$R/seed$s $G"
  O=$OUT/seed$s; mkdir -p $O
  $X arena $NET --b $FSF --b-nodes 1 --games 100 --pgn $O/fsf-1node.pgn > $O/fsf-1node.txt 2> $O/fsf-1node.err &
  $X arena $NET --b greedy --games 200 --pgn $O/greedy.pgn > $O/greedy.txt 2> $O/greedy.err
  wait
  $X arena $NET --b random --games 200 --pgn $O/random.pgn > $O/random.txt 2> $O/random.err &
  $X arena $NET --b $FSF --b-option "Skill Level=0" --b-nodes 32 --games 50 --pgn $O/fsf-skill0.pgn \
    > $O/fsf-skill0.txt 2> $O/fsf-skill0.err
  wait
  $X arena $NET --b $PREV $NETB --games 100 --pgn $O/previous.pgn > $O/previous.txt 2> $O/previous.err &
  for c in tree off; do
    echo "== seed$s win_check=$c"
    $X tactics --player net:$R/seed$s --option algorithm=gumbel --option win_check=$c --sims 32 --count 100
  done > $O/tactics.txt 2> $O/tactics.err
  wait
done
# The two seeds against each other.
$X arena --a net:$R/seed1 $G --b net:$R/seed2 $NETB --games 100 --pgn $OUT/seed1-vs-seed2.pgn \
  > $OUT/seed1-vs-seed2.txt 2> $OUT/seed1-vs-seed2.err
echo eval-done > $OUT/DONE
