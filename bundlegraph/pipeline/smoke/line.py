"""The throughput check's second reference: another bundle of the same release, commit, os and
arch, which the leg's smoke side names (:meth:`~.side.GpuSide.sibling`). CUDA's: a CUDA 13 bundle
is also compared with the release's own CUDA 12 bundle (issue 52 item 3: unsloth#11349 was a CUDA
13 bundle 5-7x slower than a CUDA 12 build of the same source on the same GPU; a reference built
with the bundle's own toolkit cannot show a toolkit regression; which one:
:func:`bundlegraph.backends.cuda.smoke.sibling`).

Where it comes from: its bundle in ``dist/`` (built in the same run: the smoke then waits for its
``package:`` task) or under ``artifacts=DIR``, with its runtime (for CUDA, the CUDA 12 runtime an
installer pairs) first on the loader path. Where either is missing, the comparison is recorded as
not applicable with the reason (a smoke of one CUDA 13 leg alone has no CUDA 12 bundle); the
reference of the bundle's own toolkit still judges it.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ...core import paths
from ...core.errors import BundleGraphError
from ...core.lightclass import frozen
from ..base import locate_base

if TYPE_CHECKING:
    from ..base import Context


@frozen
class Sibling:
    """A leg of the release whose bundle a leg's throughput is also compared with, as the leg's
    smoke side names it (:meth:`~.side.GpuSide.sibling`): ``leg``, ``what`` its bundle is (in
    messages: ``the release's CUDA 12 bundle for this os and arch``) and ``runtime_what`` the
    runtime it runs with (``the CUDA 12 runtime``)."""

    leg: str
    what: str
    runtime_what: str


@frozen
class LineReference:
    """The CUDA 12 bundle a CUDA 13 leg's throughput is also compared with: ``leg`` (its spec),
    ``archive`` (its bundle, or None), ``runtime`` (its toolkit's library directory, or None) and
    ``problem`` (why the comparison cannot run here, or None)."""

    leg: str
    archive: Path | None
    runtime: Path | None
    problem: str | None


def find_archive(ctx: Context, leg: str) -> Path | None:
    """``leg``'s bundle in ``dist/`` or under ``artifacts=`` (:func:`~..base.locate_base`), or None."""
    try:
        return locate_base(ctx.bundle_name(leg), paths.dist_dir(), ctx.filters.artifacts)
    except BundleGraphError:
        return None


def plan_line(ctx: Context, sibling: Sibling | None, runtime_dir: Path | None) -> LineReference | None:
    """The :class:`LineReference` of a leg whose side names ``sibling`` now, or None when it names
    none. ``runtime_dir``: the sibling's runtime directory (the side's ``runtime_dir``)."""
    if sibling is None:
        return None
    sib = sibling.leg
    name = ctx.bundle_name(sib)
    archive = find_archive(ctx, sib)
    problem = None
    if archive is None:
        problem = (
            f"{name} ({sibling.what}) is not in dist/ "
            f"{'or the artifacts directory ' if ctx.filters.artifacts else ''}here: build {sib} in the same run "
            f"or load the graph with artifacts=DIR holding it"
        )
    elif runtime_dir is None:
        problem = f"{sibling.runtime_what} of {sib} (its toolkit) is not installed here: run its toolkit task"
    return LineReference(sib, archive, runtime_dir, problem)


__all__ = ["LineReference", "Sibling", "find_archive", "plan_line"]
