#!/bin/bash
# Issue 50, on the GPU machine: move one carried part (.carry/p<N>, bench/device_toolchain_prepare.sh)
# into /root/stash, which outlives the call while the machine stays warm. Usage: stash.sh N
set -euo pipefail
n="$1"
mkdir -p /root/stash
cp -r ".carry/p$n/." /root/stash/
du -sh /root/stash; ls /root/stash/whl 2>/dev/null | wc -l; ls /root/stash/blobs | wc -l
