"""Turn specs into plans and plans into doit tasks. ``dodo.py`` only calls :func:`load_graph`.

A task is ``<stage>:<leg>`` (or ``<stage>:<shared name>`` for tasks several legs share, such as
a toolkit), built from a :class:`TaskPlan`. Every task is keyed by its action key
(:mod:`bundlegraph.core.state`), not by mtimes: the doit task has no ``file_dep``; ordering comes
from ``task_dep`` and up-to-dateness from one ``uptodate`` callable that compares the stamp with
the current inputs and output fingerprints. So a killed doit run (which loses doit's own state)
still resumes exactly: completed tasks have stamps, the interrupted one has none.

Filters (``only_profile``, ``only_leg``) are read when the graph loads and decide which legs
exist, identically for the graph, ``bundlegraph matrix`` and ``bundlegraph plan``. So are the
local-build overrides (``archs``, ``toolkit_source``; :mod:`bundlegraph.backends.cuda.overrides`), which turn
the selected CUDA legs into local builds that can never be published.

``smoke:<leg>`` is a default task of the legs whose bundle this host can start
(:func:`bundlegraph.pipeline.smoke.runs_here`), opt-in for the others; ``smoke:tools-<leg>`` is
always opt-in (it serves the GPU checks). A task may end as *skipped*
(:class:`~bundlegraph.core.errors.TaskSkipped`): it succeeds for doit, prints the reason and records
no stamp, so it is never up to date and is evaluated again on the next run.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Protocol, cast

from ..core import report, state
from ..core.errors import BundleGraphError, SpecError, TaskSkipped
from ..core.lightclass import mutable
from ..pipeline import cleanup, smoke
from ..pipeline.base import Context, Filters, Prepared, TaskPlan, select, upstream_digest
from ..pipeline.stages import OPT_IN_STAGES, STAGE_ORDER, STAGES
from ..schemas.backend import BACKENDS, plug_in
from ..schemas.records import Matrix
from ..specs.loader import load_matrix
from . import noop_memo
from .doit_config import doit_config

NOT_ON_THE_LOAD_PATH = ("pydantic", "pefile", "httpx", "elftools", "signify", "filelock")
"""Libraries loading the graph never imports: validation (pydantic: only on a spec-cache miss),
reading PE and ELF files, downloading and Authenticode belong to tasks that run, and the locks
are the OS's. A no-op ``doit`` pays for none of them (issue 20). The contract is checked by
``tests/unit/test_load_path.py`` (loading the real graph) and by the no-op run of
``tests/integration/test_incremental.py`` (every up-to-date check too)."""


@mutable
class Graph:
    """All plans of a loaded graph, grouped by stage, plus the doit configuration."""

    ctx: Context
    plans: list[TaskPlan]
    untouched: bool = False
    """Whether the doit command leaves the work directory untouched (``list``, ``info``:
    :data:`~bundlegraph.core.runlock.UNTOUCHED_COMMANDS`): :attr:`doit_config` then creates nothing."""

    def by_stage(self) -> dict[str, list[TaskPlan]]:
        out: dict[str, list[TaskPlan]] = {}
        for p in self.plans:
            out.setdefault(p.stage, []).append(p)
        return out

    def find(self, full_name: str) -> TaskPlan:
        """The plan of task ``full_name``. Raises :class:`BundleGraphError` naming the three
        closest task names and the command that lists the rest."""
        for p in self.plans:
            if p.full_name == full_name:
                return p
        import difflib

        names = [p.full_name for p in self.plans]
        close = difflib.get_close_matches(full_name, names, n=3, cutoff=0.0)
        raise BundleGraphError(
            f"no task '{full_name}' in the graph (did you mean {' or '.join(repr(c) for c in close)}?); "
            f"`doit list` lists all {len(names)} tasks"
        )

    def default_tasks(self) -> list[str]:
        """What a bare ``doit`` runs: the last implemented stage of each default leg, then its
        smoke where this host can start its bundle, and the shared tasks that have no leg (the
        manifest, after them), limited to the selected legs."""
        wanted = [l for l in self.ctx.release.default_legs if l in self.ctx.legs]
        out: list[str] = []
        for leg in wanted:
            leg_plans = [p for p in self.plans if p.leg == leg and p.stage not in OPT_IN_STAGES]
            if leg_plans:
                out.append(max(leg_plans, key=lambda p: STAGE_ORDER.index(p.stage)).full_name)
            if smoke.runs_here(self.ctx, leg) and any(p.full_name == f"smoke:{leg}" for p in self.plans):
                out.append(f"smoke:{leg}")
        return out + [p.full_name for p in self.plans if p.leg is None and p.stage == "manifest"]

    @property
    def doit_config(self) -> dict[str, Any]:
        """``DOIT_CONFIG`` (:func:`bundlegraph.graph.doit_config.doit_config`) with this graph's
        default tasks."""
        return doit_config(self.default_tasks(), self.untouched)

    def task_creators(self) -> dict[str, Callable[[], Iterable[dict[str, Any]]]]:
        """``{"task_<stage>": generator}`` for dodo.py's globals."""
        return {f"task_{stage.replace('-', '_')}": _creator(stage, plans) for stage, plans in self.by_stage().items()}


def _creator(stage: str, plans: list[TaskPlan]) -> Callable[[], Iterable[dict[str, Any]]]:
    def gen() -> Iterable[dict[str, Any]]:
        if len(plans) == 1 and not plans[0].name:
            yield to_doit(plans[0])
            return
        yield {"basename": stage, "name": None, "doc": f"{stage}: every selected leg"}
        for p in plans:
            yield to_doit(p)

    gen.__doc__ = f"{stage} stage"
    return gen


def to_doit(plan: TaskPlan) -> dict[str, Any]:
    """The doit task dict of one plan: no file_dep; ``uptodate`` compares the stamp."""
    d: dict[str, Any] = {
        "basename": plan.stage,
        "doc": plan.doc,
        "actions": [_Run(plan)],
        "uptodate": [_Check(plan)],
        "clean": [_Clean(plan)],
        "task_dep": list(plan.deps),
        "verbosity": 2,
    }
    if plan.name:
        d["name"] = plan.name
    return d


class _OfPlan:
    """A callable doit holds for one task (its check, action or clean), carrying the task's plan.
    doit prints these objects (``doit info``, ``doit clean``), so each has a one-line repr."""

    __slots__ = ("plan",)

    def __init__(self, plan: TaskPlan) -> None:
        self.plan = plan


class _Check(_OfPlan):
    """A task's ``uptodate`` callable (:func:`_uptodate` of its plan). Its repr is one short line,
    what ``doit info TASK`` prints: the task, and why it is due (the words ``bundlegraph explain``
    would say) or that its stamp holds."""

    __slots__ = ()

    def __call__(self) -> bool:
        rec = noop_memo.RECORDING
        if rec is None:
            return _uptodate(self.plan)
        with rec.observer:  # what the check looks at decides whether the next run may skip it
            up = _uptodate(self.plan)
        rec.checked(self.plan.full_name, up)
        return up

    def __repr__(self) -> str:
        name = self.plan.full_name
        why = _WHY.get(name)
        said = ("due: " + "; ".join(why[:2]) + (" ..." if len(why) > 2 else "")) if why else "not checked yet"
        if name not in _WHY and name in _PREPARED:
            said = "up to date: its stamp matches the action key"
        return f"<{name} check ({said}); `bundlegraph explain {name}` says why>"


class _Run(_OfPlan):
    """A task's action (:func:`_execute` of its plan); its repr is one short line for ``doit info``
    (doit prints a Python action as its callable's repr without the first character)."""

    __slots__ = ()

    def __call__(self) -> object:
        return _execute(self.plan)

    def __repr__(self) -> str:
        leg = f" of leg {self.plan.leg}" if self.plan.leg else ""
        return f"<bundlegraph's {self.plan.stage} stage{leg}: {self.plan.doc}>"


class _Clean(_OfPlan):
    """A task's ``clean`` action: removes what the task wrote in the work directory
    (:mod:`bundlegraph.pipeline.cleanup`). Its repr, which ``doit clean`` and ``doit clean -n``
    print, names those paths."""

    __slots__ = ()

    def _found(self) -> list[Path]:
        return cleanup.owned_paths(self.plan.full_name, self.plan.stage, self.plan.leg)

    def __call__(self) -> None:
        cleanup.remove(self._found())

    def __repr__(self) -> str:
        return f"<remove {cleanup.describe(self._found())}>"

    def __str__(self) -> str:
        # doit prints a clean action as "Python: " + str(callable)[1:], cut at " at ": the first
        # character is dropped on purpose, and " at " in a path is spelled so that doit keeps it
        return " remove " + cleanup.describe(self._found()).replace(" at ", " at\u00a0")


_PREPARED: dict[str, Prepared[Any]] = {}
"""Each task's plan value, computed by its up-to-date check and handed to its run (doit checks
a task right before it runs it, in the same process)."""


_WHY: dict[str, list[str]] = {}
"""Why each task that is due runs (the words ``bundlegraph explain`` would have said), printed
when it starts."""


def _uptodate(plan: TaskPlan) -> bool:
    if not plan.recorded:
        _WHY[plan.full_name] = ["it is never recorded as complete (a shard build): ninja skips what is built"]
        return False
    try:
        p = _PREPARED[plan.full_name] = plan.prepared()
    except BundleGraphError as e:
        _PREPARED.pop(plan.full_name, None)
        _WHY[plan.full_name] = [f"its inputs cannot be computed now: {str(e).splitlines()[0]}"]
        return False
    reasons = state.explain(plan.full_name, p.key) or list(p.stale)
    if reasons:
        _WHY[plan.full_name] = reasons
    return not reasons


def _execute(plan: TaskPlan) -> object:
    """Run one plan inside doit: stamp forgotten first, recorded only on success. Expected
    failures become a TaskFailed (no traceback); anything else is a bug and propagates."""
    from doit.exceptions import TaskFailed

    name = plan.full_name
    if noop_memo.RECORDING is not None:
        noop_memo.RECORDING.observer.spoil(f"{name} ran")
    t0 = time.monotonic()
    with report.task(name) as outcome:
        try:
            why = _WHY.pop(name, None)
            if why:
                report.say(f"{name}: runs because " + "; ".join(why[:3]) + (" ..." if len(why) > 3 else ""))
            prepared = _PREPARED.pop(name, None) or plan.prepared()
            if not plan.recorded:  # a shard: the leg's own stamp (a full build's) stays as it is
                plan.apply(prepared)
                outcome["outcome"] = "done"
                return None
            state.forget(name)
            outputs = plan.apply(prepared)
            state.record(name, prepared.key, outputs, seconds=time.monotonic() - t0)
        except TaskSkipped as e:
            outcome.update(outcome="skipped", why=str(e))
            return None
        except BundleGraphError as e:
            return TaskFailed(str(e))
        outcome["outcome"] = "done"
    return None


def load_context(bundles: str | Path, filters: Filters | None = None) -> Context:
    """The planners' :class:`Context`: ``bundles`` validated (raises :class:`SpecError` listing
    every problem), the filters applied and the local-build overrides too (what a stage's task
    sees; ``bundlegraph verify --leg`` uses it to apply the very policy ``verify:<leg>`` does)."""
    matrix = load_matrix(bundles)
    filters = filters or Filters()
    legs = select(matrix, filters)
    for b in BACKENDS:  # a backend's local-build overrides (CUDA's archs=, toolkit_source=)
        if (mod := plug_in(b, "overrides")) is not None:
            matrix = cast(_Overrides, mod).from_filters(matrix, legs, filters)
    return Context(matrix, legs, filters)


class _Overrides(Protocol):
    """A backend's ``overrides`` module (:func:`bundlegraph.backends.cuda.overrides.from_filters`)."""

    def from_filters(self, matrix: Matrix, legs: list[str], filters: Filters) -> Matrix: ...


def load_graph(bundles: str | Path, filters: Filters | None = None) -> Graph:
    """:func:`load_context` and every implemented stage's plans."""
    ctx = load_context(bundles, filters)
    return Graph(ctx, [p for stage in STAGES for p in stage.plans(ctx)])


__all__ = [
    "OPT_IN_STAGES",
    "STAGE_ORDER",
    "Context",
    "Filters",
    "Graph",
    "SpecError",
    "TaskPlan",
    "load_context",
    "load_graph",
    "select",
    "upstream_digest",
]
