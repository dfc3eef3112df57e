"""Stage ``configure``: ``cmake -S <source> -B build/<leg>/cmake -G Ninja`` with the leg's
generated toolchain file and cache entries.

Pure plan (:func:`plan_configure`, starts no process) plus run (:func:`run_configure`). Before
any CMake runs, the host is checked: a leg whose toolchain needs another build host fails at
once naming it (:class:`HostMismatch`), a missing compiler says how to get it, the toolkit's
files the configure needs are checked, and (MSVC + CUDA) ``_MSC_VER`` against nvcc.

What a backend adds to its legs' configure (hooks, checks after cmake, record entries) is its
package's ``configure`` module (:class:`ConfigureSide`; CUDA's: nvcc's seeds and checks), which
this stage asks without knowing the backend.

Layout of ``build/<leg>/``: ``toolchain.cmake`` (generated), ``bundlegraph-hooks.cmake`` (what
the backend's side asks, CUDA's per-source seeds and MSVC ``/Zc:preprocessor`` where missing;
any leg: the release's fingerprint in ``BUILD_TARGET``), ``cmake/`` (CMake's binary directory; llama.cpp
and the stand-in put every library and program in ``cmake/bin``), ``configure.json`` (the full
command, the toolchain file path and text digest, cache entries, tool versions, resolved
compilers) and ``logs/configure.log``. The stamp's outputs are ``configure.json`` and
``toolchain.cmake``, plus the presence (not the content: a build may re-run CMake) of
``cmake/CMakeCache.txt`` and ``cmake/build.ninja``, so a deleted binary directory configures again.

Each configure runs with ``--fresh`` (CMake >= 3.24): it only runs when an input changed, and
then no entry of the previous cache (a removed spec key, a cached compiler) may survive; ninja
still rebuilds only objects whose commands changed.
"""

from __future__ import annotations

import re
from dataclasses import field, replace
from functools import cache as _memo
from pathlib import Path
from typing import Any, Protocol, cast

from ..core import proc, settings
from ..core.errors import BundleGraphError, HostMismatch, ToolkitError
from ..core.fsutil import atomic_write_bytes, atomic_write_json
from ..core.lightclass import frozen
from ..core.report import say, warn
from ..core.state import Present, key_of
from ..schemas import backend as backends
from ..schemas.records import BundleSpec, FetchContentPin
from ..toolchains import get as get_toolchain
from ..toolchains.base import Toolchain
from ..toolchains.cmake_hooks import hooks_script
from ..toolchains.compiler import PinnedCompiler
from ..toolchains.linux import GccLinux, planned_binaries
from ..toolchains.prefix_maps import PrefixMaps
from ..toolchains.sdk_ref import SdkRef
from ..toolchains.tools import BuildTools, build_tools
from .base import Context, Prepared, leg_task, upstream_digest
from .compile.cmake_cache import cache_entries
from .compile.fetchcontent import pins_used, source_dirs
from .compile.fetchcontent import prepare as prepare_fetch
from .compile.git_blind import without_git
from .compile.launcher import ProbeTools, compiler_launcher
from .source import plan_source, source_record_if_any

NAME = "configure"
"""The stage's name: its tasks are ``configure:<leg>`` (:mod:`bundlegraph.pipeline.stages`)."""

UNKNOWN = "<known after source:{leg}>"


@frozen
class ConfigurePlan:
    """Everything configure will do for one leg. ``argv`` is the full cmake command;
    ``toolchain_text`` the toolchain file; ``cache`` the ``-D`` entries; ``backend`` the leg's
    backend (its :class:`ConfigureSide`); ``sdk`` the backend's SDK (its ``task`` is the toolkit task
    configure waits for);
    ``binaries`` the resolved compilers;
    ``spec_keys``/``spec_file``: the ``[cmake]`` keys the spec sets and its file (a key the project
    does not declare fails the configure, :func:`spec_key_problems`)."""

    leg: str
    toolchain: str
    build_dir: Path
    cmake_dir: Path
    toolchain_file: Path
    toolchain_text: str
    hooks_file: Path | None
    hooks_text: str
    source_tree: Path
    source_digest: str
    cache: dict[str, str]
    argv: list[str]
    backend: str
    """The leg's backend (its :class:`ConfigureSide` adds hooks, checks and records: :func:`side_of`)."""
    record: Path
    log: Path
    sdk: SdkRef | None = None
    """The leg's backend SDK (:attr:`~.base.LegContext.sdk`: the CUDA toolkit of a CUDA leg, the
    Vulkan SDK of a Vulkan leg, None for CPU), asked, never told apart; its task is the toolkit
    task configure waits for."""
    binaries: dict[str, str] = field(default_factory=dict)
    spec_keys: tuple[str, ...] = ()
    spec_file: str = ""
    prefix_maps: PrefixMaps | None = None
    """The build-host roots every compile maps to stable names (:mod:`~bundlegraph.toolchains.prefix_maps`)."""
    compiler: PinnedCompiler | None = None
    """The leg's pinned compiler (:attr:`~.base.LegContext.compiler`; None: MSVC, Apple clang)."""
    host_problem: str | None = None
    """Why this host cannot compile the leg (None: it can); shown by ``bundlegraph plan``."""
    fetch: tuple[FetchContentPin, ...] = ()
    """The release's FetchContent pins the leg turns on (:mod:`.compile.fetchcontent`), unpacked
    under ``fetch_cache`` before cmake runs."""
    fetch_cache: Path | None = None
    consumed: dict[str, Any] = field(default_factory=dict)
    """What the prepared plan read of upstream tasks and this host (:func:`prepare`):
    ``toolkit`` (the toolkit task's output digest, None for a CPU leg), ``tools`` (cmake's and
    ninja's versions), ``compilers`` (the resolved compilers' versions and environment) and,
    when ``BUNDLEGRAPH_LAUNCHER`` is set, ``launcher``; empty in a plan not prepared to run."""

    def command(self) -> str:
        return proc.quote(self.argv)

    def key(self) -> dict[str, Any]:
        """The toolchain, its file, the hooks, the cache entries, the command (the program by its
        name), the source digest, the toolkit's digest and prefix, tool and compiler versions, and
        that git is blind to the tree (:mod:`.compile.git_blind`)."""
        c = self.consumed
        inputs = {
            "toolchain": self.toolchain,
            "toolchain_file": self.toolchain_text,
            "hooks": self.hooks_text,
            "cache": self.cache,
            "argv": [Path(a).name if i == 0 else a for i, a in enumerate(self.argv)],
            "source_digest": self.source_digest,
            "toolkit": c.get("toolkit"),
            "toolkit_prefix": self.sdk.root if self.sdk else None,
            "tools": c.get("tools"),
            "compilers": c.get("compilers"),
            "git": "blind",  # configure and build run with GIT_DIR naming no repository (.compile.git_blind)
        }
        # BUNDLEGRAPH_LAUNCHER=none/ccache/sccache configures again (the default keeps the key's form)
        if c.get("launcher"):
            inputs["launcher"] = c["launcher"]
        return inputs

    def describe(self) -> dict[str, Any]:
        """The build host it needs, the toolchain file (path and text), the configure command,
        the hooks file, where each nvcc flag comes from, and why this host refuses it (if so)."""
        tc = get_toolchain(self.toolchain)
        d: dict[str, Any] = {
            "build_host": f"{tc.info.build_os} {tc.info.build_arch}",
            "toolchain_file_path": self.toolchain_file.as_posix(),
            "configure": self.command(),
            "toolchain_file": self.toolchain_text,
        }
        if self.hooks_file:
            d["hooks_file"] = self.hooks_file.as_posix()
        d |= side_of(self.backend).describe(self, tc)
        if self.host_problem:
            d["on_this_host"] = (
                f"refused before any download (by source:{self.leg}, the leg's first task): {self.host_problem}"
            )
        return d


class ConfigureSide(Protocol):
    """What a backend adds to its legs' configure: its package's ``configure`` module, found by
    name (:func:`bundlegraph.schemas.backend.plug_in`; CUDA's: :mod:`bundlegraph.backends.cuda.configure`).
    A backend without one adds nothing (:data:`ADDS_NOTHING`). The stage asks these and never
    which backend or SDK it holds."""

    LANGUAGES: tuple[str, ...]
    """the GPU languages the launcher probe compiles beside C and C++ (``CUDA``)"""

    def cache_entries(self, spec: BundleSpec) -> dict[str, str]:
        """the cache entries it derives from the leg's own table (:func:`~.compile.cmake_cache.backend_entries`)"""
        ...

    def device_targets(self, spec: BundleSpec) -> int:
        """how many GPU targets each of the leg's device sources compiles for: the build's memory
        per job (:mod:`.compile.jobs`) and the shard planner's costs (:mod:`.compile.costs`) scale
        with it (CUDA: its archs; 0: not counted)"""
        ...

    def hooks(self, tc: Toolchain, sdk: SdkRef | None) -> tuple[bool, str | None]:
        """``(seeds, host_flag)`` of the project-include hooks (:func:`~bundlegraph.toolchains.cmake_hooks.hooks_script`)"""
        ...

    def prefix_root(self, sdk: SdkRef | None) -> Path | None:
        """the SDK root every compile maps to a stable name (:class:`~bundlegraph.toolchains.prefix_maps.PrefixMaps`
        ``toolkit``; None: none)"""
        ...

    def describe(self, plan: ConfigurePlan, tc: Toolchain) -> dict[str, Any]:
        """entries ``bundlegraph plan`` shows beside the configure command"""
        ...

    def probe_tools(self, plan: ConfigurePlan, tc: Toolchain, base: ProbeTools) -> ProbeTools:
        """``base`` (the C probe) with what the launcher probe compiles of its languages"""
        ...

    def summary(self, plan: ConfigurePlan) -> str:
        """the SDK as the configure's log line names it"""
        ...

    def record(self, plan: ConfigurePlan) -> dict[str, Any]:
        """entries ``configure.json`` keeps of it (empty: none)"""
        ...

    def checks(self, plan: ConfigurePlan, tc: Toolchain) -> dict[str, Any]:
        """its checks after cmake, what held (raises on a violation)"""
        ...


class _AddsNothing:
    """The :class:`ConfigureSide` of a backend whose package has no ``configure`` module."""

    LANGUAGES: tuple[str, ...] = ()

    def cache_entries(self, spec: BundleSpec) -> dict[str, str]:
        return {}

    def device_targets(self, spec: BundleSpec) -> int:
        return 0

    def hooks(self, tc: Toolchain, sdk: SdkRef | None) -> tuple[bool, str | None]:
        return False, None

    def prefix_root(self, sdk: SdkRef | None) -> Path | None:
        return None

    def describe(self, plan: ConfigurePlan, tc: Toolchain) -> dict[str, Any]:
        return {}

    def probe_tools(self, plan: ConfigurePlan, tc: Toolchain, base: ProbeTools) -> ProbeTools:
        return base

    def summary(self, plan: ConfigurePlan) -> str:
        return plan.sdk.root if plan.sdk is not None else "-"

    def record(self, plan: ConfigurePlan) -> dict[str, Any]:
        return {}

    def checks(self, plan: ConfigurePlan, tc: Toolchain) -> dict[str, Any]:
        return {}


ADDS_NOTHING: ConfigureSide = _AddsNothing()
"""The side of a backend that adds nothing to its configure (CPU, Vulkan, HIP, Metal, OpenCL)."""


@_memo
def side_of(backend: str) -> ConfigureSide:
    """The :class:`ConfigureSide` of backend ``backend`` (its spec name)."""
    mod = backends.plug_in(backends.backend(backend), "configure")
    return cast(ConfigureSide, mod) if mod is not None else ADDS_NOTHING


def _source(ctx: Context, leg: str) -> tuple[Path, str, str | None]:
    rec = source_record_if_any(leg)
    if rec is not None:
        return Path(rec.tree), rec.digest, rec.commit
    sp = plan_source(ctx.release, ctx.matrix.root)
    return sp.tree, UNKNOWN.format(leg=leg), None


def plan_configure(
    ctx: Context, leg: str, tools: BuildTools | None = None, binaries: dict[str, str] | None = None
) -> ConfigurePlan:
    """The configure plan of ``leg``. ``tools``/``binaries``: resolved tools and compilers
    (run time); when absent the pinned wheels and the compilers found on PATH (or their bare
    names) are shown, so ``bundlegraph plan`` works on any host."""
    lc = ctx.leg(leg)
    sdk = lc.sdk
    side = side_of(lc.spec.backend)
    spec, tc = lc.spec, _with_sdk(lc.toolchain, sdk)
    bdir = lc.build_dir
    tree, digest, commit = _source(ctx, leg)
    spec_file = str(ctx.matrix.files.get(leg, f"{leg}.toml"))
    fingerprint = ctx.release.coverage.fingerprint if ctx.release.coverage else None
    fetched = {p.option: source_dirs([p], ctx.cache) for p in pins_used(spec, ctx.release)}
    cache = cache_entries(
        spec,
        spec_file,
        commit=commit,
        build_number=ctx.release.build_number,
        fingerprint=fingerprint,
        fetched=fetched,
    )
    if commit is None:
        cache["LLAMA_BUILD_COMMIT"] = UNKNOWN.format(leg=leg)
    if binaries is None:
        binaries = planned_binaries(tc) if isinstance(tc, GccLinux) else {}
    cmake_dir = bdir / "cmake"
    maps = PrefixMaps(source=tree, build=cmake_dir, work=ctx.workdir, cache=ctx.cache, toolkit=side.prefix_root(sdk))
    text = tc.render(leg, sdk, binaries, maps)
    seeds, host_flag = side.hooks(tc, sdk)
    hooks = hooks_script(seeds=seeds, host_flag=host_flag, fingerprint=fingerprint is not None)
    tfile = bdir / "toolchain.cmake"
    hfile = bdir / "bundlegraph-hooks.cmake" if hooks else None
    if tools is None:
        try:
            tools = build_tools()
        except BundleGraphError:
            pass
    cmake, ninja = (str(tools.cmake.path), str(tools.ninja.path)) if tools else ("cmake", "ninja")
    argv = [
        cmake,
        "--fresh",
        "-S",
        tree.as_posix(),
        "-B",
        cmake_dir.as_posix(),
        "-G",
        "Ninja",
        f"-DCMAKE_MAKE_PROGRAM={Path(ninja).as_posix()}",
        f"-DCMAKE_TOOLCHAIN_FILE={tfile.as_posix()}",
        "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON",
    ]
    if hfile:
        argv.append(f"-DCMAKE_PROJECT_TOP_LEVEL_INCLUDES={hfile.as_posix()}")
    argv += [f"-D{k}={v}" for k, v in cache.items()]
    return ConfigurePlan(
        leg=leg,
        toolchain=tc.id,
        build_dir=bdir,
        cmake_dir=cmake_dir,
        toolchain_file=tfile,
        toolchain_text=text,
        hooks_file=hfile,
        hooks_text=hooks,
        source_tree=tree,
        source_digest=digest,
        cache=cache,
        argv=argv,
        backend=spec.backend,
        sdk=sdk,
        record=bdir / "configure.json",
        log=ctx.log(leg, "configure"),
        binaries=dict(binaries),
        spec_keys=tuple(spec.cmake),
        spec_file=spec_file,
        prefix_maps=maps,
        host_problem=ctx.host_problem(leg),
        compiler=lc.compiler,
        fetch=tuple(pins_used(spec, ctx.release)),
        fetch_cache=ctx.cache,
    )


def _with_sdk(tc: Toolchain, sdk: SdkRef | None) -> Toolchain:
    """The toolchain that compiles a leg with ``sdk`` (:meth:`~bundlegraph.toolchains.sdk_ref.SdkRef.for_toolchain`:
    ``tc``, or ``tc`` taking its compilers from the SDK); ``tc`` for a leg without one."""
    return sdk.for_toolchain(tc) if sdk is not None else tc


FLAG_LANGUAGES = ("C", "CXX", "CUDA", "HIP")
"""The CMake languages whose flags the configure record keeps (ggml's GPU backends compile CUDA
or HIP; issue 53: HIP's flags never reached the provenance)."""


def _compile_flags(cmake_dir: Path) -> dict[str, str]:
    """The flags CMake settled on for each language the tree enabled (``CMAKE_<LANG>_FLAGS`` and
    the release configuration's, from ``CMakeCache.txt``; :data:`FLAG_LANGUAGES`): what the
    provenance says a rebuild must match. A language the tree did not enable has no entry."""
    try:
        cache = read_cmake_cache(cmake_dir)
    except OSError:
        return {}
    flags = [v for lang in FLAG_LANGUAGES for v in (f"CMAKE_{lang}_FLAGS", f"CMAKE_{lang}_FLAGS_RELEASE")]
    return {v: cache[v] for v in flags if v in cache}


def check_host(ctx: Context, leg: str) -> Toolchain:
    """Raise :class:`HostMismatch` when this host cannot build ``leg`` (names the host it needs)."""
    spec, tc = ctx.spec(leg), ctx.leg(leg).toolchain
    problems = tc.host_problems()
    if problems:
        raise HostMismatch(
            f"configure:{leg}: {problems[0]}; run this leg on a {tc.info.build_os} "
            f"{tc.info.build_arch} machine (runner '{spec.runner}'), or bring its build "
            f"output from that runner with built=DIR"
        )
    return tc


def prepare(ctx: Context, leg: str) -> Prepared[ConfigurePlan]:
    """``configure:<leg>``'s plan value: check the host, resolve tools and compilers, and return
    the run-time :class:`ConfigurePlan` with its key (the action key). Starts processes only for
    tool versions (cached) and MSVC capture."""
    tc = _with_sdk(check_host(ctx, leg), ctx.leg(leg).sdk)
    tools = build_tools()
    resolved = tc.resolve(ctx.leg(leg).sdk)
    plan = plan_configure(ctx, leg, tools, resolved.binaries)
    if UNKNOWN.format(leg=leg) in (plan.source_digest, plan.cache.get("LLAMA_BUILD_COMMIT")):
        raise BundleGraphError(f"configure:{leg}: build/{leg}/source.json is missing; run source:{leg} first")

    compiler = ctx.leg(leg).compiler
    consumed: dict[str, Any] = {
        "toolkit": upstream_digest(plan.sdk.task) if plan.sdk else None,
        **({"compiler": upstream_digest(compiler.task)} if compiler else {}),
        "tools": tools.key(),
        "compilers": resolved.key,
    }
    asked = settings.get("LAUNCHER")
    if asked:
        consumed["launcher"] = asked
    return Prepared.of(replace(plan, consumed=consumed))


def run_configure(ctx: Context, leg: str) -> list[Path | Present]:
    """Prepare and run the configure of ``leg`` now (:func:`prepare` then :func:`run`)."""
    return run(prepare(ctx, leg).plan)


def run(plan: ConfigurePlan) -> list[Path | Present]:
    """Run the configure from ``plan`` alone (its action key is recorded in ``configure.json``);
    returns the stamp's outputs. Raises :class:`ToolkitError` (the toolkit lacks a file),
    :class:`ToolFailed`."""
    inputs = plan.key()
    leg = plan.leg
    tc = get_toolchain(plan.toolchain)
    if plan.sdk is not None and (lost := plan.sdk.missing()):
        raise ToolkitError(
            f"configure:{leg}: the SDK at {plan.sdk.root} lacks {', '.join(lost)}; "
            f"rerun {plan.sdk.task or 'its toolkit task'} (or install the missing components)"
        )
    for pin in plan.fetch:  # before any code we did not write runs (a download, hash-checked)
        prepare_fetch(pin, plan.fetch_cache, plan.log)
    env = without_git(tc.resolve(plan.sdk).env, plan.build_dir)
    atomic_write_bytes(plan.toolchain_file, plan.toolchain_text.encode())
    if plan.hooks_file:
        atomic_write_bytes(plan.hooks_file, plan.hooks_text.encode())
    argv = list(plan.argv)
    side = side_of(plan.backend)
    launcher = compiler_launcher(
        probe_tools(plan, tc, env), plan.build_dir / "launcher-check", ["C", "CXX", *side.LANGUAGES]
    )
    argv += launcher.args
    say(
        f"configure:{leg}: toolchain {plan.toolchain}, compilers {inputs['compilers']}, "
        f"toolkit {side.summary(plan)}, "
        f"cmake {inputs['tools']['cmake']['version']}, ninja {inputs['tools']['ninja']['version']}, "
        f"launcher {launcher.name + ' ' + launcher.version.split()[-1] if launcher.name else 'none'}"
        f"{' (probe ' + launcher.probe + ')' if launcher.name else ''}"
    )
    plan.log.parent.mkdir(parents=True, exist_ok=True)
    plan.log.write_text("", encoding="utf-8")
    proc.run(argv, env=env, log=plan.log, what=f"configure:{leg}")
    problems = spec_key_problems(plan, plan.log.read_text(encoding="utf-8", errors="replace"))
    if problems:
        raise BundleGraphError("; ".join(problems))
    checks = post_checks(plan, tc)
    atomic_write_json(
        plan.record,
        {
            "leg": leg,
            "argv": argv,
            "command": proc.quote(argv),
            "toolchain": plan.toolchain,
            "toolchain_file": plan.toolchain_file.as_posix(),
            "toolchain_sha": key_of({"t": plan.toolchain_text}),
            "cmake_dir": plan.cmake_dir.as_posix(),
            "source_tree": plan.source_tree.as_posix(),
            "cache": plan.cache,
            "launcher": launcher.record(),
            "inputs": inputs,
            "checks": checks,
            # what the backend keeps of its configure (a CUDA leg: its toolkit's layout, "cuda")
            **side.record(plan),
            "prefix_maps": plan.prefix_maps.record() if plan.prefix_maps else {},
            "compile_flags": _compile_flags(plan.cmake_dir),
            # the pinned compiler (a Linux leg): its identity and every package, for the info file and provenance
            **({"compiler": compiler_record(plan.compiler)} if plan.compiler else {}),
            # what the SDK adds (a Vulkan leg: what glslc could compile; others nothing, so their records keep their bytes)
            **(plan.sdk.configure_record(plan.log) if plan.sdk is not None else {}),
        },
    )
    return [
        plan.record,
        plan.toolchain_file,
        Present(plan.cmake_dir / "CMakeCache.txt"),
        Present(plan.cmake_dir / "build.ninja"),
    ]


def compiler_record(c: PinnedCompiler) -> dict[str, Any]:
    """The pinned compiler a leg configured with (:mod:`bundlegraph.toolchains.compiler`): its
    identity (task, lock, digest, gcc version, floors), the driver's version line and every
    package (name, version, architecture, sha256) from the compiler task's receipt; no path of
    this machine."""
    from ..toolkit.compiler import read_receipt

    r = read_receipt(c) or {}
    return {**c.identity(), "driver": r.get("driver"), "packages": r.get("packages", [])}


def probe_tools(plan: ConfigurePlan, tc: Toolchain, env: dict[str, str]) -> ProbeTools | None:
    """What the launcher probe compiles with for ``plan``: its C compiler and, on CUDA legs, its
    nvcc, host compiler, nvcc flags and CUDA architectures. None without a C compiler."""
    cc = plan.binaries.get("c")
    if not cc:
        return None
    return side_of(plan.backend).probe_tools(plan, tc, ProbeTools(cc, env))


def spec_key_problems(plan: ConfigurePlan, log: str) -> list[str]:
    """The spec's ``[cmake]`` keys the configured tree does not declare
    (:func:`~.cmake_keys.judge`: one line each naming the spec file, the key and the closest
    declared option); a deprecated key is only warned about. Bundlegraph's own cache entries are
    not the spec's and are never judged."""
    from .compile import cmake_keys

    try:
        cache = cmake_keys.read_typed_cache(plan.cmake_dir)
    except OSError:
        cache = {}
    served = {p.option: p for p in plan.fetch}
    keys = tuple(k for k in plan.spec_keys if k not in served)
    problems, warnings = cmake_keys.judge(
        keys, plan.spec_file, cache, log, cmake_keys.deprecated_options(plan.source_tree)
    )
    for w in warnings:
        warn(f"configure:{plan.leg}: {w}")
    return problems + fetch_problems(plan, log)


def fetch_problems(plan: ConfigurePlan, log: str) -> list[str]:
    """A download option the release serves (:mod:`.compile.fetchcontent`) is a plain CMake variable
    (``if (GGML_CUDA_CUB_3DOT2)``), no declared option, so :func:`spec_key_problems` cannot judge it
    by the cache; instead CMake must have loaded the pinned package from its folder
    (``-- Found CCCL: <cache>/fetchcontent/CCCL-<sha>/wheel/... (found suitable exact version``): one
    line naming the spec file, the key and the pin otherwise (the tree no longer fetches it)."""
    out = []
    for p in plan.fetch:
        folder = source_dirs([p], plan.fetch_cache)[f"FETCHCONTENT_SOURCE_DIR_{p.name.upper()}"]
        found = re.search(rf"^-- Found {re.escape(p.package)}: (\S+)", log, re.M)
        if not found or not found[1].startswith(folder.rsplit("/", 1)[0] + "/"):
            out.append(
                f"{plan.spec_file}: cmake.{p.option}: on, but the configure never loaded {p.package} "
                f"{p.version} from release.toml's pin ({p.filename}): does the tree still fetch {p.name} "
                f"under that option?"
            )
    return out


def read_cmake_cache(cmake_dir: Path) -> dict[str, str]:
    """``CMakeCache.txt`` as ``{NAME: value}`` (types dropped; :func:`.cmake_keys.read_typed_cache`
    is the one parser)."""
    from .compile.cmake_keys import read_typed_cache

    return {k: v for k, (_kind, v) in read_typed_cache(cmake_dir).items()}


def post_checks(plan: ConfigurePlan, tc: Toolchain) -> dict[str, Any]:
    """After cmake: the pinned compiler was the one CMake found (:func:`hermetic_check`), then
    what the leg's backend checks of its configure (:meth:`ConfigureSide.checks`: CUDA's library
    pins, reproducible and hermetic nvcc commands, ``/Zc:preprocessor`` once). Raises on a
    violation; returns what held."""
    out: dict[str, Any] = {}
    if plan.compiler is not None:
        out["hermetic"] = hermetic_check(plan)
    return out | side_of(plan.backend).checks(plan, tc)


def ccbin_problems(commands: list[dict[str, Any]], want: str) -> list[str]:
    """The nvcc commands of ``compile_commands.json`` whose host compiler (``-ccbin=X`` or
    ``-ccbin X``) is not ``want``, the pinned compiler's wrapper, one line each naming the source
    and what it named: a runner's ``CUDAHOSTCXX`` once put its own GCC there."""
    import shlex

    out = []
    for c in commands:
        argv = c.get("arguments") or shlex.split(c.get("command", ""))
        if not argv or ("nvcc" not in Path(argv[0]).name and not any("nvcc" in Path(a).name for a in argv[:2])):
            continue
        got = [a.split("=", 1)[1] for a in argv if a.startswith(("-ccbin=", "--compiler-bindir="))]
        got += [argv[i + 1] for i, a in enumerate(argv[:-1]) if a in ("-ccbin", "--compiler-bindir")]
        if got != [want]:
            out.append(f"{c.get('file')}: nvcc's host compiler is {', '.join(got) or 'not named'}, not {want}")
    return out


def hermetic_check(plan: ConfigurePlan) -> str:
    """Raise :class:`BundleGraphError` when CMake found the C or C++ compiler searching a directory
    outside the leg's pinned compiler (:func:`~bundlegraph.toolchains.compiler.implicit_dir_problems`
    over ``CMakeFiles/<version>/CMake{C,CXX}Compiler.cmake``), or found no such file; else say what held."""
    from ..toolchains.compiler import implicit_dir_problems

    assert plan.compiler is not None
    files = {
        f"{f.parent.name}/{f.name}": f.read_text(encoding="utf-8", errors="replace")
        for f in sorted((plan.cmake_dir / "CMakeFiles").glob("*/CMake*Compiler.cmake"))
        if f.name in ("CMakeCCompiler.cmake", "CMakeCXXCompiler.cmake")
    }
    if not files:
        raise BundleGraphError(
            f"configure:{plan.leg}: CMake recorded no C/C++ compiler under {plan.cmake_dir}/CMakeFiles"
        )
    bad = implicit_dir_problems(files, plan.compiler.prefix)
    if bad:
        raise BundleGraphError(f"configure:{plan.leg}: not hermetic: " + "; ".join(bad[:4]))
    return f"every implicit include and link directory of C and C++ lies in {plan.compiler.task}'s prefix"


def plans(ctx: Context) -> list[Any]:
    """``configure:<leg>`` for every selected leg, after ``source:<leg>`` and its toolkit task."""
    out = []
    for leg in ctx.legs:
        if ctx.imported_build(leg) is not None:  # built on another runner (built=DIR): nothing to configure here
            continue
        doc = f"cmake configure of {leg} ({ctx.spec(leg).toolchain})"
        deps = [f"source:{leg}", *(t.task for t in (ctx.leg(leg).compiler, ctx.leg(leg).sdk) if t)]
        out.append(leg_task(NAME, ctx, leg, doc=doc, deps=deps, prepare=prepare, run=run, preview=plan_configure))
    return out
