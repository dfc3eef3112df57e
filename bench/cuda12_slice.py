"""Benchmark: the real llama.cpp ``ggml-cuda`` built with Debian 13's CUDA 12.4 nvcc (the ``debs``
toolkit, ``bundles/locks/cuda-12.4-debs.toml``) for a ``linux-x64-cuda12-older``-like leg (archs
``75``) and a ``cuda12-legacy``-like leg (``50-virtual;61-virtual``), issue 43 item 6.

Usage::

    nice .venv/bin/python bench/cuda12_slice.py --root /work/bench/cuda12 [--objects fill,arange,...]
        [--legs older,legacy] [--link] [--jobs 2]

Writes ``<root>/bundles`` (the release's real ``bundles/`` plus the two legs, each the real
``linux-x64-cuda13-portable`` spec turned into a CUDA 12.4 ``debs`` leg by ``tests/debskit.py``)
and runs, per leg, ``doit build:<leg> build_targets=<objects>`` in ``<root>/work`` (the real
pipeline: source from the release's sdist pin, toolkit, configure, compile), timed. Each object's
fatbin is read (:mod:`bundlegraph.checks.fatbin`) and checked against the leg's archs: the legacy
objects must hold PTX for 50 and 61 and no SASS. ``--link`` builds the whole ``ggml-cuda`` target
(``libggml-cuda.so``) and checks it the same way. Results: ``<root>/results.json`` (per leg the
wall seconds of each step, each object's inventory and problems). Linux only.

Measured here (2 shared cores, niced, -j2, toolkit and sdist cached, empty ccache): configure +
fill, arange: ~5 s per leg; + scale, clamp, softmax, rope: 10.9 s (75) and 17.9 s (legacy); the
whole legacy ``ggml-cuda`` (``--link``, 147 compiles, 0 ccache hits): 570 s, ``libggml-cuda.so``
80 MB, 144 fatbin containers each with PTX 50 and 61 and no SASS (``fatbin --archs
50-virtual,61-virtual``: ok), NEEDED ``libcudart.so.12``, ``libcublas.so.12``, ``libcuda.so.1``;
the whole ``75`` ``ggml-cuda``: 698 s (138 misses, 9 hits), 206 MB, SASS 75 + PTX 75 in each of
the 144 containers (``75`` promises both), no problem.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))
BIN = Path(sys.executable).parent

from debskit import debs_leg

from bundlegraph.checks.bundle import mapped
from bundlegraph.checks.fatbin import check_archs
from bundlegraph.checks.inspect import inspect_file
from bundlegraph.schemas.archs import parse_arch

LEGS = {
    "older": ("linux-x64-cuda12-older", ["75"]),
    "legacy": ("linux-x64-cuda12-legacy", ["50-virtual", "61-virtual"]),
}
OBJ = "ggml/src/ggml-cuda/CMakeFiles/ggml-cuda.dir/{}.cu.o"


def doit(args: list[str], bundles: Path, work: Path, log: Path, jobs: int) -> tuple[float, int]:
    env = {
        **os.environ,
        "BUNDLEGRAPH_BUNDLES": str(bundles),
        "BUNDLEGRAPH_WORKDIR": str(work),
        "BUNDLEGRAPH_JOBS": str(jobs),
    }
    env = {k: v for k, v in env.items() if not k.startswith("BUNDLEGRAPH_ONLY")}
    t0 = time.monotonic()
    with open(log, "a") as out:
        r = subprocess.run(
            [str(BIN / "doit"), "-f", str(REPO / "dodo.py"), *args],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=REPO,
        )
    return time.monotonic() - t0, r.returncode


def inventory(path: Path, archs: list[str]) -> dict:
    with mapped(path) as data:
        inv = inspect_file(path.name, data).fatbin
    return {
        "file": path.name,
        "bytes": path.stat().st_size,
        "fatbin": inv.to_json() if inv else None,
        "problems": check_archs(inv, [parse_arch(a) for a in archs]),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", type=Path, required=True)
    ap.add_argument("--objects", default="fill,arange,scale,clamp")
    ap.add_argument("--legs", default="older,legacy")
    ap.add_argument("--link", action="store_true", help="also build and check the whole ggml-cuda target")
    ap.add_argument("--jobs", type=int, default=2)
    a = ap.parse_args()
    root = a.root.resolve()
    bundles, work = root / "bundles", root / "work"
    if not bundles.exists():
        shutil.copytree(REPO / "bundles", bundles)
    work.mkdir(parents=True, exist_ok=True)
    results_file = root / "results.json"
    results = json.loads(results_file.read_text()) if results_file.exists() else {}
    objs = [OBJ.format(n) for n in a.objects.split(",") if n]
    for key in a.legs.split(","):
        leg, archs = LEGS[key]
        debs_leg(bundles, leg, archs, klass=key)
        log = root / f"{leg}.log"
        res: dict = {"archs": archs, "objects": objs}
        took, rc = doit([f"build:{leg}", "build_targets=" + ",".join(objs)], bundles, work, log, a.jobs)
        res["objects_s"] = round(took, 1)
        res["objects_rc"] = rc
        cmake = work / "build" / leg / "cmake"
        res["inventory"] = [inventory(cmake / o, archs) for o in objs if (cmake / o).is_file()]
        if a.link and rc == 0:
            took, rc = doit([f"build:{leg}", "build_targets=ggml-cuda"], bundles, work, log, a.jobs)
            res["link_s"], res["link_rc"] = round(took, 1), rc
            so = sorted((cmake / "bin").glob("libggml-cuda.so*")) or sorted(cmake.rglob("libggml-cuda.so*"))
            res["library"] = [inventory(p, archs) for p in so if p.is_file() and not p.is_symlink()]
        results[leg] = res
        results_file.write_text(json.dumps(results, indent=1))
        print(json.dumps({leg: {k: v for k, v in res.items() if k != "objects"}}, indent=1))
    return (
        0
        if all(r.get("objects_rc") == 0 and not any(i["problems"] for i in r["inventory"]) for r in results.values())
        else 1
    )


if __name__ == "__main__":
    raise SystemExit(main())
