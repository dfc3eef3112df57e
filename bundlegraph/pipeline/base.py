"""What every stage module and the graph share, and nothing else: the load-time
:class:`Filters`, the typed :class:`Context` a planner gets, the :class:`TaskPlan` it returns,
:func:`upstream_digest` (what a task's key reads of an upstream task) and :func:`file_listing`.
The stages themselves are listed in :mod:`.stages`.

Layering (checked by import-linter in CI, ``[tool.importlinter]`` in pyproject.toml):
``bundlegraph.graph.context`` imports the stage modules, the stage modules import this module, and no
stage imports ``bundlegraph.graph.context``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import field
from functools import cached_property, partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from ..core import paths, state
from ..core.errors import BundleGraphError
from ..core.fsutil import sha256_file
from ..core.lightclass import frozen, mutable
from ..schemas.records import BundleSpec, Matrix, Release
from .compile.shards import ShardRef

if TYPE_CHECKING:
    from ..toolchains.base import Toolchain
    from ..toolchains.compiler import PinnedCompiler
    from ..toolchains.sdk_ref import SdkRef


@frozen
class Filters:
    """Load-time filters: keep legs whose ``profile.name`` is ``only_profile`` and/or whose id
    is ``only_leg``. ``artifacts``: a directory of bundles built elsewhere (merge bases).
    ``built``: a directory of build outputs made elsewhere (:func:`imported_build`).
    ``archs``/``toolkit_source``: local-build overrides (raw text, :mod:`bundlegraph.backends.cuda.overrides`)."""

    only_profile: str | None = None
    only_leg: str | None = None
    artifacts: Path | None = None
    built: Path | None = None
    archs: str | None = None
    toolkit_source: str | None = None
    compile_only: bool = False
    """The run was asked only for compile-side tasks (``doit build:L``, as a compile runner's job
    runs): a merge base bundle is not needed, so its absence refuses nothing."""
    shard: ShardRef | None = None
    """``doit build:L shard=I/N``: the build tasks of legs with ``[build] shards = N`` compile only
    shard I (:mod:`bundlegraph.pipeline.shard_build`)."""

    @classmethod
    def from_env(cls, **overrides: str | None) -> Filters:
        """Values from ``overrides`` (doit ``key=value`` vars, CLI flags) else the environment
        (``BUNDLEGRAPH_ONLY_PROFILE``, ``BUNDLEGRAPH_ONLY_LEG``, ``BUNDLEGRAPH_ARTIFACTS``,
        ``BUNDLEGRAPH_BUILT``, ``BUNDLEGRAPH_ARCHS``, ``BUNDLEGRAPH_TOOLKIT_SOURCE``)."""

        from ..core import settings

        def pick(name: str, env: str) -> str | None:
            v = overrides.get(name)
            return (settings.get(env) if v is None else v) or None

        art = pick("artifacts", "BUNDLEGRAPH_ARTIFACTS")
        built = pick("built", "BUNDLEGRAPH_BUILT")
        return cls(
            only_profile=pick("only_profile", "BUNDLEGRAPH_ONLY_PROFILE"),
            only_leg=pick("only_leg", "BUNDLEGRAPH_ONLY_LEG"),
            artifacts=Path(art).resolve() if art else None,
            built=Path(built).resolve() if built else None,
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
    if filters.artifacts is not None and not filters.artifacts.is_dir():
        raise BundleGraphError(f"artifacts={filters.artifacts}: not a directory (the bundles other runners built)")
    if filters.built is not None and not filters.built.is_dir():
        raise BundleGraphError(f"built={filters.built}: not a directory (the build outputs other runners made)")
    if filters.only_leg:
        if filters.only_leg not in matrix.legs:
            raise BundleGraphError(f"only_leg={filters.only_leg}: no such leg; legs: {', '.join(matrix.legs)}")
        legs = [filters.only_leg]
    if filters.only_profile:
        profiles = sorted({s.profile.name for s in matrix.legs.values()})
        if filters.only_profile not in profiles:
            raise BundleGraphError(
                f"only_profile={filters.only_profile}: no leg has this profile; profiles: {', '.join(profiles)}"
            )
        legs = [leg for leg in legs if matrix.legs[leg].profile.name == filters.only_profile]
        if not legs:  # only with only_leg too: the profile exists, the leg is not of it
            assert filters.only_leg is not None
            raise BundleGraphError(
                f"only_profile={filters.only_profile} only_leg={filters.only_leg}: together they select no leg "
                f"(the profile of {filters.only_leg} is {matrix.legs[filters.only_leg].profile.name})"
            )
    return legs


class LegContext:
    """What one leg's stages share, resolved once per graph load (:meth:`Context.leg`): the
    ``spec``, its ``toolchain``, its CUDA ``toolkit`` (None for a CPU leg), its build directory,
    bundle name and log files. Each is computed on first use and kept: the stages used to derive
    the toolchain and the toolkit again at each call site."""

    def __init__(self, ctx: Context, leg: str):
        self.ctx, self.leg = ctx, leg
        self.spec: BundleSpec = ctx.matrix.legs[leg]

    @cached_property
    def toolchain(self) -> Toolchain:
        """The leg's toolchain (its machine file given its kind's behaviour)."""
        from ..toolchains import get

        return get(self.spec.toolchain)

    @cached_property
    def sdk(self) -> SdkRef | None:
        """The leg's SDK as its backend's SDK module gives it (:meth:`bundlegraph.toolkit.sdk.SdkModule.ref`):
        the :class:`~bundlegraph.toolchains.cuda.CudaToolkit` of a CUDA leg, the
        :class:`~bundlegraph.backends.vulkan.sdk_ref.VulkanSdk` of a Vulkan leg, the
        :class:`~bundlegraph.backends.hip.sdk_ref.HipSdk` of a HIP leg; None for a backend without an SDK.
        Stages ask it (:class:`~bundlegraph.toolchains.sdk_ref.SdkRef`), never which one it is; its
        ``task`` is the SDK task configure waits for. Raises
        :class:`~bundlegraph.core.errors.ToolkitError` for an unusable toolkit spec."""
        from ..schemas import backend as backends
        from ..toolkit.sdk import sdk_module

        mod = sdk_module(backends.backend(self.spec.backend))
        if mod is None:
            return None
        f = self.ctx.matrix.files.get(self.leg)
        return mod.ref(self.spec, self.ctx.matrix.root, str(f) if f else "")

    @cached_property
    def compiler(self) -> PinnedCompiler | None:
        """The leg's pinned compiler (its machine file's ``[compiler]``,
        :mod:`bundlegraph.toolchains.compiler`): where ``toolkit:gcc-…`` installs it; None for a
        toolchain without one (MSVC, Apple clang). Its ``task`` is the compiler task configure waits for."""
        from ..toolchains.compiler import compiler_of

        return compiler_of(self.toolchain.info)

    @cached_property
    def build_dir(self) -> Path:
        """``build/<leg>/`` of the work directory."""
        return paths.build_dir(self.leg)

    @cached_property
    def bundle_name(self) -> str:
        """The leg's bundle file name in this release."""
        rel = self.ctx.matrix.release
        return self.spec.bundle_name(rel.tag, rel.bundle_prefix)

    def log(self, stage: str) -> Path:
        """``build/<leg>/logs/<stage>.log``: the full output of a stage's programs."""
        return self.build_dir / "logs" / f"{stage}.log"


@mutable
class Context:
    """What stage planners get: the validated ``matrix``, the ``legs`` kept by the filters,
    the ``filters``; ``workdir`` (``build/``, ``dist/``, ``.bundlegraph/``) and ``cache`` (the
    download and toolkit cache) as resolved when the graph loaded."""

    matrix: Matrix
    legs: list[str]
    filters: Filters
    workdir: Path = field(default_factory=paths.workdir)
    cache: Path = field(default_factory=paths.cache_root)

    _legs: dict[str, LegContext] = field(default_factory=dict, repr=False)

    @property
    def release(self) -> Release:
        return self.matrix.release

    def leg(self, leg: str) -> LegContext:
        """``leg``'s :class:`LegContext` (made once per graph load)."""
        got = self._legs.get(leg)
        if got is None:
            got = self._legs[leg] = LegContext(self, leg)
        return got

    def spec(self, leg: str) -> BundleSpec:
        return self.matrix.legs[leg]

    def bundle_name(self, leg: str) -> str:
        """The bundle file name of ``leg`` in this release (``app-<tag>-<os>-<arch>-<profile>...``)."""
        return self.leg(leg).bundle_name

    def imported_build(self, leg: str) -> Path | None:
        """Where ``leg``'s build output comes from when it was made on another runner:
        ``<built>/<leg>/`` or ``<built>/built-<leg>/`` (the folder ``actions/download-artifact``
        makes for an artifact ``built-<leg>``); None when ``built`` is unset or holds nothing for
        ``leg`` (then the leg compiles here). Raises when ``built`` is not a directory."""
        b = self.filters.built
        if b is None:
            return None
        if not b.is_dir():
            raise BundleGraphError(f"built={b}: not a directory (the build outputs of other runners)")
        return next((d for d in (b / leg, b / f"built-{leg}") if d.is_dir()), None)

    def host_problem(self, leg: str) -> str | None:
        """Why ``leg`` cannot be compiled on this host (one line naming the host it needs and how
        to bring its build output instead), or None: it compiles here, or its output is imported
        (:meth:`imported_build`). Its source and toolkit tasks refuse with it before downloading."""
        if self.imported_build(leg) is not None:
            return None
        spec = self.spec(leg)
        tc = self.leg(leg).toolchain
        problems = tc.host_problems()
        if not problems:
            return None
        return (
            f"{leg} compiles on a {tc.info.build_os} {tc.info.build_arch} host (runner '{spec.runner}'): "
            f"{problems[0]}; run it there, or bring its build output from that runner with built=DIR"
        )

    def merge_base_problem(self, leg: str) -> str | None:
        """Why ``leg``'s merge base bundle cannot be had, when its base leg is not built in this
        run (filtered out, or ``artifacts=`` given): checked by the leg's first task, before the
        hours of a CUDA build; None when the base is built here or its bundle is found."""
        merge = self.spec(leg).merge
        if self.filters.compile_only or merge is None or (self.filters.artifacts is None and merge.base in self.legs):
            return None
        try:
            locate_base(self.bundle_name(merge.base), paths.dist_dir(), self.filters.artifacts)
        except BundleGraphError as e:
            return f"{leg} merges into {merge.base}, which this run does not build: {e}"
        return None

    def log(self, leg: str, stage: str) -> Path:
        """``build/<leg>/logs/<stage>.log``: the full output of a stage's programs."""
        return self.leg(leg).log(stage)


class StagePlan(Protocol):
    """What every stage's frozen plan value (``<Stage>Plan``) knows of itself: its action key and
    how ``bundlegraph plan`` prints it. The key comes from the plan's own fields (the upstream
    digests it consumed are among them), so what is recorded, shown and run is one value."""

    def key(self) -> dict[str, Any]:
        """The action-key inputs (canonical JSON of it is the stamp's key)."""
        ...

    def describe(self) -> dict[str, Any]:
        """What ``bundlegraph plan`` prints of it besides the key (commands, paths)."""
        ...


P = TypeVar("P", bound=StagePlan)
"""The plan type of a :class:`Prepared` value (a stage's ``<Stage>Plan``)."""


@frozen
class Prepared(Generic[P]):
    """One task's plan value for one run, computed once after its upstream tasks ran: ``plan``
    (the frozen ``<Stage>Plan`` the run receives, e.g. ``Prepared[ConfigurePlan]``: the stage's
    run is typed by it, so no run checks what it was handed) and ``key``, what ``plan.key()``
    gave when it was prepared (the stamp records it; ``bundlegraph plan``/``explain`` show it).
    Make one with :meth:`of`. ``stale``: reasons the task must run that its key cannot hold (a
    record of a finished run naming a place that moved: :mod:`bundlegraph.pipeline.source`); empty
    for almost every task, so keys keep their form (issue 41)."""

    key: dict[str, Any]
    plan: P
    stale: tuple[str, ...] = ()

    @classmethod
    def of(cls, plan: P) -> Prepared[P]:
        """``plan`` with its key, computed once."""
        return cls(plan.key(), plan)


def known(plan: P) -> P:
    """``plan`` itself: the ``preview`` of a task whose plan is known when the graph loads is
    ``partial(known, plan)``."""
    return plan


R = TypeVar("R")


def run_plan(run: Callable[[P], R], prepared: Prepared[P]) -> R:
    """``run(prepared.plan)``: a task's ``apply`` is ``partial(run_plan, <the stage's run>)``, so
    the run gets the plan alone."""
    return run(prepared.plan)


@mutable
class TaskPlan:
    """One graph task before it becomes a doit dict.

    - ``stage``/``name``: the task is ``<stage>:<name>``; ``leg`` the leg it belongs to (None
      for shared tasks such as toolkits and the manifest).
    - ``prepare``: returns the task's :class:`Prepared` value; called lazily (after upstream
      tasks ran), so it may read upstream records and stamps (:func:`upstream_digest`). The
      graph calls it once per run: the up-to-date check compares its ``key``, and ``apply``
      receives the same object, so what is recorded, shown and run cannot disagree.
    - ``apply``: runs the stage from that value's ``plan`` alone and returns the output files
      to fingerprint.
    - ``deps``: full names of tasks that must run first.
    - ``preview``: the task's plan value as it can be known before any task ran, on any host,
      with no side effects (configure before its source is fetched shows placeholders):
      ``bundlegraph plan`` prints its :meth:`StagePlan.describe`. None: nothing is printed
      besides the doc and the dependencies.
    - ``recorded``: False for a task that records no stamp (a shard build).
    """

    stage: str
    name: str
    doc: str
    prepare: Callable[[], Prepared[Any]]
    apply: Callable[[Prepared[Any]], list[Any]]
    deps: list[str] = field(default_factory=list)
    leg: str | None = None
    preview: Callable[[], StagePlan] | None = None
    recorded: bool = True
    """False for a task that is never complete (a shard build): it has no stamp, is never up to
    date and runs every time (ninja skips what is already built)."""

    def prepared(self) -> Prepared[Any]:
        """The task's plan value now (what ``plan``/``explain`` show)."""
        return self.prepare()

    def key(self) -> dict[str, Any]:
        """The action-key inputs now."""
        return self.prepared().key

    def describe(self) -> dict[str, Any]:
        """What ``bundlegraph plan`` prints of the task: its :attr:`preview`'s description."""
        return self.preview().describe() if self.preview is not None else {}

    @property
    def full_name(self) -> str:
        return f"{self.stage}:{self.name}" if self.name else self.stage


def leg_task(
    stage: str,
    ctx: Context,
    leg: str,
    *,
    doc: str,
    deps: list[str],
    prepare: Callable[[Context, str], Prepared[P]],
    run: Callable[[P], list[Any]],
    preview: Callable[[Context, str], StagePlan] | None = None,
    name: str | None = None,
) -> TaskPlan:
    """The task ``<stage>:<leg>`` (``<stage>:<name>`` when ``name`` is given: a leg's second task
    of one stage, such as ``smoke:tools-<leg>``) of a stage whose ``prepare(ctx, leg)`` makes the
    task's plan value, ``run(plan)`` runs it (:func:`run_plan`) and ``preview(ctx, leg)`` shows it
    before any task ran (None: nothing but the doc and dependencies)."""
    return TaskPlan(
        stage=stage,
        name=name or leg,
        leg=leg,
        doc=doc,
        deps=deps,
        prepare=partial(prepare, ctx, leg),
        apply=partial(run_plan, run),
        preview=partial(preview, ctx, leg) if preview is not None else None,
    )


def locate_base(asset: str, dist: Path, artifacts: Path | None) -> Path:
    """The base bundle ``asset``: under ``artifacts`` (searched recursively, as CI artifact
    downloads nest it one directory deep) when given, else ``dist/asset``. Raises naming where
    it looked; two different files of that name under ``artifacts`` are an error."""
    if artifacts is not None:
        hits = sorted(p for p in artifacts.rglob(asset) if p.is_file())
        if len({sha256_file(p) for p in hits}) > 1:
            raise BundleGraphError(
                f"{asset}: {len(hits)} different files in {artifacts}: " + ", ".join(str(h) for h in hits)
            )
        if hits:
            return hits[0]
        raise BundleGraphError(f"{asset}: the merge base bundle is not in the artifacts directory {artifacts}")
    p = dist / asset
    if not p.is_file():
        raise BundleGraphError(
            f"{asset}: the merge base bundle is not in {dist}; build it in this run (select its "
            f"leg) or load the graph with artifacts=DIR holding it"
        )
    return p


def file_listing(files: Iterable[Path], root: Path | None = None) -> list[tuple[str, int, int]]:
    """``(name, size in bytes, mtime in ns)`` of each of ``files`` that is a file, sorted: what a
    key holds of files it does not hash. The name is the POSIX path relative to ``root``, else
    the file's own name."""
    return sorted(
        (p.relative_to(root).as_posix() if root else p.name, p.stat().st_size, p.stat().st_mtime_ns)
        for p in files
        if p.is_file()
    )


def upstream_digest(task: str) -> str:
    """The output digest recorded by ``task``'s stamp (what a downstream key consumes), or
    ``"missing"`` when the task has not completed."""
    st = state.load(task)
    return st.output_digest() if st else "missing"
