"""Benchmark: one leg's compile unsharded against N concurrent shards plus the final compile, on
one many-core machine (issue 28, item 6: the x64 twin with its 7 archs on the 16-core GPU
machine, one build at ``-j4`` against 4 shards at ``-j4`` each).

Usage (``bench/device_shard_run.sh`` runs it there)::

    python bench/shard_concurrent.py --root DIR --leg linux-x64-cuda13-portable --shards 4 --jobs 4 \\
        [--src TREE --bundles DIR] [--max-object-seconds 80]

Every run is a fresh work directory configured first (not timed): ``single``, ``shard-1..N``,
``final``. Then, timed:

1. ``single``: ``doit build:L`` at ``-j<jobs>`` with an empty local compiler cache and no remote
   (what one runner does cold);
2. ``shard-I``: the N shards at once, ``doit build:L shard=I/N``, each at ``-j<jobs>`` with its own
   empty local cache, all writing one ccache remote (WsgiDAV on 127.0.0.1, ``layout=flat``);
3. ``final``: ``doit build:L`` at ``-j<jobs>``, empty local cache, reading the remote.

Reported in ``<root>/results.json``: each run's wall seconds, the shards' objects and predicted
seconds, the final compile's hits and misses (goal: 0 misses), the wall-time ratio
``single / (slowest shard + final)``, the prediction of :mod:`bundlegraph.release.critical_path`'s model
for the same objects (longest first on ``jobs`` slots, from the leg's cost record), and whether
each object of ``final`` is byte-identical to the one ``single`` compiled.

**The slice.** A 7-arch ggml-cuda compile is about 5 CPU hours, more than this bench's device
time, so both sides build the same slice of the leg's real compile steps, written as the spec's
``[build] targets`` once every work directory is configured: the CUDA objects whose recorded cost is at most
``--max-object-seconds`` (default 80 s: 72 of 144 objects, 2283 recorded CPU seconds, whose
longest is 3.4 % of the slice's total, the same share as the longest object of the whole leg
(647 of 19138 s), so the slice has the whole compile's shape). No link runs on either side
(the targets are objects). Linux only.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from cache_rebuild import setup, sha


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def doit(args: list[str], work: Path, env: dict[str, str], log: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "doit", "-f", str(REPO / "dodo.py"), *args],
        env=env | {"BUNDLEGRAPH_WORKDIR": str(work)},
        stdout=open(log, "w"),
        stderr=subprocess.STDOUT,
        cwd=REPO,
    )


def wait_all(procs: dict[str, subprocess.Popen], t0: float, root: Path) -> dict[str, float]:
    took: dict[str, float] = {}
    while len(took) < len(procs):
        for name, p in procs.items():
            if name not in took and p.poll() is not None:
                took[name] = time.monotonic() - t0
                if p.returncode != 0:
                    tail = (root / f"{name}.log").read_text(errors="replace")[-3000:]
                    raise SystemExit(f"{name} failed (exit {p.returncode}) after {took[name]:.0f} s:\n{tail}")
        time.sleep(0.5)
    return took


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", type=Path, required=True)
    ap.add_argument("--leg", default="linux-x64-cuda13-portable")
    ap.add_argument("--shards", type=int, default=4)
    ap.add_argument("--jobs", type=int, default=4)
    ap.add_argument("--max-object-seconds", type=float, default=80.0)
    ap.add_argument("--src", type=Path, default=None)
    ap.add_argument("--bundles", type=Path, default=None)
    a = ap.parse_args()
    root = a.root.resolve()
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    _, bundles = setup(root, a.src.resolve() if a.src else None, a.bundles)
    spec_file = bundles / f"{a.leg}.toml"
    text = spec_file.read_text(encoding="utf-8")
    text, n = re.subn(r"^shards = \d+", f"shards = {a.shards}", text, flags=re.M)
    assert n == 1, f"{spec_file}: no `shards = N` line"
    spec_file.write_text(text, encoding="utf-8")

    from bundlegraph.pipeline.compile import costs
    from bundlegraph.pipeline.compile.ninja_graph import compile_steps
    from bundlegraph.pipeline.compile.shards import makespan
    from bundlegraph.release.critical_path import Assumptions

    record = costs.find(a.leg, bundles)
    assert record is not None, f"{a.leg} has no cost record in {bundles}"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BUNDLEGRAPH_ONLY", "CCACHE_"))}
    env |= {"BUNDLEGRAPH_BUNDLES": str(bundles), "BUNDLEGRAPH_JOBS": str(a.jobs), "PYTHONUNBUFFERED": "1"}
    names = ["single", *(f"shard-{i}" for i in range(1, a.shards + 1)), "final"]
    results: dict = {
        "leg": a.leg,
        "shards": a.shards,
        "jobs": a.jobs,
        "machine": f"{os.cpu_count()} cores",
        "commit": subprocess.run(
            ["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True
        ).stdout.strip(),
        "runs": {},
    }

    def save() -> None:
        (root / "results.json").write_text(json.dumps(results, indent=2), encoding="utf-8")

    t0 = time.monotonic()
    wait_all(
        {
            f"configure-{n}": doit(
                [f"only_leg={a.leg}", f"configure:{a.leg}"], root / n, env, root / f"configure-{n}.log"
            )
            for n in names
        },
        t0,
        root,
    )
    results["configure_seconds"] = round(time.monotonic() - t0, 1)
    cmake_dir = root / "single" / "build" / a.leg / "cmake"
    ninja = shutil.which("ninja") or str(Path(sys.executable).parent / "ninja")
    steps = [s for s in compile_steps(ninja, cmake_dir, ["ggml-cuda"]) if s.lang == "CUDA"]
    chosen = [s for s in steps if record.objects.get(s.key, 1e9) <= a.max_object_seconds]
    targets = [s.output for s in chosen]
    cost = [record.objects[s.key] for s in chosen]
    results["slice"] = {
        "objects": len(chosen),
        "of": len(steps),
        "recorded_cpu_seconds": round(sum(cost), 1),
        "longest_recorded": max(cost),
    }
    print(f"slice: {len(chosen)} of {len(steps)} CUDA objects, {sum(cost):.0f} recorded CPU s", flush=True)
    # the slice becomes the spec's targets (a shard refuses a target filter); configure does not
    # depend on them, so the configured work directories stay up to date
    text, n = re.subn(
        r"^targets = .*$",
        "targets = " + json.dumps(targets),
        spec_file.read_text(encoding="utf-8"),
        count=1,
        flags=re.M,
    )
    assert n == 1, f"{spec_file}: no `targets = [...]` line"
    spec_file.write_text(text, encoding="utf-8")
    save()

    # 1. unsharded, cold, no remote
    t0 = time.monotonic()
    took = wait_all(
        {
            "single": doit(
                [f"only_leg={a.leg}", f"build:{a.leg}"],
                root / "single",
                env | {"CCACHE_DIR": str(root / "single" / ".ccache")},
                root / "single.log",
            )
        },
        t0,
        root,
    )
    results["runs"]["single"] = {"wall_seconds": round(took["single"], 1)}
    print(f"single: {took['single']:.0f} s", flush=True)
    save()

    dav = root / "dav"
    (dav / "ccache").mkdir(parents=True)
    port = free_port()
    wsgidav = shutil.which("wsgidav") or str(Path(sys.executable).parent / "wsgidav")
    server = subprocess.Popen(
        [wsgidav, "-H", "127.0.0.1", "-p", str(port), "-r", str(dav), "--auth", "anonymous", "--no-config", "-q"],
        stdout=open(root / "wsgidav.log", "w"),
        stderr=subprocess.STDOUT,
    )
    try:
        time.sleep(2)
        remote = env | {"BUNDLEGRAPH_CACHE_REMOTE": f"http://127.0.0.1:{port}/ccache|layout=flat"}
        # 2. the shards at once
        t0 = time.monotonic()
        shards = {
            f"shard-{i}": doit(
                [f"only_leg={a.leg}", f"build:{a.leg}", f"shard={i}/{a.shards}"],
                root / f"shard-{i}",
                remote | {"CCACHE_DIR": str(root / f"shard-{i}" / ".ccache")},
                root / f"shard-{i}.log",
            )
            for i in range(1, a.shards + 1)
        }
        took = wait_all(shards, t0, root)
        for name, s in took.items():
            rec = json.loads((root / name / "build" / a.leg / "shard" / "shard.json").read_text(encoding="utf-8"))
            results["runs"][name] = {
                "wall_seconds": round(s, 1),
                "objects": len(rec["objects"]),
                "predicted_cpu_seconds": rec["predicted_seconds"],
                "cache": rec["cache"],
            }
            print(f"{name}: {s:.0f} s, {len(rec['objects'])} objects, cache {rec['cache']}", flush=True)
        save()
        # 3. the final compile from the remote
        t0 = time.monotonic()
        took = wait_all(
            {
                "final": doit(
                    [f"only_leg={a.leg}", f"build:{a.leg}"],
                    root / "final",
                    remote | {"CCACHE_DIR": str(root / "final" / ".ccache")},
                    root / "final.log",
                )
            },
            t0,
            root,
        )
    finally:
        server.terminate()
    stats = json.loads((root / "final" / "build" / a.leg / "compiler-cache.json").read_text(encoding="utf-8"))
    differ = [
        t
        for t in targets
        if sha(root / "single" / "build" / a.leg / "cmake" / t) != sha(root / "final" / "build" / a.leg / "cmake" / t)
    ]
    same = len(targets) - len(differ)
    results["runs"]["final"] = {
        "wall_seconds": round(took["final"], 1),
        "hits": stats.get("hits"),
        "remote_hits": stats.get("remote_hits"),
        "misses": stats.get("misses"),
        "missed_objects": stats.get("missed_objects"),
        "objects_identical_to_single": f"{same}/{len(targets)}",
        "objects_differing": differ,
    }
    slowest = max(r["wall_seconds"] for n, r in results["runs"].items() if n.startswith("shard-"))
    sharded = slowest + results["runs"]["final"]["wall_seconds"]
    results["ratio_single_over_sharded"] = round(results["runs"]["single"]["wall_seconds"] / sharded, 2)
    # the model's prediction for the same slice (no speed factor: a ratio)
    from bundlegraph.pipeline.compile.shards import costed, split

    jobs = Assumptions(jobs=a.jobs).jobs
    single_pred = makespan(cost, jobs)
    slices = split(costed(chosen, record.objects, 7), a.shards)
    shard_pred = max(makespan([c.seconds for c in sl.steps], jobs) for sl in slices)
    results["model"] = {
        "single_seconds": round(single_pred),
        "slowest_shard_seconds": round(shard_pred),
        "ratio_without_final": round(single_pred / shard_pred, 2),
    }
    save()
    print(json.dumps(results, indent=2), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
