#!/bin/bash
# Issue 52 item 4: prepare .carry/ (ignored) for the speed table on the GPU machine (one H100 or H200,
# Ubuntu 24.04, CUDA 13.0, no package registry, 64 MiB a call with the working tree). Parts of at
# most 58 MB, each carried by its own call in quick succession and stashed there
# (bench/device_toolchain_stash.sh PART), in two phases, so the build there starts before the
# CUDA 12 builds here are done:
#   start CPU_DIST CT12 RT_DIR   .carry/p<N>:
#     whl/    the wheels bundlegraph needs there (bench/device_parts.sh)
#     blobs/  cache blobs named by sha256, so nothing downloads there: the llama.cpp sdist (split),
#             the x64 pinned compiler's .debs, the Vulkan SDK's .debs, the CCCL 3.2 wheel
#     gl/     Debian 12's Vulkan loader and the GL dispatch it needs (the image has none)
#     local/  the linux-x64-cpu bundle built here (the merge base, imported there with artifacts=)
#     cu12/   the pinned Debian CUDA 12.4 toolkit's compile parts (CT12: nvcc, cicc, ptxas, headers,
#             cudart, link stubs; a tar.xz) and its runtime (cudart, cuBLAS, cuBLASLt: a tar.xz split
#             in 55 MB pieces, RT_DIR/cu12rt.tar.xz.part-*): the cuda12 leg builds there
#   bench REF12_DIR|- [CU12_DIST]   .carry/q<N>:
#     local/  the CUDA 12 reference built here (upstream's 12.8 flags, CUDA 12.4,
#             bench/reference_build.py) as ref12.tar.xz; the cuda12 leg's bundle built here
# Then bench/device_speed_run.sh (start, watch, bench).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/device_parts.sh
CACHE="${BUNDLEGRAPH_CACHE:-$HOME/.cache/bundlegraph}"
grep -qx '/.carry/' .gitignore .git/info/exclude 2>/dev/null || echo '/.carry/' >> .git/info/exclude
case "${1:?start|bench}" in
start)
  CPU_DIST="${2:?CPU_DIST}" CT12="${3:?CT12}" RT="${4:?RT_DIR}"
  rm -rf .carry && mkdir -p .carry/stage/whl .carry/stage/blobs .carry/stage/gl .carry/stage/local .carry/stage/cu12
  # the FetchContent pins' wheels into the cache, then their blobs and the locks' .debs
  .venv/bin/python -c "from bundlegraph.pipeline.compile.fetchcontent import prepare; from bundlegraph.specs.loader import load_matrix; [prepare(p) for p in load_matrix('bundles').release.fetchcontent]"
  .venv/bin/python -c "from bundlegraph.specs.loader import load_matrix; print(*(p.sha256 for p in load_matrix('bundles').release.fetchcontent))" \
    | tr ' ' '\n' | while read -r h; do cp "$CACHE/blobs/sha256/$h" .carry/stage/blobs/; done
  .venv/bin/python -c "from bundlegraph.toolkit.debs import fetch, load_lock; import sys; [fetch(load_lock(f)) for f in sys.argv[1:]]" \
    bundlegraph/toolchains/machines/locks/debian12-gcc12-x86_64.toml bundles/locks/vulkan-1.4.309-debs.toml
  stage_lock_blobs "$CACHE" .carry/stage bundlegraph/toolchains/machines/locks/debian12-gcc12-x86_64.toml bundles/locks/vulkan-1.4.309-debs.toml
  stage_sdist "$CACHE" .carry/stage
  stage_wheels .carry/stage
  rm -f .carry/stage/whl/cmake-*.whl .carry/stage/whl/ninja-*.whl  # the machine's own cmake and ninja build (60 MB less to carry)
  ( cd .carry/stage/gl && apt-get download -q libvulkan1 libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2 >/dev/null )
  cp "$CPU_DIST"/app-*-linux-x64-cpu.tar.gz .carry/stage/local/
  [ "$CT12" = - ] || cp "$CT12" .carry/stage/cu12/ct12.tar.xz  # -: no CUDA 12 build there
  cp "$RT"/cu12rt.tar.xz.part-* .carry/stage/cu12/
  pack_parts .carry/stage 58000000 p
  ;;
bench)
  REF12="${2:?REF12_DIR or -}" CU12_DIST="${3:-}"
  rm -rf .carry/q* .carry/stage && mkdir -p .carry/stage/local
  if [ "$REF12" != - ]; then
    tar -C "$REF12/reference/cmake" -cf - bin | xz -T2 -6 > .carry/stage/local/ref12.tar.xz
    cp "$REF12/reference/reference.json" .carry/stage/local/ref12.json
  fi
  # the bundle (89 MB for sm_90 alone) in 50 MB pieces, joined there
  for f in ${CU12_DIST:+"$CU12_DIST"/app-*-linux-x64-cuda12-newer*.tar.gz}; do split -b 50000000 "$f" ".carry/stage/local/$(basename "$f").part-"; done
  pack_parts .carry/stage 58000000 q
  ;;
esac
du -sh .carry/[pq]*
