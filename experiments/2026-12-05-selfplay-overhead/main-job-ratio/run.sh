#!/bin/sh
X=/work/main/target/release/xqz
rm -rf /tmp/mj /tmp/mj-done
$X bench --config /work/main/configs/cpu.toml > /tmp/mj-bench1.txt 2>&1
timeout 420 $X train --run-dir /tmp/mj --hours 0.1 --quiet > /tmp/mj.log 2>&1
$X bench --config /work/main/configs/cpu.toml > /tmp/mj-bench2.txt 2>&1
echo done > /tmp/mj-done
