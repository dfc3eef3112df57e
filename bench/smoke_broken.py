"""Smoke-test deliberately broken copies of the main job's real aarch64 bundles (issue 18), under
qemu-user like the main job's own smoke, and print what each refusal says.

Usage (after ``./dev.sh main`` in CHECKOUT):

    .venv/bin/python bench/smoke_broken.py CHECKOUT [--out DIR]

For each case a copy of the real archive is written with exactly one thing wrong
(:mod:`smokekit`), and :func:`bundlegraph.pipeline.smoke.run_smoke` runs on it with the leg's own
plan (toolkit runtime, source tree, checks). Every case must fail, naming the file; the script
exits 1 otherwise. Cases:

- ``backend removed``: ``libggml-cpu.so`` left out of the CPU bundle;
- ``wrong-arch binary``: an x86-64 shared object (this host's ``libgomp.so.1``) as ``libggml-cpu.so``;
- ``bundle runtime missing``: ``libggml-base.so.0`` (what every program needs) left out;
- ``CUDA runtime missing``: the merged CUDA bundle smoked without its toolkit's runtime on the
  library path (``libcudart.so.13``/``libcublas.so.13`` not found).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import smokekit

CPU, CUDA = "linux-arm64-cpu", "linux-arm64-cuda13-blackwell"
X86_64_SO = Path("/lib/x86_64-linux-gnu/libgomp.so.1")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("checkout", type=Path, help="the checkout where ./dev.sh main ran (its build/ and dist/)")
    ap.add_argument("--out", type=Path, default=Path("/tmp/smoke-broken"))
    a = ap.parse_args()
    os.environ["BUNDLEGRAPH_WORKDIR"] = str(a.checkout.resolve())
    from bundlegraph.graph.context import Filters, load_graph
    from bundlegraph.pipeline import smoke

    shutil.rmtree(a.out, ignore_errors=True)
    cases = [
        ("backend removed", CPU, {"remove": ("libggml-cpu.so",)}, {}),
        ("wrong-arch binary", CPU, {"replace": {"libggml-cpu.so": X86_64_SO.read_bytes()}}, {}),
        ("bundle runtime missing", CPU, {"remove": ("libggml-base.so.0",)}, {}),
        ("CUDA runtime missing", CUDA, {}, {"runtime_dir": None}),
    ]
    bad = 0
    results = []
    for name, leg, mutation, plan_changes in cases:
        plan = smoke.plan_smoke(load_graph(a.checkout / "bundles", Filters(only_leg=leg)).ctx, leg)
        tmp = a.out / name.replace(" ", "-")
        copy = tmp / "dist" / plan.bundle.name
        if mutation:
            smokekit.mutate(plan.bundle, copy, **mutation)
        else:
            copy.parent.mkdir(parents=True)
            shutil.copyfile(plan.bundle, copy)
        plan = dataclasses.replace(
            plan, bundle=copy, record=tmp / "smoke.json", log=tmp / "smoke.log", work_dir=tmp, **plan_changes
        )
        t0 = time.monotonic()
        try:
            smoke.run_smoke(plan)
            msg, ok = "PASSED (it must not)", False
        except Exception as e:  # the refusal is the result
            msg, ok = str(e), True
        secs = time.monotonic() - t0
        bad += not ok
        failed = [c for c in json.loads((tmp / "smoke.json").read_text())["checks"] if c["status"] == "failed"]
        results.append(
            {
                "case": name,
                "leg": leg,
                "seconds": round(secs, 1),
                "refused": ok,
                "failed_checks": {c["check"]: c.get("problem") for c in failed},
            }
        )
        print(f"== {name} ({leg}, {secs:.1f} s): {msg}\n")
    (a.out / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
