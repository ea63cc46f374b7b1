#!/bin/sh
# Resume seed 1's run to 120 minutes of run time (elapsed_s in metrics.csv is cumulative over
# resumes). Copy the newest checkpoint once the run passes 90 minutes; SIGINT at 120.
R=/tmp/fast/seed1; X=/tmp/fast/xqz
echo "resume2 start $(date -u +%FT%TZ)" >> $R/snap/index.txt
$X train --resume --run-dir $R/run --quiet >> $R/resume2.log 2>&1 &
T=$!
last() { tail -1 $R/run/metrics.csv | cut -d, -f2 | cut -d. -f1; }
snap90=no
while kill -0 $T 2>/dev/null; do
  sleep 5
  e=$(last)
  if [ $snap90 = no ] && [ "$e" -ge 5400 ]; then
    c=$(ls -d $R/run/checkpoints/ckpt-* | sort | tail -1)
    cp -r "$c" $R/snap/min90
    echo "min90 $(basename $c) $(date -u +%FT%TZ) elapsed_s=$e" >> $R/snap/index.txt
    snap90=yes
  fi
  if [ "$e" -ge 7200 ]; then kill -INT $T; break; fi
done
wait $T
c=$(ls -d $R/run/checkpoints/ckpt-* | sort | tail -1)
cp -r "$c" $R/snap/min120
echo "min120 $(basename $c) $(date -u +%FT%TZ) elapsed_s=$(last)" >> $R/snap/index.txt
echo done > $R/DONE2
