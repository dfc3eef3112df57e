"""The plan of ``smoke:<leg>`` and ``smoke:tools-<leg>``: what runs, on which GPU, decided before
anything runs. :func:`plan_smoke` gives the :class:`SmokePlan` (the bundle, each check's command
with placeholders, the tiny model's command, the runtime directory and, for a GPU leg, its side's
probe and the :class:`Decision` it allows: :mod:`.sides`, each backend's own ``smoke`` module: CUDA's decides on host, driver, then the
bundle's fatbin coverage); :func:`plan_tools` plans the
``test-backend-ops`` build from it."""

from __future__ import annotations

from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...core import paths, proc
from ...core.lightclass import frozen
from ...core.platforms import platform
from ...schemas.records import BundleSpec, FetchContentPin
from ...toolchains.base import Resolved, this_host
from ...toolchains.tools import build_tools
from ..base import Context
from ..configure import ConfigurePlan, check_host, plan_configure
from ..source import plan_source, source_record_if_any
from .bench import BENCH_ARGS
from .line import LineReference, plan_line
from .side import Decision, Probe, op_args
from .sides import side_of

if TYPE_CHECKING:
    from ...toolchains.sdk_ref import SdkRef

TOOLS_CACHE = {
    "LLAMA_BUILD_TESTS": "ON",
    "GGML_CPU": "OFF",
    "GGML_CPU_ALL_VARIANTS": "OFF",
    "LLAMA_BUILD_TOOLS": "OFF",
    "LLAMA_BUILD_EXAMPLES": "OFF",
    "LLAMA_BUILD_SERVER": "OFF",
    "LLAMA_BUILD_APP": "OFF",
}
VOCABS = ("ggml-vocab-llama-spm.gguf", "ggml-vocab-llama-bpe.gguf")
"""The vocab models of a llama.cpp source (``models/``) the tiny model may take, in order."""
N_PREDICT = 8
"""Tokens each generation asks for."""


@frozen
class Check:
    """One smoke step: ``name`` (``devices``, ``op:MUL_MAT``, ``generate``, ...), ``argv`` with
    ``{bundle}``/``{model}``/``{dev}`` placeholders filled at run time."""

    name: str
    argv: list[str]


def qemu_sysroot(ctx: Context, leg: str) -> tuple[Path | None, str]:
    """``(sysroot, label)`` qemu-user runs ``leg``'s programs with: its pinned cross compiler's
    target C library (:attr:`~bundlegraph.toolchains.compiler.PinnedCompiler.cross_root`, the one
    the bundle was linked against), or ``(None, "")`` for a native or unpinned toolchain."""
    c = ctx.leg(leg).compiler
    if c is None or not ctx.leg(leg).toolchain.info.cross:
        return None, ""
    return c.cross_root, f"<{c.task}>/{c.cross_root.relative_to(c.prefix).as_posix()}"


@frozen
class SmokePlan:
    """What ``smoke:<leg>`` does. ``bundle``: the archive; ``record``/``log``; ``tools_dir``: the
    test-backend-ops build; ``checks`` in order; ``model_argv`` writes the tiny model;
    ``runtime_dir``: the toolkit directory holding the external CUDA runtime; ``info_file``: the
    release's info JSON name inside the bundle; ``backend``: the leg's backend (its GPU side:
    :mod:`.sides`); ``gpus``/``decision``: that side's probe and what it allows (None for a CPU
    leg)."""

    leg: str
    base: str | None
    os: str
    arch: str
    bundle: Path
    record: Path
    log: Path
    tools_dir: Path
    source_tree: Path
    checks: list[Check]
    model_argv: list[str]
    runtime_dir: Path | None
    exe: str = ""
    info_file: str = "BUNDLE_INFO.json"
    work_dir: Path = Path("build")
    """The leg's build directory: the unpacked bundle goes under it while the smoke runs, and a
    bundle that fails is moved to ``<work_dir>/smoke-failed/`` (out of ``dist/``)."""
    backend: str = "cpu"
    build_number: int = 0
    commit: str | None = None
    gpus: Probe | None = None
    decision: Decision | None = None
    consumed: dict[str, Any] = field(default_factory=dict)
    qemu_sysroot: Path | None = None
    """The target C library qemu-user runs a cross leg's programs with (:func:`qemu_sysroot`)."""
    qemu_label: str = ""
    """What the prepared plan read of upstream tasks and this host (``smoke._prepare_smoke``):
    ``bundle`` and ``source`` (package's and source's output digests), ``host``, ``how`` (how
    this host starts the bundle) and, for a GPU leg, ``test_backend_ops`` (the tools task's
    digest), ``ops`` and ``tools``; empty in a plan not prepared to run."""
    line: LineReference | None = None
    """A CUDA 13 leg's second throughput reference, the release's CUDA 12 bundle (:mod:`.line`)."""

    def key(self) -> dict[str, Any]:
        """What it consumed, each check's command (placeholders, no host paths: a changed command
        reruns) and, for a GPU leg, what its side's probe found (GPUs, the Vulkan driver)."""
        key = dict(self.consumed)
        key["checks"] = {c.name: c.argv for c in self.checks}
        if self.gpus is not None:
            key["gpus"] = self.gpus.key()
        return key

    def describe(self) -> dict[str, Any]:
        """The bundle, the record, the tools' folder, each check's command, the tiny model's command."""
        return {
            "bundle": self.bundle.as_posix(),
            "record": self.record.as_posix(),
            "tools_dir": self.tools_dir.as_posix(),
            "checks": {c.name: proc.quote(c.argv) for c in self.checks},
            "model": proc.quote(self.model_argv),
        }

    @property
    def cuda(self) -> bool:
        """Whether the leg is a CUDA leg."""
        return self.backend == "cuda"

    def check(self, name: str) -> Check:
        """The check called ``name``. Raises ``KeyError`` naming it."""
        for c in self.checks:
            if c.name == name:
                return c
        raise KeyError(f"smoke:{self.leg}: no check {name!r}")


@frozen
class GpuBuildPlan:
    """What the two builds of a GPU leg's smoke share (:class:`SmokeToolsPlan`,
    :class:`ReferencePlan`): ``smoke`` (the leg's :class:`SmokePlan`), ``decision`` (host and
    driver judged; nothing is built when it says no), and when it says yes a ``configure`` plan
    with this host's resolved tools (``cmake``/``ninja``, paths) and compilers (``resolved``).
    ``consumed``: the action-key inputs read when prepared (``smoke.tools_inputs``,
    ``smoke.reference_inputs``)."""

    smoke: SmokePlan
    decision: Decision
    configure: ConfigurePlan | None = None
    resolved: Resolved | None = None
    cmake: str = "cmake"
    ninja: str = "ninja"
    consumed: dict[str, Any] = field(default_factory=dict)

    def key(self) -> dict[str, Any]:
        return dict(self.consumed)

    def describe(self) -> dict[str, Any]:
        return {}


@frozen
class SmokeToolsPlan(GpuBuildPlan):
    """What ``smoke:tools-<leg>`` does (test-backend-ops for the GPU checks): the merge base's
    (else the leg's own) ``configure`` plan, built from the source ``commit``; its ``consumed``
    holds the source digest, the base's cache entries and toolchain text, the tools' cache, this
    host and its GPUs."""

    commit: str | None = None


def _configured_here(ctx: Context, leg: str, sdk: SdkRef | None) -> dict[str, Any]:
    """The fields of a :class:`GpuBuildPlan` that configure ``leg`` on this host: its host checked
    (:class:`HostMismatch` otherwise), the pinned tools found and its compilers resolved with
    ``sdk`` (:class:`ToolMissing` otherwise)."""
    tc = check_host(ctx, leg)
    tools = build_tools()
    resolved = tc.resolve(sdk)
    return {
        "configure": plan_configure(ctx, leg, tools, resolved.binaries),
        "resolved": resolved,
        "cmake": str(tools.cmake.path),
        "ninja": str(tools.ninja.path),
    }


def plan_smoke(ctx: Context, leg: str) -> SmokePlan:
    """The smoke plan of ``leg`` (nothing written). For a GPU leg its side probes here (CUDA:
    ``nvidia-smi``, once per process: :func:`bundlegraph.core.gpus.probe`; Vulkan: the driver chosen)
    and the plan carries the probe and the decision it allows (host and driver); the run may add
    the bundle's device code to that decision (CUDA's fatbin coverage), and the key holds the
    same probe."""
    spec = ctx.spec(leg)
    bdir = paths.build_dir(leg)
    exe = platform(spec.os).exe_suffix
    rec = source_record_if_any(leg)
    tree = Path(rec.tree) if rec is not None else plan_source(ctx.release, ctx.matrix.root).tree
    py = proc.python_exe()
    bundle = paths.dist_dir() / spec.bundle_name(ctx.release.tag, ctx.release.bundle_prefix)
    cli, simple, tbo = (f"{{bundle}}/{name}{exe}" for name in ("llama-cli", "llama-simple", "test-backend-ops"))
    checks = [
        Check("version", [cli, "--version"]),
        # ggml logs each backend it loads (or why not) when a program starts loading them:
        # llama-simple does, with a model; llama-cli --list-devices of a real llama.cpp
        # prints no log, so it is the check only where no model can be made (the stand-in)
        Check("backends", [simple, "-m", "{model}", "-n", "1", "-ngl", "0", "Hello"]),
        Check("list-devices", [cli, "--list-devices"]),
        # the host checks compute on the CPU (-ngl 0; llama-simple offloads 99 layers by
        # default): the same text on every host, and no GPU log lines inside it
        Check("generate", [simple, "-m", "{model}", "-n", str(N_PREDICT), "-ngl", "0", "Hello"]),
        Check(
            "serve",
            [
                f"{{bundle}}/llama-server{exe}",
                "-m",
                "{model}",
                "--host",
                "127.0.0.1",
                "--port",
                "{port}",
                "-c",
                "256",
                "-t",
                "2",
                "-ngl",
                "0",
            ],
        ),
    ]
    rdir: Path | None = None
    line: LineReference | None = None
    gpus: Probe | None = None
    side = side_of(spec.backend)
    if side is not None:
        checks += [
            Check("devices", [cli, "--list-devices"]),
            Check("generate-gpu", [simple, "-m", "{model}", "-n", str(N_PREDICT), "-ngl", "99", "Hello"]),
        ]
        checks += [
            Check(
                f"op:{op}",
                [tbo, "test", "-b", "{dev}", *op_args(op, params), *(["-j", "{jobs}"] if side.PARALLEL_OPS else [])],
            )
            for op, params in side.OPS
        ]
        if spec.os in side.REFERENCE_JOBS:  # the throughput check (:mod:`.throughput`)
            bench = f"llama-bench{exe}"
            sib = side.sibling(ctx, leg)
            line = plan_line(ctx, sib, side.runtime_dir(ctx, sib.leg) if sib else None)
            checks += [
                Check("throughput-reference", [f"{{reference}}/{bench}", *BENCH_ARGS]),
                *([Check("throughput-line", [f"{{line}}/{bench}", *BENCH_ARGS])] if line is not None else []),
                Check("throughput", [f"{{bundle}}/{bench}", *BENCH_ARGS]),
            ]
        gpus = side.probe()
        rdir = side.runtime_dir(ctx, leg)
    model_argv = [
        py,
        "-m",
        "bundlegraph.pipeline.smoke.tinygguf",
        "--gguf-py",
        (tree / "gguf-py").as_posix(),
        "--vocab",
        "{vocab}",
        "--out",
        "{model}",
    ]
    return SmokePlan(
        leg=leg,
        base=spec.merge.base if spec.merge else None,
        os=spec.os,
        arch=spec.arch,
        bundle=bundle,
        record=bdir / "smoke.json",
        log=ctx.log(leg, "smoke"),
        tools_dir=bdir / "smoke-tools",
        source_tree=tree,
        checks=checks,
        model_argv=model_argv,
        runtime_dir=rdir,
        exe=exe,
        info_file=ctx.release.info_file,
        work_dir=bdir,
        backend=spec.backend,
        build_number=ctx.release.build_number,
        commit=rec.commit if rec is not None else None,
        gpus=gpus,
        decision=side.decide(spec.os, spec.arch, this_host(), gpus) if side is not None and gpus is not None else None,
        qemu_sysroot=qemu_sysroot(ctx, leg)[0],
        qemu_label=qemu_sysroot(ctx, leg)[1],
        line=line,
    )


@frozen
class ReferencePlan(GpuBuildPlan):
    """What ``smoke:reference-<leg>`` does (:mod:`.reference`): the leg's own ``configure`` plan
    (its toolchain: the bundle's compilers and toolkit), upstream's release ``job`` for the
    bundle's os, the toolkit's major (``toolkit_major``: picks the job's matrix entry) and the
    GPUs' ``sms``."""

    job: str = field(kw_only=True)
    toolkit_major: int = 0
    sms: list[int] = field(default_factory=list)
    pins: tuple[FetchContentPin, ...] = ()
    """The release's FetchContent pins (served where upstream's flags would download)."""
    backend: str = "cuda"
    """The leg's backend: the reference builds ``ggml-<backend>`` (:func:`.reference.targets`)."""
    cache: Path | None = None


def plan_reference(ctx: Context, leg: str) -> ReferencePlan:
    """The :class:`ReferencePlan` of ``leg`` now: from the smoke plan's GPU decision; when the
    GPU steps can run here, checks the host and resolves the leg's own tools and compilers
    (:class:`HostMismatch`, :class:`ToolMissing` otherwise)."""
    smoke = plan_smoke(ctx, leg)
    spec = ctx.spec(leg)
    side = side_of(spec.backend)
    d = smoke.decision
    assert side is not None and d is not None and spec.os in side.REFERENCE_JOBS  # planned for such legs only
    job = side.REFERENCE_JOBS[spec.os]
    if not d.run:
        return ReferencePlan(smoke, d, job=job)
    problem = side.reference_problem(smoke.gpus)
    if problem:  # the GPU steps run (lavapipe), but no speed figure here would mean anything
        return ReferencePlan(smoke, Decision(False, problem, probe=d.probe), job=job)
    return ReferencePlan(
        smoke,
        d,
        job=job,
        **_configured_here(ctx, leg, ctx.leg(leg).sdk),
        toolkit_major=_toolkit_major(spec),
        sms=side.reference_sms(smoke.gpus),
        pins=tuple(ctx.release.fetchcontent),
        cache=ctx.cache,
        backend=spec.backend,
    )


def plan_tools(ctx: Context, leg: str) -> SmokeToolsPlan:
    """The :class:`SmokeToolsPlan` of ``leg`` now: from the smoke plan's GPU decision; when the smoke test can run
    here, checks the host and resolves tools and compilers (:class:`HostMismatch`,
    :class:`ToolMissing` otherwise)."""
    smoke = plan_smoke(ctx, leg)
    d = smoke.decision
    assert d is not None  # a GPU leg's plan (only GPU legs have a tools task)
    if not d.run:
        return SmokeToolsPlan(smoke, d)
    return SmokeToolsPlan(smoke, d, **_configured_here(ctx, smoke.base or leg, None), commit=smoke.commit)


def _toolkit_major(spec: BundleSpec) -> int:
    """The major of the toolkit the leg's spec names (its backend's manifest fields: CUDA's
    ``13.4`` -> 13), which picks upstream's matrix entry for the reference; 0: none (every entry)."""
    from ...installer.entry import entry_side

    version = entry_side(spec.backend).fields(spec, None).toolkit_version
    return int(version.split(".")[0]) if version else 0


__all__ = [
    "N_PREDICT",
    "TOOLS_CACHE",
    "VOCABS",
    "Check",
    "Decision",
    "ReferencePlan",
    "SmokePlan",
    "SmokeToolsPlan",
    "plan_reference",
    "plan_smoke",
    "plan_tools",
]
