#!/bin/bash
# Issue 7 item 2 on the 16-core GPU machine: bench/build_blackwell.py for the x64 twin of the
# Blackwell leg (linux-x64-cuda13-portable, archs 120,121, the machine's CUDA 13.0, no compiler
# launcher), -j16: the build stage through bundlegraph vs the same cmake/ninja by hand.
# Prepare .carry/ here with bench/device_smoke_prepare.sh, then device `run`:
#   bash bench/device_build_bench.sh start   # carry [".carry"]: set up, start detached (setsid), watch ~9 min
#   bash bench/device_build_bench.sh watch   # carry nothing: watch until done, copy results to $OUT
# A call may run 10 minutes, the benchmark ~15: it runs detached across calls on the held machine.
# Everything it uses is copied out of .carry first (a call that names .carry in carry replaces that
# folder there: the first attempt lost its unpacked source that way in the middle of a build).
set -u -o pipefail
. bench/device_carry.sh
C=/tmp/bg-build-carry
B=/tmp/bg-build-bench
if [ "${1:-watch}" = start ]; then
  unpack_carry $C || exit $?
  echo "host: $(nproc) cores; $(/usr/local/cuda/bin/nvcc --version | tail -2 | head -1); cmake $(cmake --version | head -1); ninja $(ninja --version); $(g++ --version | head -1)"
  rm -rf $B && mkdir -p $B
  ( export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 BUNDLEGRAPH_BUNDLES=$C/bundles BUNDLEGRAPH_CACHE=/tmp/bgcache \
           BUNDLEGRAPH_TOOLS=system BUNDLEGRAPH_ARCHS=120,121 BUNDLEGRAPH_TOOLKIT_SOURCE=host:/usr/local/cuda \
           BUNDLEGRAPH_LAUNCHER=none
    setsid nohup python3 bench/build_blackwell.py --leg linux-x64-cuda13-portable --jobs 16 --rounds ${ROUNDS:-1} --out $B \
      > $B/driver.log 2>&1 < /dev/null & )
fi
end=$(( $(date +%s) + ${WATCH_S:-540} ))
while [ ! -s $B/build_blackwell.json ] && [ $(date +%s) -lt $end ]; do
  sleep 20
  if ! pgrep -f build_blackwell.py > /dev/null; then echo "driver ended"; break; fi
done
echo "--- driver.log"; tail -5 $B/driver.log
for f in $B/*.log; do echo "--- $f: $(tail -1 $f | cut -c1-200)"; done
if [ -s $B/build_blackwell.json ]; then
  cp $B/build_blackwell.json $OUT/; tar -czf $OUT/logs.tgz -C $B --exclude=work --exclude=hand . ; cat $B/build_blackwell.json
fi
