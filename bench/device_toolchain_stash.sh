#!/bin/bash
# Issue 50, on the GPU machine: move one carried part (.carry/p<N>, bench/device_toolchain_prepare.sh)
# into /root/stash, which outlives the call while the machine stays warm. Usage: stash.sh N|PART
set -euo pipefail
d=".carry/$1"; [ -d "$d" ] || d=".carry/p$1"   # a part's folder (q2) or its number (3: p3)
mkdir -p /root/stash
cp -r "$d/." /root/stash/
du -sh /root/stash; ls /root/stash/whl 2>/dev/null | wc -l; ls /root/stash/blobs 2>/dev/null | wc -l
