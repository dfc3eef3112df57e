"""Benchmark: a real CUDA leg compiled as N shards in N fresh work directories against one ccache
remote storage (WsgiDAV on 127.0.0.1, ``layout=flat``), then its final compile in another fresh
work directory, and the bundle compared with an unsharded build's (issue 28, item 6).

Usage::

    .venv/bin/python bench/shard_real.py --root /work/bench/shard [--base-dist DIST --reference DIST]
        [--reference-so SHA256] [--bundles DIR] [--leg linux-arm64-cuda13-blackwell] [--jobs 2]

Each shard runs ``doit only_leg=L build:L shard=I/N`` (the release's real ``bundles/``, whose
spec says ``shards = N``) in ``<root>/shard-I`` with an empty local ccache directory, one after
another (this machine has 2 cores; on CI they run side by side). The final compile runs ``doit
only_leg=L artifacts=<base-dist> package:L`` in ``<root>/final`` (the merge base bundle taken from
``--base-dist``, as the workflow's backend job takes it from the base job's artifact), again with an
empty local cache: every object must come from the remote. Without ``--base-dist`` the final job is
``doit only_leg=L build:L`` and its ``libggml-cuda.so`` is compared with ``--reference-so`` (an
unsharded build's of the same tree, e.g. BENCHMARKS.md's issue-19 cold build: then ``--bundles`` is
a copy of ``bundles/`` with the same ``path`` pin, made by bench/cache_rebuild.py's ``setup``). Each work directory splits by the
same committed cost record (``bundles/costs/L.json``), as every job of a release run splits by
the one set the plan job hands out.

Recorded in ``<root>/results.json``: each shard's wall seconds, objects, predicted CPU seconds
and ccache misses; the final compile's wall seconds, hits, misses (goal: 0) and the objects it
missed; the bundle's sha256 and whether it equals the one in ``--reference`` (an unsharded cold
build of the same tree and code). Linux only.
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
sys.path.insert(0, str(Path(__file__).resolve().parent))
BIN = Path(sys.executable).parent
sys.path.insert(0, str(REPO / "tests"))

from cache_rebuild import sha


def doit(args: list[str], work: Path, env: dict[str, str], log: Path) -> float:
    t0 = time.monotonic()
    with open(log, "w") as out:
        r = subprocess.run(
            [str(BIN / "doit"), "-f", str(REPO / "dodo.py"), *args],
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**env, "BUNDLEGRAPH_WORKDIR": str(work)},
            cwd=REPO,
        )
    took = time.monotonic() - t0
    if r.returncode != 0:
        raise SystemExit(f"doit {' '.join(args)} failed (exit {r.returncode}) after {took:.0f} s; log {log}")
    return took


def main() -> int:
    from davkit import webdav

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", required=True)
    ap.add_argument("--leg", default="linux-arm64-cuda13-blackwell")
    ap.add_argument(
        "--base-dist",
        help="a dist/ holding the leg's merge base bundle (then the final job packages "
        "the leg; without it, it builds the leg and libggml-cuda.so is compared)",
    )
    ap.add_argument("--reference-so", help="sha256 of an unsharded build's libggml-cuda.so of the same tree")
    ap.add_argument("--reference", help="a dist/ holding the unsharded build's bundle, to compare bytes")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument(
        "--bundles",
        type=Path,
        default=REPO / "bundles",
        help="the bundles directory (default: the release's; bench/cache_rebuild.py's setup makes a "
        "copy with a path pin)",
    )
    args = ap.parse_args()
    root = Path(args.root).resolve()
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    from bundlegraph.specs.loader import load_matrix

    spec = load_matrix(args.bundles).legs[args.leg]
    n = spec.build.shards
    assert n > 1, f"{args.leg} is not sharded in bundles/"
    results: dict = {
        "leg": args.leg,
        "shards": n,
        "jobs": args.jobs,
        "commit": subprocess.run(
            ["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True
        ).stdout.strip(),
        "runs": {},
    }
    base_env = {
        k: v for k, v in os.environ.items() if not k.startswith(("BUNDLEGRAPH_ONLY", "BUNDLEGRAPH_COSTS", "CCACHE_"))
    }
    base_env |= {
        "BUNDLEGRAPH_JOBS": str(args.jobs),
        "PYTHONUNBUFFERED": "1",
        "BUNDLEGRAPH_BUNDLES": str(Path(args.bundles).resolve()),
    }

    def save() -> None:
        (root / "results.json").write_text(json.dumps(results, indent=2))

    with webdav(root / "dav", "ccache") as url:
        env = base_env | {"BUNDLEGRAPH_CACHE_REMOTE": f"{url}/ccache|layout=flat"}
        for i in range(1, n + 1):
            work = root / f"shard-{i}"
            work.mkdir()
            e = env | {"CCACHE_DIR": str(work / ".ccache")}
            took = doit(
                [f"only_leg={args.leg}", f"build:{args.leg}", f"shard={i}/{n}"], work, e, root / f"shard-{i}.log"
            )
            rec = json.loads((work / "build" / args.leg / "shard" / "shard.json").read_text())
            results["runs"][f"shard-{i}"] = {
                "wall_seconds": round(took, 1),
                "objects": len(rec["objects"]),
                "predicted_cpu_seconds": rec["predicted_seconds"],
                "build_seconds": rec["seconds"],
                "cache": rec["cache"],
                "split_digest": rec["split_digest"],
            }
            print(f"shard {i}/{n}: {took:.0f} s wall, {len(rec['objects'])} objects, cache {rec['cache']}", flush=True)
            save()
        # the shards' figures, as the workflow's final job folds them in (their entries are in the remote)
        merged = subprocess.run(
            [str(BIN / "bundlegraph"), "shard-merge", str(root), "--cache-dir", str(root / "unused")],
            capture_output=True,
            text=True,
            env=base_env | {"BUNDLEGRAPH_COSTS": str(root / "costs"), "BUNDLEGRAPH_WORKDIR": str(root)},
            cwd=REPO,
        )
        print(merged.stdout + merged.stderr, flush=True)
        results["shard_merge"] = {"exit": merged.returncode, "output": merged.stdout.strip()}
        work = root / "final"
        work.mkdir()
        e = env | {"CCACHE_DIR": str(work / ".ccache")}
        task = [f"artifacts={args.base_dist}", f"package:{args.leg}"] if args.base_dist else [f"build:{args.leg}"]
        took = doit([f"only_leg={args.leg}", *task], work, e, root / "final.log")
        stats = json.loads((work / "build" / args.leg / "compiler-cache.json").read_text())
        so = sha(work / "build" / args.leg / "cmake" / "bin" / "libggml-cuda.so")
        final = {
            "wall_seconds": round(took, 1),
            "build_seconds": stats["seconds"],
            "hits": stats["hits"],
            "remote_hits": stats["remote_hits"],
            "misses": stats["misses"],
            "missed_objects": stats.get("missed_objects"),
            "libggml-cuda.so": so,
        }
        if args.reference_so:
            final["libggml-cuda.so_identical_to_reference"] = so == args.reference_so
        bundle = next((work / "dist").glob(f"*-{spec.profile.name}.*"), None) if args.base_dist else None
        if bundle is not None:
            final |= {"bundle": bundle.name, "sha256": sha(bundle)}
        if bundle is not None and args.reference:
            ref = Path(args.reference) / bundle.name
            final["reference_sha256"] = sha(ref) if ref.is_file() else None
            final["byte_identical"] = final["reference_sha256"] == final["sha256"]
        results["runs"]["final"] = final
        save()
        print(
            f"final: {took:.0f} s wall, build {stats['seconds']} s, {stats['hits']} hits, {stats['misses']} misses; "
            f"libggml-cuda.so {so}"
            + (f", identical to the reference: {so == args.reference_so}" if args.reference_so else "")
            + (f"; {bundle.name} {final['sha256']}" if bundle is not None else "")
            + (f"; byte-identical to the reference: {final.get('byte_identical')}" if args.reference else ""),
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
