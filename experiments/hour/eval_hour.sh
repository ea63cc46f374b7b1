#!/bin/sh
# The shared evaluation of a one-hour record's net (R/seedSEED/snap/min60, SEED 1 unless set) against the fixed
# opponents: 32 Gumbel simulations, win_check = "tree", colour-swapped pairs over the 8 built-in
# openings, seed 11, two matches at a time, one thread each. Fairy-Stockfish 11.1 at one node
# (100 games) and at Skill Level 0 with 32 nodes (50), greedy and random (200 each), head to
# head against PREV (100), `xqz tactics` (100 of each kind), and the 60-minute net against the
# 30-minute one (100). Matches count games, not seconds: the host's speed does not enter them.
#   X the xqz binary; R the run's working folder (see run_hour.sh); OUT the output folder;
#   PREV the earlier record's net of the same seed (a player, net:DIR)
: "${X:?}" "${R:?}" "${OUT:?}" "${PREV:?}"
SEED=${SEED:-1}
mkdir -p $OUT
export RAYON_NUM_THREADS=1
G="--sims 32 --seed 11 --a-option algorithm=gumbel --a-option win_check=tree"
NETB="--b-option algorithm=gumbel --b-option win_check=tree"
FSF="uci:/usr/games/fairy-stockfish --b-option UCI_Variant=xiangqi --b-ranks 1"
TAC="--option algorithm=gumbel --sims 32 --count 100"
echo "eval start $(date -u +%FT%TZ)"
N=$R/seed$SEED/snap/min60
NET="--a net:$N $G"
O=$OUT/seed$SEED-min60; mkdir -p $O
$X arena $NET --b $FSF --b-nodes 1 --games 100 --pgn $O/fsf-1node.pgn > $O/fsf-1node.txt 2> $O/fsf-1node.err &
$X arena $NET --b greedy --games 200 --pgn $O/greedy.pgn > $O/greedy.txt 2> $O/greedy.err
wait
$X arena $NET --b random --games 200 --pgn $O/random.pgn > $O/random.txt 2> $O/random.err &
$X arena $NET --b $FSF --b-option "Skill Level=0" --b-nodes 32 --games 50 --pgn $O/fsf-skill0.pgn \
  > $O/fsf-skill0.txt 2> $O/fsf-skill0.err
wait
$X arena $NET --b $PREV $NETB --games 100 --pgn $O/previous.pgn > $O/previous.txt 2> $O/previous.err &
echo "== seed$SEED min60 win_check=tree" > $O/tactics.txt
$X tactics --player net:$N $TAC --option win_check=tree --out $O/tactics-tree.tsv >> $O/tactics.txt 2> $O/tactics.err
wait
$X arena --a net:$N $G --b net:$R/seed$SEED/snap/min30 $NETB --games 100 \
  --pgn $OUT/seed$SEED-min60-vs-min30.pgn > $OUT/seed$SEED-min60-vs-min30.txt 2> $OUT/seed$SEED-min60-vs-min30.err
echo "eval end $(date -u +%FT%TZ)"
echo eval-done > $OUT/DONE
