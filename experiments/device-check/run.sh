#!/bin/sh
# Run on the device machine, in the repository's root, after prepare.sh here (see README.md).
# Writes everything to $OUT/device-check.txt. DEVICE (default wgpu), BENCH_SECONDS (per `xqz
# bench` figure, default 3; not SECONDS, which bash keeps as its own clock), VISITS and POSITIONS
# (the analysis benchmark, default 800 and 64) can be set to shorten a rehearsal. The steps'
# limits add up to 510 s, inside a call's 600.
set -u
DEVICE=${DEVICE:-wgpu}; SECONDS_EACH=${BENCH_SECONDS:-3}; VISITS=${VISITS:-800}; POSITIONS=${POSITIONS:-64}
OUT=${OUT:-/tmp/device-check-out}; mkdir -p "$OUT"; LOG=$OUT/device-check.txt
exec > "$LOG" 2>&1
step() { echo; echo "### $*  ($(date -u +%H:%M:%S))"; }
step machine
cat .device/commit 2>/dev/null; uname -a; nproc; nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv 2>&1 | head -3
if ! ldconfig -p | grep -q libvulkan.so.1; then
  for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
fi
ldconfig -p | grep 'libvulkan.so' | head -2
if [ -f /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ] && [ -z "${VK_DRIVER_FILES:-}" ]; then
  export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
fi
XQZ=/tmp/xqz; xz -dc .device/xqz.xz > $XQZ && chmod +x $XQZ; $XQZ --version
NET=.device/net
step "xqz bench --device $DEVICE --config configs/cpu.toml"
timeout 120 $XQZ bench --device "$DEVICE" --config configs/cpu.toml --seconds "$SECONDS_EACH"
step "xqz bench --device $DEVICE --config configs/gpu.toml"
timeout 170 $XQZ bench --device "$DEVICE" --config configs/gpu.toml --seconds "$SECONDS_EACH"
step "analysis benchmark, $VISITS visits, $POSITIONS positions, device $DEVICE"
timeout 170 python3 .device/analysis_bench.py $XQZ $NET "$VISITS" "$POSITIONS" "$DEVICE"
step "xqz bench --device cpu --config configs/cpu.toml (this machine's CPU, for scale)"
timeout 50 $XQZ bench --device cpu --config configs/cpu.toml --seconds 2
step done
