"""The throughput check's second reference for a CUDA 13 bundle: the release's own CUDA 12 bundle
of the same commit, os and arch (issue 52 item 3: unsloth#11349 was a CUDA 13 bundle 5-7x slower
than a CUDA 12 build of the same source on the same GPU; a reference built with the bundle's own
toolkit cannot show a toolkit regression).

The CUDA 12 bundle is a fair reference: it is built with upstream's CUDA 12 flags
(``tests/integration/test_upstream_flags.py`` holds every cuda12 leg to them, ``GGML_CUDA_CUB_3DOT2``
included) and the CUDA 12 toolkit line, and its own smoke holds it to a reference built with
upstream's flags. It is the bundle an installer would have sent the user instead.

Which one (:func:`line_sibling`): a leg of the release with the same os and arch, ``profile.line``
``cuda12``, not PTX-only (the legacy class JIT-compiles on the GPU: its speed says nothing of the
CUDA 12 toolkit's SASS); of the same class as the bundle where there is one, else the highest rank.

Where it comes from: its bundle in ``dist/`` (built in the same run: the smoke then waits for its
``package:`` task) or under ``artifacts=DIR``, with its toolkit's CUDA runtime (the CUDA 12 runtime
an installer pairs) first on the loader path. Where either is missing, the comparison is recorded as
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

LINE = "cuda12"
"""The toolkit line of the second reference."""


@frozen
class LineReference:
    """The CUDA 12 bundle a CUDA 13 leg's throughput is also compared with: ``leg`` (its spec),
    ``archive`` (its bundle, or None), ``runtime`` (its toolkit's library directory, or None) and
    ``problem`` (why the comparison cannot run here, or None)."""

    leg: str
    archive: Path | None
    runtime: Path | None
    problem: str | None


def line_sibling(ctx: Context, leg: str) -> str | None:
    """The release's CUDA 12 leg a CUDA 13 ``leg`` is compared with (module docstring), or None
    (not a CUDA 13 leg, or no such CUDA 12 leg for its os and arch)."""
    spec = ctx.spec(leg)
    if spec.cuda is None or spec.profile.line != "cuda13":
        return None
    legs = ctx.matrix.legs
    candidates = [
        n
        for n, s in legs.items()
        if s.cuda is not None
        and (s.os, s.arch) == (spec.os, spec.arch)
        and s.profile.line == LINE
        and any(a.sass for a in s.cuda.archs)
    ]
    if not candidates:
        return None
    return min(candidates, key=lambda n: (legs[n].profile.klass != spec.profile.klass, -legs[n].profile.rank, n))


def find_archive(ctx: Context, leg: str) -> Path | None:
    """``leg``'s bundle in ``dist/`` or under ``artifacts=`` (:func:`~..base.locate_base`), or None."""
    try:
        return locate_base(ctx.bundle_name(leg), paths.dist_dir(), ctx.filters.artifacts)
    except BundleGraphError:
        return None


def plan_line(ctx: Context, leg: str, runtime_dir: Path | None) -> LineReference | None:
    """The :class:`LineReference` of ``leg`` now, or None when it has no CUDA 12 sibling.
    ``runtime_dir``: the sibling's CUDA runtime directory (the CUDA side's ``runtime_dir``)."""
    sib = line_sibling(ctx, leg)
    if sib is None:
        return None
    name = ctx.bundle_name(sib)
    archive = find_archive(ctx, sib)
    problem = None
    if archive is None:
        problem = (
            f"{name} (the release's CUDA 12 bundle for this os and arch) is not in dist/ "
            f"{'or the artifacts directory ' if ctx.filters.artifacts else ''}here: build {sib} in the same run "
            f"or load the graph with artifacts=DIR holding it"
        )
    elif runtime_dir is None:
        problem = f"the CUDA 12 runtime of {sib} (its toolkit) is not installed here: run its toolkit task"
    return LineReference(sib, archive, runtime_dir, problem)


__all__ = ["LINE", "LineReference", "find_archive", "line_sibling", "plan_line"]
