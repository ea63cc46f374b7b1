#!/bin/sh
# Each 30-minute copy of the run's newest checkpoint (snap/minM) at the config's 32 Gumbel
# simulations with win_check = "tree", colour-swapped pairs over the 8 built-in openings, seed
# 11, the same matches as ../2026-12-04-cpu-1h-features/eval.sh. Two matches at a time, one
# thread each. Matches count games, not seconds: the host's speed does not enter them.
X=${X:-/tmp/long/xqz}; R=${R:-/tmp/long}; OUT=${OUT:-/tmp/long/eval}
mkdir -p $OUT
export RAYON_NUM_THREADS=1
E=/work/main/experiments
# The previous record's nets: 2026-12-04-cpu-1h-features (the tactical planes, no auxiliary
# heads, one thread each) seed 1, and 2026-12-01-cpu-1h-win-check (the record the issue names).
PREV=net:$E/2026-12-04-cpu-1h-features/seed1/net
OLD=net:$E/2026-12-01-cpu-1h-win-check/net
G="--sims 32 --seed 11 --a-option algorithm=gumbel --a-option win_check=tree"
NETB="--b-option algorithm=gumbel --b-option win_check=tree"
FSF="uci:/usr/games/fairy-stockfish --b-option UCI_Variant=xiangqi --b-ranks 1"
for m in ${MINUTES:-30 60 90 120}; do
  NET="--a net:$R/snap/min$m $G"
  O=$OUT/min$m; mkdir -p $O
  $X arena $NET --b $FSF --b-nodes 1 --games 100 --pgn $O/fsf-1node.pgn > $O/fsf-1node.txt 2> $O/fsf-1node.err &
  $X arena $NET --b greedy --games 200 --pgn $O/greedy.pgn > $O/greedy.txt 2> $O/greedy.err
  wait
  $X arena $NET --b random --games 200 --pgn $O/random.pgn > $O/random.txt 2> $O/random.err &
  $X arena $NET --b $FSF --b-option "Skill Level=0" --b-nodes 32 --games 50 --pgn $O/fsf-skill0.pgn \
    > $O/fsf-skill0.txt 2> $O/fsf-skill0.err
  wait
  $X arena $NET --b $PREV $NETB --games 100 --pgn $O/previous.pgn > $O/previous.txt 2> $O/previous.err &
  $X arena $NET --b $OLD $NETB --games 100 --pgn $O/old-record.pgn > $O/old-record.txt 2> $O/old-record.err
  wait
  for c in tree off; do
    echo "== min$m win_check=$c"
    $X tactics --player net:$R/snap/min$m --option algorithm=gumbel --option win_check=$c --sims 32 --count 100
  done > $O/tactics.txt 2> $O/tactics.err
done
# Each copy against the one 30 minutes older: what the last half hour bought.
for m in 60 90 120; do
  p=$((m - 30))
  $X arena --a net:$R/snap/min$m $G --b net:$R/snap/min$p $NETB --games 100 \
    --pgn $OUT/min$m-vs-min$p.pgn > $OUT/min$m-vs-min$p.txt 2> $OUT/min$m-vs-min$p.err &
  [ $m = 90 ] && wait
done
wait
echo eval-done > $OUT/DONE
