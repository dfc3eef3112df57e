#!/bin/bash
# Issue 19 item 3 on the 16-core GPU machine: bench/cache_rebuild.py for the x64 twin of the
# Blackwell leg (linux-x64-cuda13-portable + its base linux-x64-cpu, archs 120,121, the machine's
# CUDA 13.0, -j16): cold / warm remote / one-file change / no cache, against WsgiDAV on 127.0.0.1.
# Prepare .carry/ here with bench/device_cache_prepare.sh, then device `run`:
#   bash bench/device_cache_run.sh start   # carry [".carry"]: set up, start detached, watch ~9 min
#   bash bench/device_cache_run.sh watch   # carry nothing: watch until done, results to $OUT
set -u -o pipefail
. bench/device_carry.sh
C=/tmp/bg-cache-carry
B=/tmp/bg-cache-bench
if [ "${1:-watch}" = start ]; then
  unpack_carry $C || exit $?
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
