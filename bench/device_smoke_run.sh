#!/bin/bash
# Issues 8 and 18 device run: build linux-x64-cpu + linux-x64-cuda13-portable (archs=90, host toolkit),
# merge, package, smoke both on the GPU machine (host checks natively, GPU checks for the CUDA leg). Prepare .carry/ here with bench/device_smoke_prepare.sh, then
# run on the device (repo root): bash .carry/run-device.sh OUTDIR  (a copy of this file). Numbers: BENCHMARKS.md.
set -u -o pipefail
OUT=${1:?OUT}
C=$PWD/.carry
t0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site $C/whl/*.whl || exit 3
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
mkdir -p $C/src && tar -C $C/src -xJf $C/llama.cpp.tar.xz || exit 4
. bench/device_carry.sh
echo "host: $(nproc) cores; $(nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv,noheader)"
echo "cuda: $(ls /usr/local/cuda/version.json 2>&1); $(/usr/local/cuda/bin/nvcc --version | tail -2 | head -1); cmake $(cmake --version | head -1); ninja $(ninja --version); $(g++ --version | head -1)"
export BUNDLEGRAPH_BUNDLES=$C/bundles BUNDLEGRAPH_WORKDIR=$PWD BUNDLEGRAPH_CACHE=/tmp/bgcache BUNDLEGRAPH_TOOLS=system \
       BUNDLEGRAPH_JOBS=16 BUNDLEGRAPH_ARCHS=90 BUNDLEGRAPH_TOOLKIT_SOURCE=host:/usr/local/cuda BUNDLEGRAPH_LAUNCHER=none
timeout 565 python3 -m doit -n 3 -P thread smoke:linux-x64-cpu smoke:linux-x64-cuda13-portable 2>&1
rc=$?
echo "doit exit $rc after $(( $(date +%s) - t0 )) s"
cp build/linux-x64-cuda13-portable/smoke.json $OUT/ 2>/dev/null
cp build/linux-x64-cpu/smoke.json $OUT/smoke-cpu.json 2>/dev/null
python3 - $OUT <<'PY'
import json, sys, pathlib
out = pathlib.Path(sys.argv[1]); t = {}
for leg in ("linux-x64-cpu", "linux-x64-cuda13-portable"):
    for f in ("configure", "build", "package"):
        p = pathlib.Path("build")/leg/f"{f}.json"
        if p.is_file():
            d = json.loads(p.read_text()); t[f"{f}:{leg}"] = d.get("seconds")
(out/"times.json").write_text(json.dumps(t, indent=1)); print(json.dumps(t))
PY
tar -czf $OUT/logs.tgz build/*/logs build/*/*.json 2>/dev/null
ls dist/ > $OUT/dist.txt 2>&1
exit $rc
