#!/bin/bash
# Issues 8 and 18: prepare .carry/ (ignored) for the GPU machine, which has no package registry:
#  - .carry/whl: the cp312 manylinux x86_64 wheels bundlegraph needs there (others are installed;
#    httpx and its own for the smoke's llama-server check);
#  - .carry/llama.cpp.tar.xz: the release pin's llama.cpp tree (run `doit source:linux-x64-cpu` first)
#    without models/ (but the llama-spm vocabulary), docs/, media/, .github/, .git/;
#  - .carry/bundles: bundles/ with release.toml's [source] as a `path` pin to ../src/llama.cpp;
#  - .carry/run-device.sh: bench/device_smoke_run.sh.
# Then: device `run` with carry [".carry"] and
#   set -o pipefail; bash .carry/run-device.sh $OUT 2>&1 | tee $OUT/log
set -euo pipefail
cd "$(dirname "$0")/.."
SRC=$(python3 - <<'PY'
import glob, json, pathlib
for r in glob.glob(str(pathlib.Path.home() / ".cache/bundlegraph/sources/*/receipt.json")):
    d = json.loads(open(r).read())
    if d.get("origin") == "llama-cpp-python==0.3.36":
        print(pathlib.Path(r).parent / "tree" / d["subdirectory"]); break
PY
)
[ -d "$SRC" ] || { echo "no cached source tree; run: doit source:linux-x64-cpu"; exit 2; }
grep -qx '/.carry/' .gitignore .git/info/exclude 2>/dev/null || echo '/.carry/' >> .git/info/exclude
rm -rf .carry && mkdir -p .carry/whl
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d .carry/whl \
  doit==0.37.0 pydantic==2.14.4 pydantic_core==2.50.5 annotated_types==0.8.0 typing_inspection==0.4.5 \
  typing_extensions==4.16.0 pefile==2024.8.26 pyelftools==0.33 platformdirs==4.14.9 filelock==4.3.1 \
  httpx==0.28.1 httpcore==1.0.9 h11==0.16.0 anyio==4.16.0 idna==3.20 certifi==2026.10.19.post1
P=$(dirname "$SRC")
{ tar -C "$P" --exclude='llama.cpp/.git' --exclude='llama.cpp/docs' --exclude='llama.cpp/media' \
      --exclude='llama.cpp/.github' --exclude='llama.cpp/models/*' -cf - llama.cpp
} > .carry/src.tar
tar -C "$P" -rf .carry/src.tar llama.cpp/models/ggml-vocab-llama-spm.gguf
xz -T2 -6 -c .carry/src.tar > .carry/llama.cpp.tar.xz && rm .carry/src.tar
cp -r bundles .carry/bundles
python3 - <<'PY'
from pathlib import Path
p = Path(".carry/bundles/release.toml"); s = p.read_text()
s = s[:s.index("[source]")] + '''[source]
# Device-run copy (issue 8): the pip-sdist pin's vendor/llama.cpp, pruned and carried, as a path pin.
kind = "path"
path = "../src/llama.cpp"
commit = "0c1e57098bba43ac29e6e3b677cdceebdd22334f"
commit_date = 2026-10-01T02:11:48Z
'''
p.write_text(s)
PY
cp bench/device_smoke_run.sh .carry/run-device.sh
du -sh .carry
