#!/bin/sh
# eval.sh RUN GAMES: the run's newest net at 32 Gumbel simulations against greedy and random.
run=$1; games=${2:-100}
for opp in greedy random; do
  /tmp/xqz-new arena --a net:/tmp/ab/runs/$run --b $opp --games $games --sims 32 \
    --a-option algorithm=gumbel --seed 7 > /tmp/ab/arena-$run-$opp.txt 2>/tmp/ab/arena-$run-$opp.err
done
