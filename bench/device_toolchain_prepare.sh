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
. bench/device_parts.sh
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
stage_lock_blobs "$CACHE" .carry/stage bundlegraph/toolchains/machines/locks/*.toml
stage_sdist "$CACHE" .carry/stage
stage_wheels .carry/stage
pack_parts .carry/stage 58000000
