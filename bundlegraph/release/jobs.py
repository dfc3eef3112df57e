"""The release workflow's jobs, derived from the specs: which legs run in which job, with which
hand-offs, and what each job waits for. ``bundlegraph matrix --github-output`` writes one matrix
per job for ``.github/workflows/release.yml``; ``bundlegraph plan --critical-path`` predicts the
same jobs' timeline (:mod:`bundlegraph.release.critical_path`).

GitHub's ``needs:`` is per job, never per matrix row (a job waits for every row of the jobs it
needs), so legs are grouped into jobs by what they wait for. Every compile starts at once:

=================  =========================================  ===================================
job                needs                                      rows
=================  =========================================  ===================================
``compile``        plan                                       each shard of a leg with ``shards >
                                                              1``; the whole compile of an
                                                              unsharded backend leg or of a leg
                                                              with a ``compile_runner`` (uploads
                                                              ``built-<leg>``)
``compile-final``  plan, compile                              the final compile of a sharded leg
                                                              with a ``compile_runner`` (merges
                                                              its shards, uploads ``built-<leg>``)
``base``           plan                                       base legs that compile in their own
                                                              job (one shard, no compile runner)
``base-imported``  plan, compile, compile-final               the other base legs
``backend``        plan, compile, compile-final, base,        every backend leg (``[merge] base``)
                   base-imported
``manifest``       all of the above                           (one job)
=================  =========================================  ===================================

A sharded leg without a compile runner does its final compile in its own packaging job (it merges
the shards' caches there, then builds: every object a hit), which saves a job's start, toolkit
install and artifact round trip on the critical path. A row's flags say which hand-offs its job
makes: ``imports_build`` (download ``built-<leg>``, ``doit built=built``), ``merges_shards``
(download ``shard-<leg>-*``, ``bundlegraph shard-merge``), ``uploads_build``, ``uploads_shard``.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from ..core.lightclass import frozen
from ..schemas.records import BundleSpec, Matrix

JOBS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("compile", ("plan",)),
    ("compile-final", ("plan", "compile")),
    ("base", ("plan",)),
    ("base-imported", ("plan", "compile", "compile-final")),
    ("backend", ("plan", "compile", "compile-final", "base", "base-imported")),
)
"""Each matrix job of the release workflow and the jobs it needs (``plan`` runs first, ``manifest``
after all)."""
MANIFEST_NEEDS = ("plan", "compile", "compile-final", "base", "base-imported", "backend")


@frozen
class JobRow:
    """One matrix row: ``job`` (a name of :data:`JOBS`), ``id`` (the leg), ``runner`` (what the
    row runs on), ``shard`` (``"I/N"`` or ``""``), ``shard_index`` (I, or 0: artifact names hold
    no ``/``), ``shards`` (the leg's N), ``role``
    (``base``/``backend``), ``merge_base``, ``compile_runner``, the hand-off flags (module
    docstring), ``name`` (shown by GitHub), ``timeout`` (minutes; filled by the workflow's
    matrix writer from the predicted minutes) and ``packages``: the Debian/Ubuntu packages the
    row's runner installs before it runs, the leg's machine file's ``[properties] packages``
    (:mod:`bundlegraph.toolchains.registry`; empty for a toolchain that names none, the Windows
    ones), so no workflow spells an ``apt-get`` list of its own; ``optional``: the leg is not
    promised (``promised = false``), so the workflow runs its row with ``continue-on-error`` and a
    failure there (an SDK this release cannot install yet) never stops the promised legs' release."""

    job: str
    id: str
    os: str
    arch: str
    profile: str
    runner: str
    shard: str
    shard_index: int
    shards: int
    role: str
    merge_base: str | None
    compile_runner: str | None
    imports_build: bool
    merges_shards: bool
    uploads_build: bool
    uploads_shard: bool
    name: str
    timeout: int = 0
    packages: str = ""
    optional: bool = False

    def matrix_entry(self) -> dict[str, Any]:
        """The row as a GitHub matrix ``include`` entry (every field; ``job`` left out)."""
        d = asdict(self)
        d.pop("job")
        return d


def _row(
    job: str,
    leg: str,
    spec: BundleSpec,
    *,
    runner: str,
    shard: str = "",
    imports: bool = False,
    merges: bool = False,
    uploads_build: bool = False,
    uploads_shard: bool = False,
) -> JobRow:
    base = spec.merge.base if spec.merge else None
    name = leg + (f" shard {shard}" if shard else "")
    index = int(shard.split("/")[0]) if shard else 0
    return JobRow(
        job,
        leg,
        spec.os,
        spec.arch,
        spec.profile.name,
        runner,
        shard,
        index,
        spec.build.shards,
        "backend" if base else "base",
        base,
        spec.compile_runner,
        imports,
        merges,
        uploads_build,
        uploads_shard,
        name,
        packages=runner_packages(spec),
        optional=not spec.promised,
    )


def runner_packages(spec: BundleSpec) -> str:
    """The packages a runner installs for ``spec``'s jobs: its toolchain's machine-file
    ``[properties] packages`` (empty when the machine file names none)."""
    from ..toolchains.registry import TOOLCHAINS

    tc = TOOLCHAINS.get(spec.toolchain)
    return dict(tc.properties).get("packages", "") if tc is not None else ""


def rows(matrix: Matrix, legs: list[str]) -> list[JobRow]:
    """Every matrix row of the selected ``legs``, in :data:`JOBS` order then leg order."""
    out: dict[str, list[JobRow]] = {name: [] for name, _ in JOBS}
    for leg in legs:
        spec = matrix.legs[leg]
        n = spec.build.shards
        host = spec.compile_runner or spec.runner
        backend = spec.merge is not None
        apart = backend or spec.compile_runner is not None  # compiled in a job of its own
        if n > 1:
            for i in range(1, n + 1):
                out["compile"].append(_row("compile", leg, spec, runner=host, shard=f"{i}/{n}", uploads_shard=True))
            if spec.compile_runner:
                out["compile-final"].append(
                    _row("compile-final", leg, spec, runner=host, merges=True, uploads_build=True)
                )
        elif apart:
            out["compile"].append(_row("compile", leg, spec, runner=host, uploads_build=True))
        imported = apart and (n == 1 or spec.compile_runner is not None)
        merges = n > 1 and spec.compile_runner is None
        if backend:
            out["backend"].append(_row("backend", leg, spec, runner=spec.runner, imports=imported, merges=merges))
        elif imported or merges:
            out["base-imported"].append(
                _row("base-imported", leg, spec, runner=spec.runner, imports=imported, merges=merges)
            )
        else:
            out["base"].append(_row("base", leg, spec, runner=spec.runner))
    return [r for name, _ in JOBS for r in out[name]]


def warm_rows(matrix: Matrix, legs: list[str]) -> list[JobRow]:
    """The rows of the default branch's warm-caches workflow (``.github/workflows/warm-caches.yml``):
    one per selected leg, job ``warm``, the leg's whole compile (``doit build:L``, unsharded) on its
    compile runner (``compile_runner`` else ``runner``). It fills the compiler cache ``ccache-<leg>-*``
    and measures the cost records that tag runs restore: GitHub scopes caches by ref, and a tag's
    run can restore what the default branch saved, never what another tag's run saved."""
    return [
        _row("warm", leg, matrix.legs[leg], runner=matrix.legs[leg].compile_runner or matrix.legs[leg].runner)
        for leg in legs
    ]


def matrices(all_rows: list[JobRow]) -> dict[str, dict[str, Any]]:
    """``{job: {"include": [entry, ...]}}`` for every job of :data:`JOBS` (empty ones too: the
    workflow skips a job whose ``include`` is empty)."""
    return {name: {"include": [r.matrix_entry() for r in all_rows if r.job == name]} for name, _ in JOBS}


__all__ = ["JOBS", "MANIFEST_NEEDS", "JobRow", "matrices", "rows", "warm_rows"]
