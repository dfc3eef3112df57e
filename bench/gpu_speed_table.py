"""Issue 52 item 4: the speed table, bundle against reference, measured on one GPU with the
throughput check's own method (:mod:`bundlegraph.pipeline.smoke.throughput`: ``llama-bench`` with
:data:`~bundlegraph.pipeline.smoke.bench.BENCH_ARGS` on both bench models, ``ROUNDS`` runs a
side in ABBA order, every repetition pooled, judged by ``judge_throughput``: slower by more than
max(3 %, 3 standard errors) fails).

Unlike ``smoke:<leg>``, each side gets its own environment, so one table can hold builds against
different CUDA runtimes (a CUDA 13 bundle against a CUDA 12 build of the same commit: unsloth#11349's
A/B) and one bundle run two ways (Vulkan with and without the shader paths a degraded build lacks).

Usage (on the GPU machine)::

    python3 bench/gpu_speed_table.py --models DIR --out table.json \\
        --pair 'NAME|BUNDLE_DIR|REF_DIR|K=V,K=V (bundle env)|K=V,... (reference env)' [--pair ...]

``BUNDLE_DIR``/``REF_DIR`` hold ``llama-bench`` and its libraries; ``DIR`` holds
``bench-dense-1b.gguf`` and ``bench-moe.gguf`` (``python3 -m bundlegraph.pipeline.smoke.tinygguf
--shape ...``). Prints one Markdown row per pair, model and test; writes every figure to ``--out``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bundlegraph.pipeline.smoke import bench as method


def _env(spec: str) -> dict[str, str]:
    return dict(kv.split("=", 1) for kv in spec.split(",") if kv)


def bench_argv(prog: Path, models: Path) -> list[str]:
    """``llama-bench`` with the check's arguments, ``{bench_model:<shape>}`` filled."""
    out = []
    for a in method.BENCH_ARGS:
        for shape in method.SHAPES:
            a = a.replace(f"{{bench_model:{shape}}}", (models / f"bench-{shape}.gguf").as_posix())
        out.append(a)
    return [prog.as_posix(), *out]


def run_pair(
    name: str, bundle: Path, ref: Path, benv: dict[str, str], renv: dict[str, str], models: Path, backend: str
) -> dict:
    runs: dict[str, list] = {"reference": [], "bundle": []}
    seconds: dict[str, float] = {"reference": 0.0, "bundle": 0.0}
    warm = method.WARM_UP
    for i, who in enumerate([*warm, *method.schedule()]):
        d, extra = (bundle, benv) if who == "bundle" else (ref, renv)
        env = dict(os.environ, **extra)
        t0 = time.monotonic()
        p = subprocess.run(bench_argv(d / "llama-bench", models), env=env, capture_output=True, text=True)
        seconds[who] += time.monotonic() - t0
        if p.returncode != 0:
            raise SystemExit(
                f"{name}: {who}'s llama-bench exit {p.returncode}:\n{p.stdout[-2000:]}\n{p.stderr[-3000:]}"
            )
        result = method.parse_bench(p.stdout + "\n" + p.stderr)
        bad = method.backend_problem(f"{name}: the {who}", result, backend)
        if bad:  # a backend that did not load leaves ggml on the CPU: no figure of the GPU's
            raise SystemExit(bad)
        if i < len(warm):  # the driver's one-time work (method.WARM_UP): checked, not pooled
            print(f"  {name}: {who} warm-up run in {time.monotonic() - t0:.1f} s (not counted)", flush=True)
            continue
        runs[who].append(result)
        print(f"  {name}: {who} run {len(runs[who])}/{method.ROUNDS} in {time.monotonic() - t0:.1f} s", flush=True)
    problem, facts = method.judge_throughput(
        method.pool(runs["bundle"]), method.pool(runs["reference"]), reference_name=f"the reference of '{name}'"
    )
    last = {w: runs[w][-1] for w in runs}
    return {
        "pair": name,
        "problem": problem,
        "verdict": "failed" if problem else "passed",
        "tests": facts["tests"],
        "seconds": {k: round(v, 1) for k, v in seconds.items()},
        "backends": {w: sorted({t.get("backends") or "" for t in last[w].values()}) for w in last},
        "gpu_info": sorted({t.get("gpu_info") or "" for w in last for t in last[w].values()}),
        "build_commit": {w: sorted({t.get("build_commit") or "" for t in last[w].values()}) for w in last},
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--pair", action="append", required=True)
    a = ap.parse_args()
    rows = []
    for spec in a.pair:
        name, bundle, ref, benv, renv = (spec.split("|") + ["", ""])[:5]
        print(f"{name}: bundle {bundle}, reference {ref}", flush=True)
        backend = "vulkan" if "VK_DRIVER_FILES" in benv else "cuda"
        rows.append(run_pair(name, Path(bundle), Path(ref), _env(benv), _env(renv), a.models, backend))
        a.out.write_text(json.dumps(rows, indent=1))
    print("\n| pair | test | bundle t/s (sd, n) | reference t/s (sd, n) | ratio | margin | verdict |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        for t, f in sorted(r["tests"].items()):
            b, rf = f["bundle"], f["reference"]
            bad = 1 - f["ratio"] > f["margin"]
            print(
                f"| {r['pair']} | {t} | {b['mean']:.1f} ({b['stddev']:.1f}, {b['n']}) | {rf['mean']:.1f} "
                f"({rf['stddev']:.1f}, {rf['n']}) | {f['ratio']:.3f} | {f['margin'] * 100:.1f} % | {'slower' if bad else 'ok'} |"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
