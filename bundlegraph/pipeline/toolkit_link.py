"""How configure sees a leg's CUDA toolkit: :func:`toolkit_layout` turns the toolkit stage's
``toolkit_for_leg(ctx, leg) -> ToolkitRef`` (``pipeline/toolkit.py``) into the
:class:`~bundlegraph.toolchains.cuda.CudaLayout` the toolchain file is rendered from, plus the
toolkit task configure must wait for (None while the toolkit stage is not in the graph, e.g. a
``host`` toolkit used read-only before that stage existed)."""

from __future__ import annotations

from ..toolchains.base import Toolchain
from ..toolchains.cuda import CudaLayout


def _toolkit_stage_registered() -> bool:
    from ..graph import _planners

    return any(stage == "toolkit" for stage, _ in _planners())


def toolkit_layout(ctx, leg: str, tc: Toolchain) -> tuple[CudaLayout | None, str | None]:
    """``(layout, toolkit task)`` of ``leg``; ``(None, None)`` for a leg without ``[cuda]``.
    Pure (no process, no network). Raises :class:`ToolkitError` for an unusable toolkit spec."""
    spec = ctx.spec(leg)
    if spec.cuda is None:
        return None, None
    from .toolkit import toolkit_for_leg

    ref = toolkit_for_leg(ctx, leg)
    layout = CudaLayout(prefix=ref.prefix, target_os=spec.os, target_dir=ref.target_dir,
                        host_os=tc.info.build_os, version=ref.version)
    return layout, (ref.task if _toolkit_stage_registered() else None)
