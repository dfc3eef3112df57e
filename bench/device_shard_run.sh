#!/bin/bash
# Issue 28 item 6 on the 16-core GPU machine: bench/shard_concurrent.py for the x64 twin with its
# 7 archs (linux-x64-cuda13-portable, the machine's CUDA 13.0 as the host toolkit): one build at
# -j4 against 4 concurrent shards at -j4 each plus the final compile, against WsgiDAV on 127.0.0.1.
# Prepare .carry/ here with bench/device_cache_prepare.sh, then device `run`:
#   bash bench/device_shard_run.sh start   # carry [".carry"]: set up, start detached, watch ~9 min
#   bash bench/device_shard_run.sh watch   # carry nothing: watch until done, results to $OUT
set -u -o pipefail
. bench/device_carry.sh
C=/tmp/bg-shard-carry
B=/tmp/bg-shard-bench
if [ "${1:-watch}" = start ]; then
  unpack_carry $C || exit $?
  echo "host: $(nproc) cores; $(/usr/local/cuda/bin/nvcc --version | tail -2 | head -1); cmake $(cmake --version | head -1); ninja $(ninja --version); $(g++ --version | head -1); ccache $(/tmp/site/bin/ccache --print-version)"
  ( export PYTHONPATH=/tmp/site:$PWD PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1 BUNDLEGRAPH_CACHE=/tmp/bgcache \
           BUNDLEGRAPH_TOOLS=system BUNDLEGRAPH_TOOLKIT_SOURCE=host:/usr/local/cuda
    mkdir -p $B.log && setsid nohup python3 bench/shard_concurrent.py --root $B --leg linux-x64-cuda13-portable \
      --shards 4 --jobs 4 --src $C/src/llama.cpp --bundles $C/bundles > $B.log/driver.log 2>&1 < /dev/null & )
fi
end=$(( $(date +%s) + ${WATCH_S:-540} ))
while [ $(date +%s) -lt $end ]; do
  sleep 10
  grep -q '"ratio_single_over_sharded"' $B/results.json 2>/dev/null && break
  if ! pgrep -f shard_concurrent.py > /dev/null; then echo "driver ended"; break; fi
done
echo "--- driver.log"; tail -40 $B.log/driver.log
for f in $B/*.log; do echo "--- $f: $(tail -1 $f | cut -c1-200)"; done
[ -s $B/results.json ] && cp $B/results.json $OUT/
tar -czf $OUT/logs.tgz -C $B --exclude='*/build' --exclude='*/.ccache' --exclude=dav --exclude=src --exclude=bundles . 2>/dev/null
true
