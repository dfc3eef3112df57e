#!/bin/bash
# Issue 50, on the GPU machine (Ubuntu 24.04, glibc 2.39, GCC 13.3: GitHub's ubuntu-24.04's twin),
# once every part of bench/device_toolchain_prepare.sh is in $STASH (bench/device_toolchain_stash.sh):
# build, verify (the specs' floors: nothing rewritten) and package with the pinned compilers from
# the stashed .debs (no apt, no Debian archive there), detached, in two doit runs:
#   1. package:linux-x64-cpu package:linux-arm64-cpu, as on any runner (the sha256 to compare);
#   2. package:linux-x64-cuda13-portable with the machine's CUDA 13.0 (BUNDLEGRAPH_TOOLKIT_SOURCE=
#      host:/usr/local/cuda, archs 90: the CUDA wheels and cuBLAS do not fit a carry), nvcc's host
#      compiler the pinned g++; its verify checks the same floors.
# Each bundle's sha256 and the highest GLIBC/GLIBCXX versions its ELF files need are printed.
#   bash bench/device_toolchain_run.sh start OUT     (returns after WATCH_S, default 520 s)
#   bash bench/device_toolchain_run.sh watch OUT     (again, until it says done)
# BG_CPU_TASKS / BG_CUDA_TASKS name other tasks for either run (none: skip the CPU run), BG_SKIP_CUDA=1
# skips the CUDA run.
set -uo pipefail
MODE="${1:?start|watch}"; OUT="${2:?OUT}"
S="${STASH:-/root/stash}"
B="${BG_ROOT:-/root/bg}"   # cache, work dir, code copy, bundles copy
. bench/device_parts.sh  # SDIST, unstash
C=$B/cache W=$B/work P=$B/code
PY="${PY:-python3}"
if [ "$MODE" = start ]; then
  rm -rf "$W" "$P" && mkdir -p "$C/blobs/sha256" "$W" "$P" || exit 2
  unstash "$S" "$C" "$B/site" || exit $?
  cp -r bundlegraph dodo.py pyproject.toml bundles "$P/" || exit 5
  # the machine's toolkit is CUDA 13.0: the cuda12 specs would be refused as local overrides (line mismatch)
  rm -f "$P"/bundles/*-cuda12-*.toml
  echo "host: $(. /etc/os-release; echo "$PRETTY_NAME"), $(ldd --version | head -1), $(g++ --version | head -1), $(nproc) cores"
  cat > "$B/job.sh" <<EOF
PY=$PY
export PYTHONPATH=$B/site:$P PYTHONUNBUFFERED=1 BUNDLEGRAPH_CACHE=$C BUNDLEGRAPH_WORKDIR=$W BUNDLEGRAPH_JOBS=16
export BUNDLEGRAPH_BUNDLES=$P/bundles BUNDLEGRAPH_CMAKE=$B/site/cmake/data/bin/cmake BUNDLEGRAPH_NINJA=$B/site/bin/ninja
export BUNDLEGRAPH_LAUNCHER=none
cd $W
t0=\$(date +%s)
[ "\${BG_CPU_TASKS:-}" = none ] || \$PY -m doit -f $P/dodo.py -n 2 -P thread \${BG_CPU_TASKS:-package:linux-x64-cpu package:linux-arm64-cpu} > $W/doit-cpu.log 2>&1
echo "cpu \$? \$(( \$(date +%s) - t0 ))" >> $W/doit.rc
t0=\$(date +%s)
[ -n "\${BG_SKIP_CUDA:-}" ] || BUNDLEGRAPH_ARCHS=90 BUNDLEGRAPH_TOOLKIT_SOURCE=host:/usr/local/cuda \$PY -m doit -f $P/dodo.py \${BG_CUDA_TASKS:-package:linux-x64-cuda13-portable} > $W/doit-cuda.log 2>&1
echo "cuda \$? \$(( \$(date +%s) - t0 ))" >> $W/doit.rc
echo done >> $W/doit.rc
EOF
  ( setsid nohup bash "$B/job.sh" > "$W/job.out" 2>&1 < /dev/null & )
fi
end=$(( $(date +%s) + ${WATCH_S:-520} ))
while [ "$(date +%s)" -lt "$end" ] && ! grep -q '^done' "$W/doit.rc" 2>/dev/null; do sleep 10; done
cat "$W/doit.rc" 2>/dev/null
for log in "$W"/doit-*.log; do
  [ -f "$log" ] || continue
  echo "== $log"; grep -E "^\.  |done in|FAILED|error|Error|refus|glibc|not hermetic" "$log" | grep -v "^\[build" | tail -40
  cp "$log" "$OUT/" 2>/dev/null
done
grep -q '^done' "$W/doit.rc" 2>/dev/null || { echo "still running; call watch again"; exit 0; }
shopt -s nullglob; bundles=("$W"/dist/*.tar.gz); shopt -u nullglob
[ ${#bundles[@]} -eq 0 ] || PYTHONPATH=$B/site:$P $PY bench/glibc_needs.py "${bundles[@]}"
for leg in linux-x64-cpu linux-arm64-cpu linux-x64-cuda13-portable; do
  for st in build package; do
    f="$W/build/$leg/$st.json"; [ -f "$f" ] && python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(sys.argv[2], d.get('seconds'))" "$f" "$st:$leg"
  done
  cp "$W/build/$leg/configure.json" "$OUT/configure-$leg.json" 2>/dev/null
done
exit 0
