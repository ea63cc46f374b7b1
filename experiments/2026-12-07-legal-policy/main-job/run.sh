#!/bin/sh
cd /tmp/mj
/tmp/base/xqz train --run-dir /tmp/mj/old --threads 1 --hours 0.15 --quiet > old.log 2>&1 &
/tmp/gather/xqz train --run-dir /tmp/mj/new --threads 1 --hours 0.15 --quiet > new.log 2>&1 &
wait
echo done > /tmp/mj/done
