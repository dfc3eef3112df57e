#!/bin/bash
# Issue 52 item 4: prepare .carry/ (ignored) for the speed table on the GPU machine (one H100 or H200,
# Ubuntu 24.04, CUDA 13.0, no package registry, 64 MiB a call with the working tree). Parts of at
# most 58 MB, each carried by its own call in quick succession and stashed there
# (bench/device_toolchain_stash.sh PART), in two phases, so the build there starts before the
# CUDA 12 builds here are done:
#   start CPU_DIST   .carry/p<N>:
#     whl/    the wheels bundlegraph needs there (bench/device_parts.sh)
#     blobs/  cache blobs named by sha256, so nothing downloads there: the llama.cpp sdist (split),
#             the x64 pinned compiler's .debs, the Vulkan SDK's .debs
#     gl/     Debian 12's Vulkan loader and the GL dispatch it needs (the image has none)
#     local/  the linux-x64-cpu bundle built here (the merge base, imported there with artifacts=)
#   bench CU12_DIST REF12_DIR RT_DIR   .carry/q<N>:
#     cu12/   the CUDA 12.4 runtime (cudart, cuBLAS, cuBLASLt of the pinned Debian toolkit), a
#             tar.xz split in 55 MB pieces (RT_DIR/cu12rt.tar.xz.part-*)
#     local/  the linux-x64-cuda12-newer bundle (+sm90-host12.4, CUB 3.2 on) and the CUDA 12
#             reference (upstream's 12.8 flags, CUDA 12.4: bench/reference_build.py) as ref12.tar.xz
# Then bench/device_speed_run.sh (start, watch, bench).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/device_parts.sh
CACHE="${BUNDLEGRAPH_CACHE:-$HOME/.cache/bundlegraph}"
grep -qx '/.carry/' .gitignore .git/info/exclude 2>/dev/null || echo '/.carry/' >> .git/info/exclude
case "${1:?start|bench}" in
start)
  CPU_DIST="${2:?CPU_DIST}"
  rm -rf .carry && mkdir -p .carry/stage/whl .carry/stage/blobs .carry/stage/gl .carry/stage/local
  .venv/bin/python - "$CACHE" <<'PY'
import shutil, sys, tomllib
from pathlib import Path
cache = Path(sys.argv[1])
from bundlegraph.toolchains.compiler import LOCKS_DIR
from bundlegraph.toolkit.debs import fetch, load_lock
locks = [LOCKS_DIR / "debian12-gcc12-x86_64.toml", Path("bundles/locks/vulkan-1.4.309-debs.toml")]
want = set()
for f in locks:
    fetch(load_lock(f))  # into the cache, if not there yet
    want |= {p["sha256"] for p in tomllib.loads(f.read_text())["package"]}
for h in sorted(want):
    shutil.copy2(cache / "blobs" / "sha256" / h, Path(".carry/stage/blobs") / h)
print(len(want), "blobs (x64 compiler, Vulkan SDK)")
PY
  stage_sdist "$CACHE" .carry/stage
  stage_wheels .carry/stage
  ( cd .carry/stage/gl && apt-get download -q libvulkan1 libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2 >/dev/null )
  cp "$CPU_DIST"/app-*-linux-x64-cpu.tar.gz .carry/stage/local/
  pack_parts .carry/stage 58000000 p
  ;;
bench)
  CU12_DIST="${2:?CU12_DIST}" REF12="${3:?REF12_DIR}" RT="${4:?RT_DIR}"
  rm -rf .carry/q* .carry/stage && mkdir -p .carry/stage/cu12 .carry/stage/local
  cp "$RT"/cu12rt.tar.xz.part-* .carry/stage/cu12/
  cp "$CU12_DIST"/app-*-linux-x64-cuda12-newer*.tar.gz .carry/stage/local/
  tar -C "$REF12/reference/cmake" -cf - bin | xz -T2 -6 > .carry/stage/local/ref12.tar.xz
  cp "$REF12/reference/reference.json" .carry/stage/local/ref12.json
  pack_parts .carry/stage 58000000 q
  ;;
esac
du -sh .carry/[pq]*
