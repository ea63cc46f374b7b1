#!/bin/sh
# The measure of self-play against raw inference, continuous self-play off and on,
# in the order off, on, on, off, with xqz bench before, between and after.
X=/tmp/cont/xqz
cd /tmp/cont
rm -rf runs; mkdir -p runs
$X bench --config off.toml > bench-1.txt 2>&1
i=0
for arm in off on on off; do
  i=$((i+1))
  [ $i -eq 3 ] && $X bench --config off.toml > bench-2.txt 2>&1
  timeout 480 $X train --config $arm.toml --run-dir runs/$i-$arm --hours 0.1 --quiet > runs/$i-$arm.log 2>&1
done
$X bench --config off.toml > bench-3.txt 2>&1
echo done > done
