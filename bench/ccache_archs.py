"""Benchmark (measured): do CUDA legs of different arch lists share objects through the compiler
cache? One real TU compiled through ccache by a real nvcc once per class's arch list, in the
order a release's legs would reach one shared cache, then each list again.

Usage::

    .venv/bin/python bench/ccache_archs.py --nvcc DIR/bin/nvcc [--ccache PATH] [--tu FILE.cu] [--json OUT]

Defaults: the stand-in's ``tests/data/minillama/src/ggml-cuda/scale.cu`` (its ``common.cuh``
beside it), ``ccache`` on PATH or beside this Python, an empty ``CCACHE_DIR`` in a temp folder
(``CCACHE_NOHASHDIR``, ``CCACHE_BASEDIR`` set as the build sets them). Each compile is
``ccache nvcc -c TU -o OBJ -O2 <--generate-code per arch, as CMake writes them>`` with the
compute/sm pairs of :func:`bundlegraph.schemas.archs.gencode` (plain ``12X`` as ggml's ``12Xa``).
Printed per compile: the class, the arch list, hit or miss (ccache's own counters), seconds, and
the object's sha256; then whether any two lists shared an entry.

The lists are the CUDA 13 classes of ``bundles/`` (``older``, ``newer``, ``portable``; the
cuda12 legs use another nvcc and so another cache key anyway), and one list twice in another
order (``newer`` reversed), which CMake never writes but shows whether the key is the arch set
or the command line.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bundlegraph.schemas.archs import gencode, parse_arch

CLASSES = {
    "portable": ["75", "80", "86", "89", "90", "100", "120a"],
    "newer": ["86", "89", "90", "100", "120a"],
    "older": ["75", "80", "86", "89"],
}


def stats(ccache: str, env: dict[str, str]) -> dict[str, int]:
    """ccache's counters (``--print-stats``: ``name<TAB>value`` lines)."""
    out = subprocess.run([ccache, "--print-stats"], env=env, capture_output=True, text=True, check=True).stdout
    return {k: int(v) for k, v in (line.split("\t") for line in out.splitlines() if "\t" in line) if v.isdigit()}


def compile_once(ccache: str, nvcc: str, tu: Path, obj: Path, archs: list[str], env: dict[str, str]) -> dict:
    before = stats(ccache, env)
    argv = [ccache, nvcc, "-c", str(tu), "-o", str(obj), "-O2", *(gencode(parse_arch(a)) for a in archs)]
    t = time.perf_counter()
    subprocess.run(argv, env=env, cwd=tu.parent, check=True, capture_output=True)
    secs = time.perf_counter() - t
    after = stats(ccache, env)
    hit = sum(after.get(k, 0) - before.get(k, 0) for k in ("direct_cache_hit", "preprocessed_cache_hit"))
    miss = after.get("cache_miss", 0) - before.get("cache_miss", 0)
    return {
        "archs": archs,
        "result": "hit" if hit and not miss else "miss" if miss and not hit else f"hit {hit} miss {miss}",
        "seconds": round(secs, 2),
        "sha256": hashlib.sha256(obj.read_bytes()).hexdigest()[:16],
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nvcc", required=True, help="nvcc of a CUDA 13 toolkit (e.g. bundlegraph's cached one)")
    ap.add_argument("--ccache", default=shutil.which("ccache") or str(Path(sys.executable).with_name("ccache")))
    ap.add_argument("--tu", default=str(ROOT / "tests/data/minillama/src/ggml-cuda/scale.cu"))
    ap.add_argument("--json", help="also write the figures here")
    args = ap.parse_args()
    tu = Path(args.tu).resolve()
    with tempfile.TemporaryDirectory(prefix="ccache-archs-") as tmp:
        env = {
            **os.environ,
            "CCACHE_DIR": str(Path(tmp) / "cache"),
            "CCACHE_BASEDIR": str(tu.parent),
            "CCACHE_NOHASHDIR": "1",
            "PATH": f"{Path(args.nvcc).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        }
        runs = []
        order = [
            ("portable", CLASSES["portable"]),
            ("newer", CLASSES["newer"]),
            ("older", CLASSES["older"]),
            ("newer reversed", list(reversed(CLASSES["newer"]))),
            ("portable again", CLASSES["portable"]),
            ("newer again", CLASSES["newer"]),
            ("older again", CLASSES["older"]),
        ]
        for i, (name, archs) in enumerate(order):
            r = compile_once(args.ccache, args.nvcc, tu, Path(tmp) / f"o{i}.o", archs, env)
            r["class"] = name
            runs.append(r)
            print(f"{name:<16} {' '.join(archs):<30} {r['result']:<6} {r['seconds']:6.2f} s  {r['sha256']}")
        first = {r["class"]: r["result"] for r in runs[:4]}
        shared = [c for c, res in first.items() if c != "portable" and res == "hit"]
        print(
            "shared entries between different arch lists: "
            + (", ".join(shared) if shared else "none (each list is its own cache key)")
        )
        if args.json:
            Path(args.json).write_text(json.dumps({"tu": str(tu), "runs": runs, "shared": shared}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
