"""Build the throughput check's reference (upstream's release flags, the leg's own toolchain and
toolkit: :mod:`bundlegraph.pipeline.smoke.reference`) on a host without the GPU it is for, to
carry to the GPU machine (issue 52 item 4: its CUDA 12 references are built here, where the CUDA
12.4 toolkit is, and run there).

Usage (the graph's settings from the environment, as for ``doit``; the leg's configure must be
up to date, i.e. ``doit configure:<leg>`` ran with the same settings)::

    BUNDLEGRAPH_WORKDIR=W BUNDLEGRAPH_ONLY_LEG=L [BUNDLEGRAPH_ARCHS=90 BUNDLEGRAPH_TOOLKIT_SOURCE=host:T] \\
        .venv/bin/python bench/reference_build.py L --sm 90 --out DIR [--jobs 2]

Writes ``DIR/reference/cmake/bin`` (``llama-bench`` with its libraries and backends) and
``DIR/reference/reference.json`` (flags, where they came from, what was served offline, seconds):
the same function, arguments and outputs as ``smoke:reference-<leg>`` on a GPU host, with the
SM named instead of read from ``nvidia-smi``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bundlegraph.graph.context import Filters, load_context
from bundlegraph.pipeline.configure import check_host, plan_configure
from bundlegraph.pipeline.smoke import reference
from bundlegraph.pipeline.smoke.sides import side_of
from bundlegraph.pipeline.source import source_record_if_any
from bundlegraph.toolchains.tools import build_tools


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("leg")
    ap.add_argument("--sm", type=int, action="append", required=True, help="the GPU's SM (90); repeatable")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    a = ap.parse_args()
    ctx = load_context(os.environ.get("BUNDLEGRAPH_BUNDLES", REPO / "bundles"), Filters.from_env())
    spec = ctx.spec(a.leg)
    side = side_of(spec.backend)
    if side is None or spec.os not in side.REFERENCE_JOBS:
        print(f"{a.leg}: no upstream release job to take a reference from", file=sys.stderr)
        return 2
    rec = source_record_if_any(a.leg)
    if rec is None:
        print(f"{a.leg}: run doit source:{a.leg} configure:{a.leg} first (no source record)", file=sys.stderr)
        return 2
    tc = check_host(ctx, a.leg)
    tools = build_tools()
    resolved = tc.resolve(ctx.leg(a.leg).sdk)
    conf = plan_configure(ctx, a.leg, tools, resolved.binaries)
    a.out.mkdir(parents=True, exist_ok=True)
    record = reference.build_reference(
        leg=a.leg,
        cmake=str(tools.cmake.path),
        ninja=str(tools.ninja.path),
        source_tree=Path(rec.tree),
        tools_dir=a.out,
        toolchain_text=conf.toolchain_text,
        job=side.REFERENCE_JOBS[spec.os],
        arch=spec.arch,
        toolkit_major=spec.cuda.version.parts[0] if spec.cuda else 0,
        sms=a.sm,
        jobs=a.jobs,
        env=resolved.env,
        log=a.out / "reference.log",
        pins=tuple(ctx.release.fetchcontent),
        cache=ctx.cache,
        backend=spec.backend,
    )
    print(
        json.dumps(
            {k: record[k] for k in ("flags_from", "cuda_architectures", "seconds")} | {"fetched": record.get("fetched")}
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
