#!/bin/sh
# Run here, in the repository's root, before a device call: builds the bundle that travels.
#   .device/xqz.xz   the release `xqz` (stripped, xz): the device machine reaches no registry,
#                    so it cannot build; uncompressed the binary is over the call's 64 MiB
#   .device/net/     the net the benchmarks use (an export of `xqz export`, all its files: the
#                    loader checks every file its manifest lists)
#   .device/*.py     the analysis benchmark; .device/commit, the commit the binary was built from
#   .gl/*.deb        the Vulkan loader, unpacked there if the machine lacks one
# Both folders are ignored through .git/info/exclude. NET defaults to the current record's net.
set -eu
NET=${NET:-experiments/2026-12-05-cpu-2h-fast-training/net-min120}
grep -qx '/.device/' .git/info/exclude || echo /.device/ >> .git/info/exclude
grep -qx '/.gl/' .git/info/exclude || echo /.gl/ >> .git/info/exclude
cargo build --release -p xiangqi-cli
rm -rf .device && mkdir -p .device/net
strip -o .device/xqz target/release/xqz
xz -T0 -6 .device/xqz
cp "$NET"/*.* .device/net/
git rev-parse HEAD > .device/commit
cp experiments/2026-12-03-engine-search/analysis_bench.py experiments/device-check/run.sh .device/
if [ ! -d .gl ]; then
  mkdir -p .gl /tmp/amd64/partial
  o='-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=/tmp/amd64'
  # shellcheck disable=SC2086
  apt-get $o update -qq
  # shellcheck disable=SC2086
  (cd .gl && apt-get $o download libvulkan1)
fi
du -sh .device .gl
