#!/bin/bash
# Issue 43 item 6 (the GPU smoke's throughput check): prepare .carry/ (ignored) for the GPU machine.
# bench/device_smoke_prepare.sh's carry (wheels, the release pin's llama.cpp tree without .github/,
# bundles/ as a path pin) plus:
#  - .carry/whl: PyYAML (the reference build reads upstream's flags from release.yml with it);
#  - .carry/release.yml: the tree's .github/workflows/release.yml (upstream's release flags),
#    put back into the tree on the device before the source is hashed;
#  - .carry/run-device.sh: bench/device_throughput_run.sh.
# Then device `run` with carry [".carry"]:  bash .carry/run-device.sh start   (then, carrying
# nothing: bash .carry/run-device.sh watch, until it says "done").
set -euo pipefail
cd "$(dirname "$0")/.."
bash bench/device_smoke_prepare.sh > /dev/null
SRC=$(python3 - <<'PY'
import glob, json, pathlib
for r in glob.glob(str(pathlib.Path.home() / ".cache/bundlegraph/sources/*/receipt.json")):
    d = json.loads(open(r).read())
    if d.get("origin") == "llama-cpp-python==0.3.36":
        print(pathlib.Path(r).parent / "tree" / d["subdirectory"]); break
PY
)
cp "$SRC/.github/workflows/release.yml" .carry/release.yml
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d .carry/whl \
  pyyaml==6.0.3
cp bench/device_throughput_run.sh .carry/run-device.sh
du -sh .carry
