"""The stages, in one registry: what a stage is (:class:`Stage`) and which there are
(:data:`STAGES`, in the order a leg's tasks run). Everything else that names stages derives
from here: the stage order, the opt-in stages, the compile stages, the planners the graph calls.

A stage is a module of :mod:`bundlegraph.pipeline` with ``NAME`` (its tasks are
``<NAME>:<leg>`` or ``<NAME>:<shared name>``), ``OPT_IN`` when a bare ``doit`` never asks for it,
and ``plans(ctx)`` returning its :class:`~.base.TaskPlan` values, each with a ``prepare`` that
gives the :class:`~.base.Prepared` plan (key and printed form from one value) and an ``apply``
that runs it. The modules are checked against :class:`Stage` by mypy (a module can implement a
protocol) and when this module loads. This is how cibuildwheel keeps its platforms
(``cibuildwheel/platforms/__init__.py``: a ``PlatformModule`` protocol and one table).
"""

from __future__ import annotations

from typing import Protocol

from . import configure, manifest, merge, package, publish, shard_build, smoke, source, toolkit, verify
from .base import Context, TaskPlan


class Stage(Protocol):
    """A stage module: its ``NAME`` and its planner."""

    NAME: str

    def plans(self, ctx: Context) -> list[TaskPlan]:
        """The stage's tasks for the legs of ``ctx`` (no side effects; nothing runs)."""
        ...


STAGES: tuple[Stage, ...] = (
    source,
    toolkit,
    configure,
    shard_build,  # the build stage: build.plans, a shard run's sharded legs as their shard
    verify,
    merge,
    package,
    smoke,
    manifest,
    publish,
)
"""Every stage, in the order its tasks run for one leg."""

STAGE_ORDER: list[str] = [s.NAME for s in STAGES]
"""The stage names, in order."""
OPT_IN_STAGES: tuple[str, ...] = tuple(s.NAME for s in STAGES if getattr(s, "OPT_IN", False))
"""Stages never part of a bare ``doit`` on their own."""
COMPILE_STAGES: tuple[str, ...] = tuple(STAGE_ORDER[: STAGE_ORDER.index("build") + 1])
"""Stages a compile runner's job asks for (``doit build:L``): a run naming only tasks of these
stages needs no merge base."""

if len(set(STAGE_ORDER)) != len(STAGE_ORDER):
    raise RuntimeError(f"two stages share a name: {STAGE_ORDER}")
