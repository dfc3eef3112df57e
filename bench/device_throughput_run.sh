#!/bin/bash
# Issue 43 item 6 on the GPU machine: `doit smoke:linux-x64-cpu smoke:linux-x64-cuda13-portable`
# (BUNDLEGRAPH_ARCHS=90, the host's CUDA 13.0 toolkit, as bench/device_smoke_run.sh) with the
# smoke's throughput check: smoke:reference-<leg> builds llama-bench with upstream's release flags
# (sm_90 only) beside the two legs and test-backend-ops, then the smoke benches both on the H200.
# Too long for one 10-minute command (the issue-8 smoke took 398 s, the reference adds a second
# ggml-cuda build), so it starts detached and is watched:
#   bash .carry/run-device.sh start   # carry [".carry"]: set up, start doit detached, watch ~9 min
#   bash .carry/run-device.sh watch   # carry nothing: watch until doit ends, results to $OUT
# Prepare .carry/ here with bench/device_throughput_prepare.sh. Results under $OUT: smoke.json
# (the CUDA leg's, with the throughput check's figures), smoke-cpu.json, reference.json, times.json,
# doit.log, logs.tgz, dist.txt.
set -u -o pipefail
. bench/device_carry.sh
C=/tmp/bg-thr-carry      # bundles/ and the llama.cpp tree
P=/tmp/bg-thr-code       # the project's code, copied: the watch call's tree copy cannot touch it
W=/tmp/bg-thr-work       # build/, dist/, .bundlegraph/
LEG=linux-x64-cuda13-portable
if [ "${1:-watch}" = start ]; then
  unpack_carry $C || exit $?
  mkdir -p $C/src/llama.cpp/.github/workflows && cp .carry/release.yml $C/src/llama.cpp/.github/workflows/ || exit 6
  # the host toolkit is CUDA 13.0: the cuda12 specs would be refused as local overrides (line mismatch)
  rm -f $C/bundles/*-cuda12-*.toml
  rm -rf $P $W && mkdir -p $P $W && cp -r bundlegraph dodo.py pyproject.toml $P/ || exit 7
  echo "host: $(nproc) cores; $(nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv,noheader)"
  echo "cuda: $(/usr/local/cuda/bin/nvcc --version | tail -2 | head -1); cmake $(cmake --version | head -1); ninja $(ninja --version); $(g++ --version | head -1)"
  ( cd $P && export PYTHONPATH=/tmp/site:$P PYTHONUNBUFFERED=1 BUNDLEGRAPH_BUNDLES=$C/bundles BUNDLEGRAPH_WORKDIR=$W \
      BUNDLEGRAPH_CACHE=/tmp/bgcache BUNDLEGRAPH_TOOLS=system BUNDLEGRAPH_JOBS=16 BUNDLEGRAPH_ARCHS=90 \
      BUNDLEGRAPH_TOOLKIT_SOURCE=host:/usr/local/cuda BUNDLEGRAPH_LAUNCHER=none
    setsid nohup bash -c "t0=\$(date +%s); timeout 1500 python3 -m doit -f $P/dodo.py -n 4 -P thread \
        smoke:linux-x64-cpu smoke:$LEG > $W/doit.log 2>&1; echo \"\$? \$(( \$(date +%s) - t0 ))\" > $W/doit.rc" \
      > /dev/null 2>&1 < /dev/null & )
fi
end=$(( $(date +%s) + ${WATCH_S:-530} ))
while [ $(date +%s) -lt $end ] && [ ! -s $W/doit.rc ]; do sleep 10; done
grep -E "^\.  |done in|FAILED|throughput|reference|SKIPPED|error" $W/doit.log 2>/dev/null | tail -60
if [ ! -s $W/doit.rc ]; then echo "still running after $(( $(date +%s) - $(stat -c %Y $W/doit.log 2>/dev/null || date +%s) )) s of quiet; call watch again"; exit 0; fi
read rc secs < $W/doit.rc
echo "done: doit exit $rc after $secs s"
cp $W/build/$LEG/smoke.json $OUT/ 2>/dev/null
cp $W/build/linux-x64-cpu/smoke.json $OUT/smoke-cpu.json 2>/dev/null
cp $W/build/$LEG/smoke-tools/reference/reference.json $OUT/ 2>/dev/null
cp $W/doit.log $OUT/
python3 - $OUT $W <<'PY'
import json, sys, pathlib
out, w = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]); t = {}
for leg in ("linux-x64-cpu", "linux-x64-cuda13-portable"):
    for f in ("configure", "build", "package"):
        p = w / "build" / leg / f"{f}.json"
        if p.is_file():
            t[f"{f}:{leg}"] = json.loads(p.read_text()).get("seconds")
r = w / "build/linux-x64-cuda13-portable/smoke-tools/reference/reference.json"
if r.is_file():
    t["smoke:reference (configure + build)"] = json.loads(r.read_text()).get("seconds")
s = w / "build/linux-x64-cuda13-portable/smoke.json"
if s.is_file():
    for c in json.loads(s.read_text()).get("checks", []):
        if c["check"] in ("bench-model", "throughput"):
            print(json.dumps({k: c.get(k) for k in ("check", "status", "seconds", "problem", "tests", "bytes")}))
(out / "times.json").write_text(json.dumps(t, indent=1)); print(json.dumps(t))
PY
tar -czf $OUT/logs.tgz -C $W build/linux-x64-cpu/logs build/$LEG/logs $(cd $W && ls build/*/*.json) 2>/dev/null
ls $W/dist/ > $OUT/dist.txt 2>&1
exit $rc
