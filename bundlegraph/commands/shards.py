"""The commands around sharded compiles and cost records.

- ``bundlegraph shard-merge DIR [--cache-dir D]``: before a sharded leg's final compile, fold the
  shard folders under DIR (the ``shard-<leg>-<I>`` artifacts the shard jobs uploaded:
  ``shard.json`` and the ``ccache/`` entries each added) into this runner: the entries into the
  local ccache directory (``--cache-dir``, else ``CCACHE_DIR``, else ccache's own), the measured
  seconds into each leg's cost record, and the objects the shards compiled into
  ``build/<leg>/shards-merged.json``: the final compile fails when it does not take one of them
  from the cache (:mod:`bundlegraph.pipeline.compile.shard_guard`). ``--leg L`` (the release
  workflow passes its row's leg): every shard of L's ``[build] shards = N`` must be there, also
  when none arrived. Exit 0; 1 when a shard did not arrive (one line naming the leg, the shard and
  its artifact; the record it leaves makes the final compile fail too, before compiling: it would
  otherwise compile that shard's objects itself, maybe past its job's limit); 2 for bad input.
  Shards that split differently (their cost records differed) are a warning.
- ``bundlegraph costs [LEG ...] --out DIR``: write each selected leg's cost record as this run
  would use it (:func:`bundlegraph.pipeline.compile.costs.find`; an empty record where there is none, so
  the stated estimates apply) into DIR: the release workflow's plan job hands that directory to
  every job (``BUNDLEGRAPH_COSTS``), so all shards of a leg split alike.
- ``bundlegraph costs LEG --build-dir DIR [--note TEXT]``: a record from a configured build
  directory's ``.ninja_log`` (every compile step of the leg's targets and every other step),
  for maintainers seeding ``bundles/costs/<leg>.json`` from a real cold build.
- ``bundlegraph costs LEG --derive-from OTHER``: LEG's record made from OTHER's (found as
  :func:`~bundlegraph.pipeline.compile.costs.find` finds it), each CUDA object's seconds scaled by LEG's
  arch count over OTHER's; the note says so. A seed for a leg no runner here can build (the
  Windows legs), replaced by what its first real build measures.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ..core.errors import BundleGraphError
from . import add_filter_args, filters_from


def run_merge(args: argparse.Namespace) -> int:
    from ..pipeline.shard_build import ccache_dir_for_merge, merge_shards

    root = Path(args.dir)
    expect = _expected_shards(args)
    # with --leg, no folder at all is no shard arrived (actions/download-artifact made none): named below
    if not root.is_dir() and (root.exists() or not expect):
        print(
            f"bundlegraph shard-merge: {root}: not a directory (the downloaded shard-<leg>-<I> artifacts)",
            file=sys.stderr,
        )
        return 2
    cache = Path(args.cache_dir).resolve() if args.cache_dir else ccache_dir_for_merge()
    if cache is not None:
        cache.mkdir(parents=True, exist_ok=True)
    res = merge_shards(root, cache, Path(args.bundles), expect)
    for leg, d in res.legs.items():
        print(
            f"shard-merge: {leg}: {d['shards']} of {d['of']} shards, {d['measured']} measured step(s) into its "
            f"cost record"
        )
    print(f"shard-merge: {res.entries} cache entries into {cache if cache else '(no ccache: none merged)'}")
    for p in res.problems:
        print(f"bundlegraph shard-merge: {p}", file=sys.stderr)
    return 1 if res.problems else 0


def _expected_shards(args: argparse.Namespace) -> dict[str, int]:
    """``--leg L`` -> ``{L: its spec's [build] shards}``: the shards that must have arrived.
    Raises :class:`BundleGraphError` for a leg that is not in the specs or not sharded."""
    if not args.leg:
        return {}
    from ..specs.loader import load_matrix

    m = load_matrix(args.bundles)
    out = {}
    for leg in args.leg:
        if leg not in m.legs:
            raise BundleGraphError(f"shard-merge --leg {leg}: no such leg in {m.root}; legs: {', '.join(m.legs)}")
        n = m.legs[leg].build.shards
        if n < 2:
            raise BundleGraphError(f"shard-merge --leg {leg}: {m.files.get(leg, leg)} has [build] shards = {n}")
        out[leg] = n
    return out


def run_costs(args: argparse.Namespace) -> int:
    from ..pipeline.base import select
    from ..pipeline.compile import costs
    from ..specs.loader import load_matrix

    m = load_matrix(args.bundles)
    legs = args.legs or select(m, filters_from(args))
    unknown = [leg for leg in legs if leg not in m.legs]
    if unknown:
        print(f"bundlegraph costs: no such leg {unknown[0]!r}; legs: {', '.join(m.legs)}", file=sys.stderr)
        return 2
    if args.build_dir:
        if len(legs) != 1:
            print("bundlegraph costs: --build-dir reads one leg's build: name exactly one LEG", file=sys.stderr)
            return 2
        record = _from_build_dir(legs[0], Path(args.build_dir), m.legs[legs[0]].build.targets, args.note or "")
        out = costs.save(record, Path(args.out) if args.out else None)
        print(f"costs: {legs[0]}: {len(record.objects)} compile steps, {len(record.other)} other steps -> {out}")
        return 0
    if args.derive_from:
        if len(legs) != 1 or args.derive_from not in m.legs:
            print("bundlegraph costs: --derive-from OTHER makes one LEG's record from another leg's", file=sys.stderr)
            return 2
        src = costs.find(args.derive_from, m.root)
        if src is None or not src.objects:
            print(f"bundlegraph costs: {args.derive_from} has no cost record to derive from", file=sys.stderr)
            return 2
        mine, theirs = m.legs[legs[0]], m.legs[args.derive_from]
        from ..pipeline.configure import side_of

        n_mine, n_theirs = (side_of(s.backend).device_targets(s) for s in (mine, theirs))
        f = n_mine / n_theirs if n_mine and n_theirs else 1.0
        record = costs.CostRecord(
            legs[0],
            {k: v * f if k.endswith(".cu") else v for k, v in src.objects.items()},
            dict(src.other),
            args.note
            or f"derived from {args.derive_from}'s record, CUDA objects "
            f"x{f:g} (archs); a stated estimate until a build of this leg measures it",
        )
        out = costs.save(record, Path(args.out) if args.out else None)
        print(f"costs: {legs[0]}: {len(record.objects)} steps derived from {args.derive_from} (x{f:g}) -> {out}")
        return 0
    if not args.out:
        for leg in legs:
            r = costs.find(leg, m.root)
            print(
                json.dumps(
                    {
                        "leg": leg,
                        "from": r.origin.as_posix() if r and r.origin else None,
                        "objects": len(r.objects) if r else 0,
                        "seconds": round(sum(r.objects.values()), 1) if r else 0,
                    }
                )
            )
        return 0
    for leg in legs:
        r = costs.find(leg, m.root) or costs.CostRecord(leg, note="no record: the stated estimates apply")
        out = costs.save(r, Path(args.out))
        print(f"costs: {leg}: {len(r.objects)} measured step(s) ({r.origin or 'none'}) -> {out}")
    return 0


def _from_build_dir(leg: str, build_dir: Path, targets: list[str], note: str) -> Any:
    from ..pipeline.compile import costs
    from ..pipeline.compile.ninja_graph import compile_steps, object_key, read_ninja_log
    from ..toolchains.tools import build_tools

    steps = compile_steps(str(build_tools().ninja.path), build_dir, list(targets))
    log = read_ninja_log(build_dir / ".ninja_log")
    if not log:
        raise BundleGraphError(f"{build_dir}: no .ninja_log (build the leg there first)")
    outputs = {s.output for s in steps}
    objects = {object_key(o): s for o, s in log.items() if o in outputs}
    other = {o: s for o, s in log.items() if o not in outputs and not o.endswith((".o", ".obj"))}
    return costs.CostRecord(leg, objects, other, note)


def register(sub: Any) -> None:
    p = sub.add_parser("shard-merge", help="merge shard jobs' cache entries and figures before the final compile")
    p.add_argument("dir", help="a directory holding the shard folders (shard.json + ccache/)")
    p.add_argument("--cache-dir", help="the local ccache directory (default: CCACHE_DIR, else ccache's)")
    p.add_argument(
        "--leg",
        action="append",
        default=[],
        help="a sharded leg whose every shard must have arrived (its spec's [build] shards); repeatable",
    )
    p.set_defaults(func=run_merge)
    c = sub.add_parser("costs", help="show, hand out or seed the per-leg cost records the shard split uses")
    c.add_argument("legs", nargs="*", metavar="LEG", help="legs (default: every selected leg)")
    add_filter_args(c)
    c.add_argument("--out", help="write each leg's record into this directory")
    c.add_argument("--build-dir", help="make LEG's record from this build directory's .ninja_log")
    c.add_argument(
        "--derive-from", metavar="OTHER", help="make LEG's record from OTHER's (CUDA objects scaled by archs)"
    )
    c.add_argument("--note", help="where the figures come from (kept in the record)")
    c.set_defaults(func=run_costs)
