#!/bin/sh
# gen.sh: the 2,000 Fairy-Stockfish games and their shards.
# openings.txt: 1,000 distinct openings, each the 8 built-in ones followed by 4 random plies
#   (`xqz arena --a random --b random --games 1200 --max-plies 8 --seed 11 --pgn open.pgn`, the
#   distinct 8-ply lines shuffled with Python's random.seed(5), the first 1,000 kept).
# Each opening is played twice, colours swapped, by Debian's Fairy-Stockfish 11.1 against
# itself at 2,000 nodes a move (a 400-ply cap), in two processes of 500 openings each.
X=${X:-/work/main/target/release/xqz}; D=${D:-/tmp/pt}; FSF=/usr/games/fairy-stockfish
cd $D && split -n l/2 -d openings.txt op
for k in 00 01; do
  $X arena --a uci:$FSF --b uci:$FSF --a-option UCI_Variant=xiangqi --b-option UCI_Variant=xiangqi \
    --a-ranks 1 --b-ranks 1 --a-nodes 2000 --b-nodes 2000 --games 1000 --openings op$k \
    --max-plies 400 --pgn fsf-$k.pgn > fsf-games-$k.txt 2>&1 &
done
wait
$X import fsf-00.pgn fsf-01.pgn --out shards
