#!/bin/bash
# Issue 50, on the GPU machine after bench/device_toolchain_run.sh: which object or library of the
# CUDA leg references glibc >= 2.38 symbols (__isoc23_*), what nvcc's profile adds, one nvcc
# command line; then the CPU bundle's smoke there (version, libraries, generate, serve).
set -uo pipefail
B="${BG_ROOT:-/root/bg}"; W=$B/work P=$B/code
cd "$W/build/linux-x64-cuda13-portable/cmake" || exit 2
echo "== objects referencing __isoc23_*:"
find . -name '*.o' | while read -r o; do nm "$o" 2>/dev/null | grep -q isoc23 && echo "  $o: $(nm "$o" | grep isoc23 | tr -s ' ' | tr '\n' ' ')"; done | head -8
for a in /usr/local/cuda/lib64/*.a /usr/local/cuda/targets/x86_64-linux/lib/*.a; do
  n=$(nm "$a" 2>/dev/null | grep -c isoc23); [ "$n" -gt 0 ] && echo "  $a: $n references"
done
echo "== nvcc.profile:"; cat /usr/local/cuda/bin/nvcc.profile
python3 - <<'PY'
import json
c = [x for x in json.load(open("compile_commands.json")) if x["file"].endswith(".cu")][0]["command"]
print("== one nvcc command:", c[:400], "...")
PY
grep -n "CMAKE_CUDA_RUNTIME_LIBRARY\|CMAKE_CUDA_HOST_COMPILER:" CMakeCache.txt
grep -o "CMAKE_CUDA_IMPLICIT_INCLUDE_DIRECTORIES \"[^\"]*\"" CMakeFiles/*/CMakeCUDACompiler.cmake
cd "$W" && env PYTHONPATH=$B/site:$P PYTHONUNBUFFERED=1 BUNDLEGRAPH_CACHE=$B/cache BUNDLEGRAPH_WORKDIR=$W \
  BUNDLEGRAPH_BUNDLES=$P/bundles BUNDLEGRAPH_CMAKE=$B/site/cmake/data/bin/cmake BUNDLEGRAPH_NINJA=$B/site/bin/ninja \
  BUNDLEGRAPH_LAUNCHER=none timeout 300 python3 -m doit -f $P/dodo.py smoke:linux-x64-cpu 2>&1 | tail -25
