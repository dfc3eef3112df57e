#!/bin/bash
# Issue 19 item 3 on the 16-core GPU machine: bench/cache_rebuild.py for the x64 twin of the
# Blackwell leg (linux-x64-cuda13-portable + its base linux-x64-cpu, archs 120,121, the machine's
# CUDA 13.0, -j16): cold / warm remote / one-file change / no cache, against WsgiDAV on 127.0.0.1.
# Prepare .carry/ here with bench/device_cache_prepare.sh, then device `run`:
#   bash bench/device_cache_run.sh start   # carry [".carry"]: set up, start detached, watch ~9 min
#   bash bench/device_cache_run.sh watch   # carry nothing: watch until done, results to $OUT
set -u -o pipefail
C=/tmp/bg-cache-carry
B=/tmp/bg-cache-bench
if [ "${1:-watch}" = start ]; then
  rm -rf $C && mkdir -p $C/src && cp -r .carry/bundles $C/bundles || exit 2
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .carry/whl/*.whl || exit 3
  tar -C $C/src -xJf .carry/llama.cpp.tar.xz || exit 4
  # this machine's glibc/libstdc++ are newer than the release runner's floors: the carried specs take
  # this host's (as bench/device_smoke_run.sh does; verify still checks them)
  G=$(ldd --version | head -1 | grep -oE '[0-9]+\.[0-9]+$')
  X=$(grep -aoE "GLIBCXX_3\.4\.[0-9]+" "$(g++ -print-file-name=libstdc++.so.6)" | sort -V | tail -1 | cut -d_ -f2)
  sed -i "s/^glibc_floor = .*/glibc_floor = \"$G\"/; s/^glibcxx_floor = .*/glibcxx_floor = \"$X\"/" $C/bundles/linux-x64-cpu.toml $C/bundles/linux-x64-cuda13-portable.toml
  echo "host: $(nproc) cores; $(/usr/local/cuda/bin/nvcc --version | tail -2 | head -1); cmake $(cmake --version | head -1); ninja $(ninja --version); $(g++ --version | head -1); ccache $(/tmp/site/bin/ccache --print-version)"
  rm -rf $B && mkdir -p $B
  ( export PYTHONPATH=/tmp/site:$PWD PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1 BUNDLEGRAPH_CACHE=/tmp/bgcache \
           BUNDLEGRAPH_TOOLS=system BUNDLEGRAPH_ARCHS=120,121 BUNDLEGRAPH_TOOLKIT_SOURCE=host:/usr/local/cuda BUNDLEGRAPH_JOBS=16
    setsid nohup python3 bench/cache_rebuild.py --root $B --leg linux-x64-cuda13-portable --base-leg linux-x64-cpu \
      --src $C/src/llama.cpp --bundles $C/bundles ${BENCH_ARGS:---miss-twin --miss-build-only} > $B/driver.log 2>&1 < /dev/null & )
fi
end=$(( $(date +%s) + ${WATCH_S:-540} ))
while [ $(date +%s) -lt $end ]; do
  sleep 15
  grep -q '"cold_vs_miss"' $B/results.json 2>/dev/null && break
  [ -n "${DONE_WHEN:-}" ] && grep -q "$DONE_WHEN" $B/driver.log 2>/dev/null && break
  if ! pgrep -f cache_rebuild.py > /dev/null; then echo "driver ended"; break; fi
done
echo "--- driver.log"; cat $B/driver.log | tail -20
for f in $B/*.log; do echo "--- $f: $(tail -1 $f | cut -c1-200)"; done
[ -s $B/results.json ] && cp $B/results.json $OUT/ && tar -czf $OUT/logs.tgz -C $B --exclude=a --exclude=b --exclude=c --exclude=d --exclude='*-ccache' --exclude=dav --exclude=src --exclude=bundles . 
ls $B/diffoscope-* 2>/dev/null && cp $B/diffoscope-* $OUT/
true
