#!/bin/bash
# Issue 18: a few test-backend-ops ops on the aarch64 CPU backend under qemu-user (a benchmark,
# not CI: test-backend-ops is not in the bundle, LLAMA_BUILD_TESTS=false). Builds it apart with
# the main job's own configure line of linux-arm64-cpu (build/linux-arm64-cpu/configure.json)
# plus LLAMA_BUILD_TESTS=ON into OUT/cmake, then runs each op in `test` mode (CPU against ggml's
# reference) under qemu-aarch64 with the target sysroot, timed.
#   bash bench/cpu_backend_ops.sh CHECKOUT OUT [OP...]   (default ops: RMS_NORM GET_ROWS SOFT_MAX)
set -euo pipefail
CHECKOUT=$(cd "${1:?checkout where ./dev.sh main ran}" && pwd); OUT=${2:?out dir}; shift 2
OPS=("${@:-RMS_NORM GET_ROWS SOFT_MAX}"); [ $# -gt 0 ] && OPS=("$@") || OPS=(RMS_NORM GET_ROWS SOFT_MAX)
mkdir -p "$OUT"
mapfile -t ARGV < <(python3 - "$CHECKOUT" "$OUT" <<'PY'
import json, sys
d = json.load(open(f"{sys.argv[1]}/build/linux-arm64-cpu/configure.json"))
a = d["argv"]
a[a.index("-B") + 1] = f"{sys.argv[2]}/cmake"
a = [x if not x.startswith("-DLLAMA_BUILD_TESTS=") else "-DLLAMA_BUILD_TESTS=ON" for x in a]
print("\n".join(a))
PY
)
t0=$(date +%s.%N)
"${ARGV[@]}" > "$OUT/configure.log" 2>&1
t1=$(date +%s.%N)
"${ARGV[0]}" --build "$OUT/cmake" --target test-backend-ops -j "${BUNDLEGRAPH_JOBS:-2}" > "$OUT/build.log" 2>&1
t2=$(date +%s.%N)
echo "configure $(echo "$t1 - $t0" | bc) s, build test-backend-ops $(echo "$t2 - $t1" | bc) s"
BIN="$OUT/cmake/bin"
file "$BIN/test-backend-ops"
for op in "${OPS[@]}"; do
  s=$(date +%s.%N)
  qemu-aarch64 -L /usr/aarch64-linux-gnu -E "LD_LIBRARY_PATH=$BIN" "$BIN/test-backend-ops" test -b CPU -o "$op" > "$OUT/$op.log" 2>&1 || true
  e=$(date +%s.%N)
  echo "$op: $(grep -E 'tests passed|Backend .*: (OK|FAIL)|Skipping' "$OUT/$op.log" | tr '\n' ' ') ($(echo "$e - $s" | bc) s)"
done
