"""Turn specs into plans and plans into doit tasks. ``dodo.py`` only calls :func:`load_graph`.

A task is ``<stage>:<leg>`` (or ``<stage>:<shared name>`` for tasks several legs share, such as
a toolkit), built from a :class:`TaskPlan`. Every task is keyed by its action key
(:mod:`bundlegraph.state`), not by mtimes: the doit task has no ``file_dep``; ordering comes
from ``task_dep`` and up-to-dateness from one ``uptodate`` callable that compares the stamp with
the current inputs and output fingerprints. So a killed doit run (which loses doit's own state)
still resumes exactly: completed tasks have stamps, the interrupted one has none.

Filters (``only_profile``, ``only_leg``) are read when the graph loads and decide which legs
exist, identically for the graph, ``bundlegraph matrix`` and ``bundlegraph plan``. So are the
local-build overrides (``archs``, ``toolkit_source``; :mod:`bundlegraph.overrides`), which turn
the selected CUDA legs into local builds that can never be published.

``smoke:<leg>`` is opt-in (never a default task). A task may end as *skipped*
(:class:`~bundlegraph.errors.TaskSkipped`): it succeeds for doit, prints the reason and records
no stamp, so it is never up to date and is evaluated again on the next run.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import paths, state
from .errors import BundleGraphError, SpecError, TaskSkipped
from .schemas.loader import Matrix, load_matrix
from .schemas.spec import BundleSpec

STAGE_ORDER = ["source", "toolkit", "configure", "build", "verify", "merge", "package", "smoke", "manifest",
               "publish"]
OPT_IN_STAGES = ("smoke",)  # never part of a bare `doit`


@dataclass(frozen=True)
class Filters:
    """Load-time filters: keep legs whose ``profile.name`` is ``only_profile`` and/or whose id
    is ``only_leg``. ``artifacts``: a directory of bundles built elsewhere (merge bases).
    ``archs``/``toolkit_source``: local-build overrides (raw text, :mod:`bundlegraph.overrides`)."""

    only_profile: str | None = None
    only_leg: str | None = None
    artifacts: Path | None = None
    archs: str | None = None
    toolkit_source: str | None = None

    @classmethod
    def from_env(cls, **overrides: str | None) -> "Filters":
        """Values from ``overrides`` (doit ``key=value`` vars, CLI flags) else the environment
        (``BUNDLEGRAPH_ONLY_PROFILE``, ``BUNDLEGRAPH_ONLY_LEG``, ``BUNDLEGRAPH_ARTIFACTS``,
        ``BUNDLEGRAPH_ARCHS``, ``BUNDLEGRAPH_TOOLKIT_SOURCE``)."""

        def pick(name: str, env: str) -> str | None:
            v = overrides.get(name)
            if v is None:
                v = os.environ.get(env)
            return v or None

        art = pick("artifacts", "BUNDLEGRAPH_ARTIFACTS")
        return cls(
            only_profile=pick("only_profile", "BUNDLEGRAPH_ONLY_PROFILE"),
            only_leg=pick("only_leg", "BUNDLEGRAPH_ONLY_LEG"),
            artifacts=Path(art).resolve() if art else None,
            archs=pick("archs", "BUNDLEGRAPH_ARCHS"),
            toolkit_source=pick("toolkit_source", "BUNDLEGRAPH_TOOLKIT_SOURCE"),
        )

    @property
    def active(self) -> bool:
        """True when the run is filtered (a filtered run can never publish)."""
        return bool(self.only_profile or self.only_leg)


def select(matrix: Matrix, filters: Filters) -> list[str]:
    """The leg ids the filters keep, in matrix order. A filter that matches no leg is an error
    naming the valid values."""
    legs = list(matrix.legs)
    if filters.only_leg:
        if filters.only_leg not in matrix.legs:
            raise BundleGraphError(
                f"only_leg={filters.only_leg}: no such leg; legs: {', '.join(matrix.legs)}"
            )
        legs = [filters.only_leg]
    if filters.only_profile:
        profiles = sorted({s.profile.name for s in matrix.legs.values()})
        if filters.only_profile not in profiles:
            raise BundleGraphError(
                f"only_profile={filters.only_profile}: no leg has this profile; profiles: {', '.join(profiles)}"
            )
        legs = [l for l in legs if matrix.legs[l].profile.name == filters.only_profile]
    return legs


@dataclass
class TaskPlan:
    """One graph task before it becomes a doit dict.

    - ``stage``/``name``: the task is ``<stage>:<name>``; ``leg`` the leg it belongs to (None
      for shared tasks such as toolkits and the manifest).
    - ``inputs``: returns the action-key inputs; called lazily (after upstream tasks ran), so
      it may read upstream stamps via :func:`upstream_digest`.
    - ``run``: does the work and returns the output files to fingerprint.
    - ``deps``: full names of tasks that must run first.
    - ``details``: returns what ``bundlegraph plan`` prints (commands, paths), no side effects.
    """

    stage: str
    name: str
    doc: str
    inputs: Callable[[], dict]
    run: Callable[[], list[Path]]
    deps: list[str] = field(default_factory=list)
    leg: str | None = None
    details: Callable[[], dict] = lambda: {}

    @property
    def full_name(self) -> str:
        return f"{self.stage}:{self.name}" if self.name else self.stage


def upstream_digest(task: str) -> str:
    """The output digest recorded by ``task``'s stamp (what a downstream key consumes), or
    ``"missing"`` when the task has not completed."""
    st = state.load(task)
    return st.output_digest() if st else "missing"


@dataclass
class Context:
    """What stage planners get: the validated ``matrix``, the ``legs`` kept by the filters,
    the ``filters`` and the directory of ``bundles/``."""

    matrix: Matrix
    legs: list[str]
    filters: Filters

    @property
    def release(self):
        return self.matrix.release

    def spec(self, leg: str) -> BundleSpec:
        return self.matrix.legs[leg]

    def log(self, leg: str, stage: str) -> Path:
        """``build/<leg>/logs/<stage>.log``: the full output of a stage's programs."""
        return paths.build_dir(leg) / "logs" / f"{stage}.log"


Planner = Callable[[Context], list[TaskPlan]]


def _planners() -> list[tuple[str, Planner]]:
    """Every implemented stage's planner, in stage order."""
    from .pipeline import build, configure, source, toolkit, verify

    return [
        ("source", source.plans),
        ("toolkit", toolkit.plans),
        ("configure", configure.plans),
        ("build", build.plans),
        ("verify", verify.plans),
        ("merge", __import__(f"{__package__}.pipeline.releasegraph", fromlist=["x"]).merge_plans),
        ("package", __import__(f"{__package__}.pipeline.releasegraph", fromlist=["x"]).package_plans),
        ("smoke", __import__(f"{__package__}.pipeline.smoke", fromlist=["x"]).plans),
        ("manifest", __import__(f"{__package__}.pipeline.releasegraph", fromlist=["x"]).manifest_plans),
        ("publish", __import__(f"{__package__}.pipeline.releasegraph", fromlist=["x"]).publish_plans),
    ]


@dataclass
class Graph:
    """All plans of a loaded graph, grouped by stage, plus the doit configuration."""

    ctx: Context
    plans: list[TaskPlan]

    def by_stage(self) -> dict[str, list[TaskPlan]]:
        out: dict[str, list[TaskPlan]] = {}
        for p in self.plans:
            out.setdefault(p.stage, []).append(p)
        return out

    def find(self, full_name: str) -> TaskPlan:
        for p in self.plans:
            if p.full_name == full_name:
                return p
        raise BundleGraphError(
            f"no task '{full_name}' in the graph; tasks: {', '.join(p.full_name for p in self.plans)}"
        )

    def default_tasks(self) -> list[str]:
        """What a bare ``doit`` runs: the last implemented stage of each default leg (and the
        shared tasks that have no leg, e.g. the manifest), limited to the selected legs."""
        wanted = [l for l in self.ctx.release.default_legs if l in self.ctx.legs]
        out: list[str] = []
        for leg in wanted:
            leg_plans = [p for p in self.plans if p.leg == leg and p.stage not in OPT_IN_STAGES]
            if leg_plans:
                last = max(leg_plans, key=lambda p: STAGE_ORDER.index(p.stage))
                out.append(last.full_name)
        for p in self.plans:
            if p.leg is None and p.stage in ("manifest",):
                out.append(p.full_name)
        return out

    @property
    def doit_config(self) -> dict[str, Any]:
        sd = paths.state_dir()
        sd.mkdir(parents=True, exist_ok=True)
        return {
            "backend": "sqlite3",
            "dep_file": str(sd / "doit.sqlite3"),
            "subtasks": True,  # plain `doit list` shows every <stage>:<leg> task
            "verbosity": 2,
            "default_tasks": self.default_tasks(),
        }

    def task_creators(self) -> dict[str, Callable[[], Iterable[dict]]]:
        """``{"task_<stage>": generator}`` for dodo.py's globals."""
        out = {}
        for stage, plans in self.by_stage().items():
            out[f"task_{stage.replace('-', '_')}"] = _creator(stage, plans)
        return out


def _creator(stage: str, plans: list[TaskPlan]) -> Callable[[], Iterable[dict]]:
    def gen() -> Iterable[dict]:
        if len(plans) == 1 and not plans[0].name:
            yield to_doit(plans[0])
            return
        yield {"basename": stage, "name": None, "doc": f"{stage}: every selected leg"}
        for p in plans:
            yield to_doit(p)

    gen.__doc__ = f"{stage} stage"
    return gen


def to_doit(plan: TaskPlan) -> dict:
    """The doit task dict of one plan: no file_dep; ``uptodate`` compares the stamp."""
    d: dict[str, Any] = {
        "basename": plan.stage,
        "doc": plan.doc,
        "actions": [(_execute, [plan])],
        "uptodate": [(_uptodate, [plan])],
        "task_dep": list(plan.deps),
        "verbosity": 2,
    }
    if plan.name:
        d["name"] = plan.name
    return d


def _uptodate(plan: TaskPlan) -> bool:
    try:
        return state.is_current(plan.full_name, plan.inputs())
    except BundleGraphError:
        return False


def _execute(plan: TaskPlan):
    """Run one plan inside doit: stamp forgotten first, recorded only on success. Expected
    failures become a TaskFailed (no traceback); anything else is a bug and propagates."""
    from doit.exceptions import TaskFailed

    name = plan.full_name
    t0 = time.monotonic()
    try:
        inputs = plan.inputs()
        state.forget(name)
        outputs = plan.run()
        state.record(name, inputs, outputs, seconds=time.monotonic() - t0)
    except TaskSkipped as e:
        print(f"[{name}] SKIPPED after {time.monotonic() - t0:.1f}s: {e}", flush=True)
        return None
    except BundleGraphError as e:
        print(f"[{name}] FAILED after {time.monotonic() - t0:.1f}s", file=sys.stderr, flush=True)
        return TaskFailed(str(e))
    print(f"[{name}] done in {time.monotonic() - t0:.1f}s", flush=True)
    return None


def load_graph(bundles: str | Path, filters: Filters | None = None) -> Graph:
    """Validate ``bundles`` (raises :class:`SpecError` listing every problem), apply the
    filters and build every implemented stage's plans."""
    from . import overrides

    matrix = load_matrix(bundles)
    filters = filters or Filters()
    legs = select(matrix, filters)
    matrix = overrides.apply(matrix, legs, overrides.parse(filters.archs, filters.toolkit_source))
    ctx = Context(matrix, legs, filters)
    plans: list[TaskPlan] = []
    for _stage, planner in _planners():
        plans += planner(ctx)
    return Graph(ctx, plans)


__all__ = ["Filters", "Graph", "TaskPlan", "Context", "load_graph", "select", "upstream_digest", "SpecError"]
