"""``bundlegraph matrix``: pure JSON for a GitHub Actions matrix (``fromJSON``).

Default output: ``{"include": [row, ...]}``, one row per leg kept by the filters, each followed by
one row per shard of that leg when its spec says ``[build] shards = N`` (N > 1). A row holds
``id``, ``os``, ``arch``, ``profile``, ``runner``, ``compile_runner``, ``role``, ``merge_base``,
``shards`` (the leg's N) and ``shard`` (null on a leg row; ``"I/N"`` on a shard row, whose
``role`` is ``"shard"`` and whose ``runner`` is where it compiles: ``compile_runner`` else
``runner``). ``role`` is ``"backend"`` for a leg with ``[merge] base = ...`` (its job needs the
base's bundle: ``merge_base`` names it) and ``"base"`` for every other leg. CI splits its jobs on
``role`` and the shard rows, never on profile names.

``--job NAME`` prints one job's matrix of the release workflow (:mod:`bundlegraph.release.jobs`:
``compile``, ``compile-final``, ``base``, ``base-imported``, ``backend``), each row with its flags
and ``timeout`` (minutes: the row's leg compiled whole and cold, and its other parts, with a margin, at
most GitHub's 360-min job limit: :func:`bundlegraph.release.critical_path.row_timeout`; a leg whose shard or whole compile cannot fit
is refused, exit 2, and a final compile that fits only with its shards' hits is flagged on stderr; the
default output and ``--warm`` refuse such a leg too);
``--github-output`` prints every job's as ``<job>=<json>`` lines (``-`` in a job's name becomes
``_``) for ``$GITHUB_OUTPUT``: what the release workflow's plan job writes. ``--warm`` prints the
default branch's warm-caches workflow matrix as one ``warm=<json>`` line (one row per leg, its whole
compile on its compile runner: :func:`bundlegraph.release.jobs.warm_rows`).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from ..core.errors import BundleGraphError
from ..pipeline.base import select
from ..specs.loader import load_matrix
from . import add_filter_args, filters_from


def matrix_rows(args: argparse.Namespace) -> list[dict[str, Any]]:
    """The default output's rows (module docstring). Raises :class:`TimeoutFitError` for a leg
    the release cannot build within GitHub's job limit (:func:`refuse_unfit`)."""
    m = load_matrix(args.bundles)
    legs = select(m, filters_from(args))
    refuse_unfit(m, legs)
    rows = []
    for leg in legs:
        spec = m.legs[leg]
        base = spec.merge.base if spec.merge else None
        row = {
            "id": leg,
            "os": spec.os,
            "arch": spec.arch,
            "profile": spec.profile.name,
            "runner": spec.runner,
            "compile_runner": spec.compile_runner,
            "role": "backend" if base else "base",
            "merge_base": base,
            "shards": spec.build.shards,
            "shard": None,
        }
        rows.append(row)
        n = spec.build.shards
        if n > 1:
            rows += [
                row | {"role": "shard", "shard": f"{i}/{n}", "runner": spec.compile_runner or spec.runner}
                for i in range(1, n + 1)
            ]
    return rows


def job_matrices(args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    """``{job: {"include": [...]}}`` of the release workflow, with each row's timeout (it covers
    the leg's whole cold compile: :func:`~bundlegraph.release.critical_path.cover_seconds`). Raises :class:`TimeoutFitError` naming every
    row that cannot fit in GitHub's job limit (:func:`~bundlegraph.release.critical_path.timeout_problems`)."""
    import dataclasses

    from ..core.report import warn
    from ..pipeline.compile import costs
    from ..release.critical_path import Assumptions, cover_seconds, row_timeout
    from ..release.jobs import matrices, rows

    m = load_matrix(args.bundles)
    legs = select(m, filters_from(args))
    a = Assumptions()
    records = {leg: costs.find(leg, m.root) for leg in legs}
    all_rows = rows(m, legs)
    flags = refuse_unfit(m, legs, all_rows, records)
    for f in flags:
        warn(f, annotate=True)
    out = [
        dataclasses.replace(r, timeout=row_timeout(sum(cover_seconds(r, m.legs[r.id], records[r.id], a).values())))
        for r in all_rows
    ]
    return matrices(out)


class TimeoutFitError(BundleGraphError):
    """A release row whose cold compile, with its margin, cannot fit in GitHub's job limit."""


def refuse_unfit(m: Any, legs: list[str], all_rows: Any = None, records: Any = None) -> list[str]:
    """The release rows of ``legs`` (``all_rows``, else :func:`~bundlegraph.release.jobs.rows`) checked
    against GitHub's job limit (:func:`~bundlegraph.release.critical_path.timeout_problems`, with
    ``records``, else each leg's cost record): raises :class:`TimeoutFitError`, one line per row
    that cannot fit, else returns the flags (rows that fit only capped). Every mode of ``matrix``
    asks this first: a leg no release can build is refused wherever its matrix is made."""
    from ..pipeline.compile import costs
    from ..release.critical_path import Assumptions, timeout_problems
    from ..release.jobs import rows

    if records is None:
        records = {leg: costs.find(leg, m.root) for leg in legs}
    refusals, flags = timeout_problems(all_rows or rows(m, legs), m.legs, records, Assumptions())
    if refusals:
        raise TimeoutFitError("\n".join(refusals))
    return flags


def warm_matrix(args: argparse.Namespace) -> dict[str, Any]:
    """``{"include": [...]}`` of the warm-caches workflow (:func:`~bundlegraph.release.jobs.warm_rows`),
    each row's timeout covering its leg's whole cold compile; a row over GitHub's job limit is
    flagged on stderr and gets the limit (a warm run is not a release: nothing waits for it). A leg
    the release itself cannot build in the limit is refused (:func:`refuse_unfit`), as in every mode."""
    import dataclasses

    from ..core.report import warn
    from ..pipeline.compile import costs
    from ..release.critical_path import GITHUB_JOB_LIMIT_MIN, Assumptions, cover_seconds, row_timeout
    from ..release.jobs import warm_rows

    m = load_matrix(args.bundles)
    legs = select(m, filters_from(args))
    refuse_unfit(m, legs)
    a = Assumptions()
    out = []
    for r in warm_rows(m, legs):
        cover = sum(cover_seconds(r, m.legs[r.id], costs.find(r.id, m.root), a).values())
        t = row_timeout(cover)
        if t >= GITHUB_JOB_LIMIT_MIN:
            warn(f"bundles/{r.id}.toml: warm row models {cover / 60:.0f} min cold: timeout capped at {t} min")
        out.append(dataclasses.replace(r, timeout=t).matrix_entry())
    return {"include": out}


def run(args: argparse.Namespace) -> int:
    indent = None if args.compact or args.github_output else 2
    if args.warm:
        print(f"warm={json.dumps(warm_matrix(args), separators=(',', ':'))}")
        return 0
    if args.github_output:
        for job, mx in job_matrices(args).items():
            print(f"{job.replace('-', '_')}={json.dumps(mx, separators=(',', ':'))}")
        return 0
    if args.job:
        print(json.dumps(job_matrices(args)[args.job], indent=indent))
        return 0
    print(json.dumps({"include": matrix_rows(args)}, indent=indent))
    return 0


def register(sub: Any) -> None:
    from ..release.jobs import JOBS

    p = sub.add_parser("matrix", help="print the leg matrix as JSON for a CI matrix")
    add_filter_args(p)
    p.add_argument("--compact", action="store_true", help="one line (for $GITHUB_OUTPUT)")
    p.add_argument("--job", choices=[name for name, _ in JOBS], help="one job's matrix of the release workflow")
    p.add_argument(
        "--warm",
        action="store_true",
        help="the default branch's warm-caches workflow matrix as a warm=<json> line (for $GITHUB_OUTPUT)",
    )
    p.add_argument(
        "--github-output",
        action="store_true",
        help="every release-workflow job's matrix as <job>=<json> lines (for $GITHUB_OUTPUT)",
    )
    p.set_defaults(func=run)
