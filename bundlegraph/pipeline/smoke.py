"""Stage ``smoke:<leg>``: run the finished bundle before it is published.

**On every host that can start the bundle's programs** (natively, or a Linux bundle of another
CPU through qemu-user with the target's sysroot: :mod:`bundlegraph.emulation`) the host checks
run (:mod:`.smokechecks`), cheap first:

- ``version``: ``llama-cli --version``: its build number is the release's upstream build and
  its commit the source's;
- ``libraries`` (Linux): glibc's loader traces every ELF file of the bundle (``ldd``: the loader
  with ``LD_TRACE_LOADED_OBJECTS=1``): every dependency resolves (bundle, the toolkit's CUDA
  runtime, the target's system), except the driver (``libcuda.so.1``) for the CUDA backend;
- with a llama.cpp source (its ``gguf-py`` and vocab models): ``model`` (a tiny random-weight
  GGUF, :mod:`.tinygguf`); ``backends``: ``llama-simple -n 1``, judged from ggml's own
  ``load_backend`` messages: a CPU backend loads, and a CUDA backend (named by
  ``GGML_BACKEND_PATH``, so ggml says why it did not load) loads or lacks nothing but the
  driver, with the CUDA runtime the leg declares taken from its toolkit's target libraries (never
  the link-only stub); ``generate`` (``llama-simple``, N tokens, greedy) run twice, the same text
  both times; ``serve`` (``llama-server`` on a free loopback port: ``/health``, one
  ``/completion`` that must give llama-simple's text, clean exit on SIGTERM). With another source
  (the tests' stand-in) ``list-devices`` (``llama-cli --list-devices``, the stand-in logs its
  backend loading there) judges the backends, and model, generate and serve are recorded as not
  applicable.

A host that cannot start the bundle skips the task with the reason (a skip is never a pass, see
below). ``smoke:<leg>`` is a default task of every leg whose bundle this host can start, so the
main job smoke-tests its bundles before the manifest; for the others it is opt-in.

**On a host with an NVIDIA GPU, for a CUDA leg**, the GPU checks follow. Decision first
(:func:`decide`):

1. the bundle's os/arch (its info JSON) must be this host's;
2. the driver must list a GPU (``nvidia-smi``, :mod:`bundlegraph.gpus`);
3. the bundle's CUDA backend must cover one of those GPUs: its fatbin inventory (SASS and PTX
   per SM, :mod:`bundlegraph.checks.fatbin`, read from the unpacked ``libggml-cuda.so`` /
   ``ggml-cuda.dll``) against the GPU's compute capability (:func:`bundlegraph.gpus.covered`).

Otherwise the GPU checks are recorded as not applicable, with the reason (the probe result is
part of the action key, so a GPU appearing is noticed). A task whose bundle cannot start here at
all is **skipped**: ``build/<leg>/smoke.json`` records ``status: "skipped"`` and the reason, the
reason is printed, and :class:`~bundlegraph.errors.TaskSkipped` ends the task without a stamp, so
it is never shown as up to date and runs again on the next ``doit``. A skip is never a pass.

The GPU checks:

Checks, run in this order (cheap first), each recorded with its command, seconds and result (a
failure names the step or op):

- ``devices``: ``llama-cli --list-devices`` (common's ``common_print_available_devices``,
  ``common/arg.cpp``) from the unpacked bundle must list a ``CUDA<n>:`` device — the CUDA backend
  was loaded by ``GGML_BACKEND_DL`` and sees the GPU;
- ``test-backend-ops`` (built by its own task ``smoke:tools-<leg>``, which is skipped — nothing
  built — where the smoke test would be skipped): built from the same source with the merge
  base's generated toolchain and cache entries (``LLAMA_BUILD_TESTS=ON``; ``GGML_CPU``/``GGML_CPU_ALL_VARIANTS`` OFF because
  ggml makes every backend module a dependency of ``ggml``; tools, examples, server, app OFF) in
  ``build/<leg>/smoke-tools``, target ``test-backend-ops`` only; copied next to the bundle's
  libraries, where its ``$ORIGIN`` RUNPATH finds the bundle's ``libggml*``/``libllama*`` and
  ``ggml_backend_load_all`` the bundle's backends. ``test-backend-ops test -b CUDA<n> -o OP``
  compares CUDA with the CPU backend per op in :data:`OPS` (usage text in
  ``tests/test-backend-ops.cpp``); an op passes when it exits 0, prints ``Backend CUDA<n>: OK``
  and ``k/k tests passed`` with k > 0;
- ``model``: a tiny random-weight GGUF (:mod:`.tinygguf`, the source's ``gguf-py`` and its
  ``models/ggml-vocab-llama-spm.gguf``);
- ``generate``: ``llama-simple -m tiny.gguf -n 8 -ngl 99`` (or ``llama-completion``): exit 0, the
  loader's ``offloaded k/k layers to GPU`` (``src/llama-model.cpp``) and ``decoded N tokens``
  with N > 0.

The external CUDA runtime (``runtime.external``: ``libcudart.so.13``, cuBLAS) is taken from the
leg's toolkit (its target ``lib`` directory is put first on ``LD_LIBRARY_PATH``; ``PATH`` on
Windows), as an installer pairs it. Output: ``build/<leg>/smoke.json`` (atomic; one format for
both kinds of host: ``status``, ``how`` it ran, and per check its command, seconds, result and
what it printed that matters), copied beside the bundle as ``dist/<bundle>.smoke.json`` (it
travels with the bundle to the manifest job); full program output in
``build/<leg>/logs/smoke.log``.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from .. import paths, proc
from ..archive import read_bundle_info
from ..errors import BundleGraphError, TaskSkipped
from ..fsutil import atomic_write_json, rmtree
from ..report import say
from ..smokestatus import sidecar
from ..toolchains.base import this_host
from ..toolchains.base import Resolved
from ..toolchains.tools import build_tools
from .base import Context, Prepared, TaskPlan, upstream_digest
from .configure import ConfigurePlan, check_host, plan_configure
from .source import SourceRecord

OPS = ("GET_ROWS", "RMS_NORM", "SOFT_MAX", "MUL_MAT", "MUL_MAT_ID", "FLASH_ATTN_EXT")  # cheapest first
VOCABS = ("ggml-vocab-llama-spm.gguf", "ggml-vocab-llama-bpe.gguf")
TOOLS_CACHE = {"LLAMA_BUILD_TESTS": "ON", "GGML_CPU": "OFF", "GGML_CPU_ALL_VARIANTS": "OFF",
               "LLAMA_BUILD_TOOLS": "OFF", "LLAMA_BUILD_EXAMPLES": "OFF", "LLAMA_BUILD_SERVER": "OFF",
               "LLAMA_BUILD_APP": "OFF"}
N_PREDICT = 8
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


@dataclass(frozen=True)
class Check:
    """One smoke step: ``name`` (``devices``, ``op:MUL_MAT``, ``generate``, ...), ``argv`` with
    ``{bundle}``/``{model}``/``{dev}`` placeholders filled at run time."""

    name: str
    argv: list[str]


@dataclass(frozen=True)
class SmokePlan:
    """What ``smoke:<leg>`` would do (pure). ``bundle``: the archive; ``record``/``log``;
    ``tools_dir``: the test-backend-ops build; ``checks`` in order; ``model_argv`` writes the tiny
    model; ``runtime_dir``: the toolkit directory holding the external CUDA runtime; ``info_file``:
    the release's info JSON name inside the bundle."""

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
    cuda: bool = False
    build_number: int = 0
    commit: str | None = None

    def program(self, name: str) -> str:
        return f"{{bundle}}/{name}{self.exe}"


def host_platform() -> tuple[str, str]:
    """``(os, arch)`` of this host in spec terms (:func:`bundlegraph.toolchains.base.this_host`)."""
    return this_host()


def _source_tree(leg: str, ctx: Context) -> Path:
    from .source import SourceRecord, plan_source

    rec = paths.build_dir(leg) / "source.json"
    if rec.is_file():
        return Path(SourceRecord.read(rec).tree)
    return plan_source(ctx.release, ctx.matrix.root).tree


def _source_commit(leg: str) -> str | None:
    rec = paths.build_dir(leg) / "source.json"
    return SourceRecord.read(rec).commit if rec.is_file() else None


def plan_smoke(ctx: Context, leg: str) -> SmokePlan:
    """The smoke plan of ``leg`` (pure: no process, nothing written)."""
    from .toolkit import toolkit_for_leg

    spec = ctx.spec(leg)
    bdir = paths.build_dir(leg)
    exe = ".exe" if spec.os == "windows" else ""
    tree = _source_tree(leg, ctx)
    py = proc.python_exe()
    bundle = paths.dist_dir() / spec.bundle_name(ctx.release.tag, ctx.release.bundle_prefix)
    tbo = f"{{bundle}}/test-backend-ops{exe}"
    checks = [Check("version", [f"{{bundle}}/llama-cli{exe}", "--version"]),
              # ggml logs each backend it loads (or why not) when a program starts loading them:
              # llama-simple does, with a model; llama-cli --list-devices of a real llama.cpp
              # prints no log, so it is the check only where no model can be made (the stand-in)
              Check("backends", [f"{{bundle}}/llama-simple{exe}", "-m", "{model}", "-n", "1", "Hello"]),
              Check("list-devices", [f"{{bundle}}/llama-cli{exe}", "--list-devices"]),
              Check("generate", [f"{{bundle}}/llama-simple{exe}", "-m", "{model}", "-n", str(N_PREDICT), "Hello"]),
              Check("serve", [f"{{bundle}}/llama-server{exe}", "-m", "{model}", "--host", "127.0.0.1", "--port",
                              "{port}", "-c", "256", "-t", "2"])]
    if spec.cuda is not None:
        checks += [Check("devices", [f"{{bundle}}/llama-cli{exe}", "--list-devices"]),
                   Check("generate-gpu", [f"{{bundle}}/llama-simple{exe}", "-m", "{model}", "-n", str(N_PREDICT),
                                          "-ngl", "99", "Hello"])]
        checks += [Check(f"op:{op}", [tbo, "test", "-b", "{dev}", "-o", op, "-j", "{jobs}"]) for op in OPS]
    rdir: Path | None = None
    if spec.cuda is not None:
        try:
            rdir = toolkit_for_leg(ctx, leg).bin_dir
        except BundleGraphError:
            rdir = None
    model_argv = [py, "-m", "bundlegraph.pipeline.tinygguf", "--gguf-py", (tree / "gguf-py").as_posix(),
                  "--vocab", "{vocab}", "--out", "{model}"]
    return SmokePlan(leg=leg, base=spec.merge.base if spec.merge else None, os=spec.os, arch=spec.arch,
                     bundle=bundle, record=bdir / "smoke.json", log=ctx.log(leg, "smoke"),
                     tools_dir=bdir / "smoke-tools", source_tree=tree, checks=checks, model_argv=model_argv,
                     runtime_dir=rdir, exe=exe, info_file=ctx.release.info_file, work_dir=bdir, cuda=spec.cuda is not None,
                     build_number=ctx.release.build_number, commit=_source_commit(leg))


@dataclass(frozen=True)
class SmokeToolsPlan:
    """What ``smoke:tools-<leg>`` does: ``smoke`` (the leg's :class:`SmokePlan`), ``decision``
    (host and driver judged; nothing is built when it says no), and when it says yes the merge
    base's (else the leg's own) ``configure`` plan with this host's resolved tools
    (``cmake``/``ninja``) and compilers (``resolved``), and the source ``commit``."""

    smoke: SmokePlan
    decision: Decision
    configure: ConfigurePlan | None = None
    resolved: Resolved | None = None
    cmake: str = "cmake"
    ninja: str = "ninja"
    commit: str | None = None


def plan_tools(ctx: Context, leg: str) -> SmokeToolsPlan:
    """The :class:`SmokeToolsPlan` of ``leg`` now: probes the GPUs; when the smoke test can run
    here, checks the host and resolves tools and compilers (:class:`HostMismatch`,
    :class:`ToolMissing` otherwise)."""
    from ..gpus import probe

    smoke = plan_smoke(ctx, leg)
    d = decide(smoke.os, smoke.arch, host_platform(), probe())
    if not d.run:
        return SmokeToolsPlan(smoke, d)
    base = smoke.base or leg
    tc = check_host(ctx, base)
    tools = build_tools()
    resolved = tc.resolve(None)
    srec = paths.build_dir(leg) / "source.json"
    return SmokeToolsPlan(smoke, d, plan_configure(ctx, base, tools, resolved.binaries), resolved,
                          cmake=str(tools.cmake.path), ninja=str(tools.ninja.path),
                          commit=SourceRecord.read(srec).commit if srec.is_file() else None)


@dataclass
class Decision:
    """``run``: whether to run the checks; ``reason`` when not; ``gpu`` chosen and how the
    bundle covers it (``coverage``); ``probe`` as JSON."""

    run: bool
    reason: str = ""
    gpu: dict | None = None
    coverage: str | None = None
    probe: dict = field(default_factory=dict)


def decide(bundle_os: str, bundle_arch: str, host: tuple[str, str], probe: Any,
           sass: Collection[int] | None = None, ptx: Collection[int] | None = None) -> Decision:
    """Whether a bundle can be smoke-tested here (pure; see module docstring). ``sass``/``ptx``
    None = the inventory is not read yet (only the host and the driver are judged)."""
    from ..gpus import covered

    pj = probe.key() | {"command": probe.command}
    if (bundle_os, bundle_arch) != host:
        return Decision(False, f"the bundle is {bundle_os} {bundle_arch}, this host is {host[0]} {host[1]}", probe=pj)
    if not probe.gpus:
        return Decision(False, f"no NVIDIA GPU: {probe.problem}", probe=pj)
    if sass is None:
        return Decision(True, probe=pj)
    for g in probe.gpus:
        how = covered(g.sm, sass, ptx or [])
        if how:
            return Decision(True, gpu={"index": g.index, "sm": g.sm, "name": g.name}, coverage=how, probe=pj)
    gl = ", ".join(g.describe() for g in probe.gpus)
    s = ",".join(str(x) for x in sorted(sass)) or "none"
    p = ",".join(str(x) for x in sorted(ptx or [])) or "none"
    return Decision(False, f"no GPU the bundle's CUDA code covers: {gl}; the bundle has SASS {s}, PTX {p}", probe=pj)


def _skip(plan: SmokePlan, d: Decision) -> None:
    atomic_write_json(plan.record, {"leg": plan.leg, "status": "skipped", "reason": d.reason,
                                    "bundle": plan.bundle.name, "probe": d.probe})
    say(f"smoke:{plan.leg}: SKIPPED (not a pass): {d.reason}")
    raise TaskSkipped(f"smoke:{plan.leg}: {d.reason}")


def _inventory(unpacked: Path, os_name: str) -> tuple[set[int], set[int], str]:
    from ..checks.bundle import mapped
    from ..checks.inspect import inspect_file

    name = "ggml-cuda.dll" if os_name == "windows" else "libggml-cuda.so"
    hits = sorted(unpacked.rglob(name))
    if not hits:
        raise BundleGraphError(f"the bundle has no {name}")
    with mapped(hits[0]) as data:
        r = inspect_file(hits[0].name, data)
    if r.fatbin is None:
        raise BundleGraphError(f"{name} in the bundle has no CUDA fatbin")
    return set(r.fatbin.sass), set(r.fatbin.ptx), r.fatbin.summary()


def tools_argv(plan: SmokeToolsPlan) -> tuple[list[str], str]:
    """``(configure argv, toolchain text)`` of the test-backend-ops build: the merge base's (else
    the leg's own) configure plan retargeted at ``tools_dir`` with :data:`TOOLS_CACHE`."""
    bp = plan.configure
    assert bp is not None  # only planned when the smoke test can run here
    cache = dict(bp.cache)
    for k in [k for k in cache if k.startswith("GGML_CUDA")]:
        del cache[k]
    cache.update(TOOLS_CACHE)
    if plan.commit:
        cache["LLAMA_BUILD_COMMIT"] = plan.commit[:7]
    tdir = plan.smoke.tools_dir
    argv = [plan.cmake, "-S", plan.smoke.source_tree.as_posix(), "-B", (tdir / "cmake").as_posix(),
            "-G", "Ninja", f"-DCMAKE_MAKE_PROGRAM={Path(plan.ninja).as_posix()}",
            f"-DCMAKE_TOOLCHAIN_FILE={(tdir / 'toolchain.cmake').as_posix()}"] \
        + [f"-D{k}={v}" for k, v in sorted(cache.items())]
    return argv, bp.toolchain_text


def _build_tools(plan: SmokeToolsPlan) -> Path:
    """Configure (when its command changed) and build ``test-backend-ops``; returns the program."""
    from ..fsutil import atomic_write_bytes
    from ..state import key_of
    from . import jobs as jobs_mod

    sp = plan.smoke
    assert plan.resolved is not None
    env = plan.resolved.env
    argv, text = tools_argv(plan)
    stamp = sp.tools_dir / "configure-key.txt"
    key = key_of({"argv": argv, "toolchain": text})
    cmake_dir = sp.tools_dir / "cmake"
    if not (stamp.is_file() and stamp.read_text(encoding="utf-8") == key and (cmake_dir / "CMakeCache.txt").is_file()):
        stamp.unlink(missing_ok=True)
        atomic_write_bytes(sp.tools_dir / "toolchain.cmake", text.encode())
        proc.run([argv[0], "--fresh", *argv[1:]], env=env, log=sp.log, what=f"smoke:{sp.leg}: configure test-backend-ops")
        atomic_write_bytes(stamp, key.encode())
    j = jobs_mod.decide(0, sp.os == "windows")
    proc.run([argv[0], "--build", cmake_dir.as_posix(), "--target", "test-backend-ops", "-j", str(j.n)],
             env=env, log=sp.log, what=f"smoke:{sp.leg}: build test-backend-ops")
    prog = tools_program(sp)
    if not prog.is_file():
        raise BundleGraphError(f"smoke:{sp.leg}: the build produced no {prog}")
    return prog


def tools_program(plan: SmokePlan) -> Path:
    """Where ``smoke:tools-<leg>`` leaves ``test-backend-ops``."""
    return plan.tools_dir / "cmake" / "bin" / f"test-backend-ops{plan.exe}"


def run_tools(plan: SmokeToolsPlan) -> list[Path]:
    """``smoke:tools-<leg>``: build test-backend-ops, or, where the GPU checks cannot run (another
    os/arch, no GPU the bundle covers), build nothing and record why in
    ``<tools_dir>/not-built.json``. That is an up-to-date result for this host: the action key
    holds the host and its GPU probe, so a GPU that appears builds the tools. (The smoke's own
    verdict is never so: its GPU checks are recorded as not applicable, with this reason.)"""
    leg = plan.smoke.leg
    if not plan.decision.run:
        note = plan.smoke.tools_dir / "not-built.json"
        atomic_write_json(note, {"leg": leg, "built": False, "reason": plan.decision.reason})
        say(f"smoke:tools-{leg}: nothing to build here: {plan.decision.reason}")
        return [note]
    plan.smoke.log.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    prog = _build_tools(plan)
    say(f"smoke:tools-{leg}: {prog} built in {time.monotonic() - t0:.1f}s")
    return [prog]


def judge_devices(out: str) -> str | None:
    """None when ``--list-devices`` output lists a CUDA device, else what is wrong."""
    if re.search(r"^\s*CUDA\d+: ", out, re.MULTILINE):
        return None
    return "no CUDA<n> device listed (the CUDA backend did not load or sees no GPU)"


def judge_op(out: str, rc: int, dev: str) -> tuple[str | None, dict]:
    """``(problem or None, facts)`` for one ``test-backend-ops test -b DEV -o OP`` run."""
    out = _ANSI.sub("", out)
    m = re.findall(r"^\s*(\d+)/(\d+) tests passed", out, re.MULTILINE)
    passed, total = (int(m[-1][0]), int(m[-1][1])) if m else (0, 0)
    facts = {"passed": passed, "total": total,
             "failed_cases": [l.strip() for l in out.splitlines() if re.search(r"\bFAIL\b", l)][:10]}
    if rc != 0:
        return f"exit code {rc}", facts
    if not re.search(rf"Backend {re.escape(dev)}: OK", out):
        return f"no 'Backend {dev}: OK'", facts
    if total == 0:
        return "ran no test case", facts
    if passed != total:
        return f"{passed}/{total} tests passed", facts
    return None, facts


def judge_generate(out: str, rc: int) -> tuple[str | None, dict]:
    """``(problem or None, facts)`` for the generation run."""
    off = re.search(r"offloaded (\d+)/(\d+) layers to GPU", out)
    dec = re.search(r"decoded (\d+) tokens", out)
    facts = {"offloaded": off.group(0) if off else None, "decoded": int(dec.group(1)) if dec else None}
    if rc != 0:
        return f"exit code {rc}", facts
    if not off or off.group(1) != off.group(2) or off.group(1) == "0":
        return "not every layer was offloaded to the GPU", facts
    if not dec or int(dec.group(1)) == 0:
        return "no token was generated", facts
    return None, facts


def _elf_files(bundle_dir: Path) -> list[Path]:
    return sorted(p for p in bundle_dir.rglob("*") if p.is_file() and p.open("rb").read(4) == b"\x7fELF")


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run_smoke(plan: SmokePlan) -> list[Path]:
    """Run the host checks, then (CUDA leg, GPU here) the GPU checks (module docstring). Returns
    ``[smoke.json, sidecar]`` when every check that applies passed; raises :class:`TaskSkipped`
    (recorded) when the bundle cannot start here, or :class:`BundleGraphError` naming the failing
    checks (recorded)."""
    from ..emulation import launcher_for
    from ..extract import extract
    from ..gpus import probe
    from . import jobs as jobs_mod
    from . import smokechecks as sc

    leg = plan.leg
    if not plan.bundle.is_file():
        raise BundleGraphError(f"smoke:{leg}: {plan.bundle} is missing; run package:{leg}")
    info = read_bundle_info(plan.bundle, plan.info_file)
    launcher = launcher_for(info.os, info.arch)
    if isinstance(launcher, str):
        _skip(plan, Decision(False, launcher))
    assert not isinstance(launcher, str)
    plan.log.parent.mkdir(parents=True, exist_ok=True)
    plan.log.write_text("", encoding="utf-8")
    results: list[dict] = []
    t_all = time.monotonic()
    plan.work_dir.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="smoke-", dir=plan.work_dir))
    d = Decision(False, "not a CUDA leg")
    summary: str | None = None
    try:
        bundle_dir = tmp / "bundle"
        extract(plan.bundle, bundle_dir)
        model = tmp / "tiny.gguf"
        jobs = str(jobs_mod.cores())
        prog_env: dict[str, str] = {}
        if plan.runtime_dir is not None:  # the CUDA runtime the leg declares, from its toolkit
            stubs = sorted(p.name for p in plan.runtime_dir.glob("libcuda.so*"))
            if stubs:  # the link-only driver stub crashes a process that loads it
                raise BundleGraphError(f"smoke:{leg}: {plan.runtime_dir} holds {', '.join(stubs)}: the driver "
                                       "(or its link-only stub) must never be on a bundle's runtime path")
            var = "PATH" if plan.os == "windows" else "LD_LIBRARY_PATH"
            prog_env[var] = plan.runtime_dir.as_posix()
        cuda_lib = ("ggml-cuda.dll" if plan.os == "windows" else "libggml-cuda.so") if plan.cuda else None
        port = {"value": 0}

        def fill(argv: list[str], dev: str = "") -> list[str]:
            return [a.replace("{bundle}", bundle_dir.as_posix()).replace("{model}", model.as_posix())
                    .replace("{dev}", dev).replace("{jobs}", jobs).replace("{port}", str(port["value"]))
                    for a in argv]

        def step(name: str, fn: Callable[[], tuple[Any, dict, str | None]]) -> bool:
            t0 = time.monotonic()
            try:
                problem, facts, cmd = fn()
            except BundleGraphError as e:
                problem, facts, cmd = str(e).splitlines()[0], {}, None
            r = {"check": name, "status": "failed" if problem else "passed", "seconds": round(time.monotonic() - t0, 1),
                 "command": cmd, **facts}
            if problem:
                r["problem"] = problem
            results.append(r)
            atomic_write_json(plan.record, {"leg": leg, "status": "running", "bundle": plan.bundle.name,
                                            "how": launcher.describe(), "checks": results})
            say(f"smoke:{leg}: {name}: {'FAILED: ' + problem if problem else 'passed'} ({r['seconds']} s)")
            return not problem

        def not_applicable(name: str, why: str) -> None:
            results.append({"check": name, "status": "not applicable", "reason": why})
            say(f"smoke:{leg}: {name}: not applicable: {why}")

        def run_prog(argv: list[str], what: str, env: dict[str, str], dev: str = "") -> tuple[str, int, str]:
            a = fill(argv, dev)
            full = launcher.argv(a[0], a[1:], env)
            r = proc.run(full, env=launcher.process_env(env), log=plan.log, capture=True, check=False,
                         what=f"smoke:{leg}: {what}", cwd=tmp)
            return r.output, r.returncode, proc.quote(full)

        by = {c.name: c for c in plan.checks}

        def version() -> tuple[Any, dict, str | None]:
            out, rc, cmd = run_prog(by["version"].argv, "version", prog_env)
            p, facts = sc.judge_version(out, rc, build_number=plan.build_number, commit=plan.commit)
            return p, facts, cmd

        def backends(name: str) -> Callable[[], tuple[Any, dict, str | None]]:
            def one() -> tuple[Any, dict, str | None]:
                env = dict(prog_env)
                if cuda_lib:  # ggml then says why the CUDA backend did not load, if it did not
                    env["GGML_BACKEND_PATH"] = (bundle_dir / cuda_lib).as_posix()
                out, rc, cmd = run_prog(by[name].argv, name, env)
                p, facts = sc.judge_backends(out, rc, cuda_library=cuda_lib, os_name=plan.os)
                return p, facts, cmd
            return one

        def libraries() -> tuple[Any, dict, str | None]:
            lib_path = [bundle_dir] + ([plan.runtime_dir] if plan.runtime_dir else [])
            probs, listed = [], {}
            for f in _elf_files(bundle_dir):
                argv, env = launcher.list_deps(f, lib_path)
                r = proc.run(argv, env=env, log=plan.log, capture=True, check=False,
                             what=f"smoke:{leg}: ldd {f.name}", cwd=tmp)
                allowed = frozenset({sc.DRIVER}) if f.name == cuda_lib else frozenset()
                p, facts = sc.judge_deps(r.output, r.returncode, f.name, allowed_missing=allowed)
                listed[f.name] = facts.get("missing", [])
                if p:
                    probs.append(p)
            return ("; ".join(probs) or None), {"files": len(listed),
                                                "missing": {k: v for k, v in listed.items() if v}}, None

        step("version", version)
        if plan.os == "linux":
            step("libraries", libraries)
        vocab = next((plan.source_tree / "models" / v for v in VOCABS if (plan.source_tree / "models" / v).is_file()), None)
        llama = (plan.source_tree / "gguf-py").is_dir() and vocab is not None

        def make_model() -> tuple[Any, dict, str | None]:
            assert vocab is not None
            a = [x.replace("{vocab}", vocab.as_posix()).replace("{model}", model.as_posix()) for x in plan.model_argv]
            penv = dict(os.environ)
            root = Path(__file__).resolve().parents[2]
            penv["PYTHONPATH"] = os.pathsep.join(x for x in (root.as_posix(), penv.get("PYTHONPATH", "")) if x)
            proc.run(a, env=penv, log=plan.log, what=f"smoke:{leg}: tiny model")
            return None, {"vocab": vocab.name, "bytes": model.stat().st_size}, proc.quote(a)

        have_model = False
        if not llama:
            why = f"the source ({plan.source_tree.name}) has no gguf-py and vocab models: not llama.cpp"
            not_applicable("model", why)
            step("list-devices", backends("list-devices"))
            for name in ("generate", "serve"):
                not_applicable(name, why)
        else:
            have_model = step("model", make_model)
            if have_model:
                step("backends", backends("backends"))
            texts: list[str] = []

            def gen(i: int) -> Callable[[], tuple[Any, dict, str | None]]:
                def one() -> tuple[Any, dict, str | None]:
                    out, rc, cmd = run_prog(by["generate"].argv, f"generate #{i}", prog_env)
                    p, facts = sc.judge_generate(out, rc)
                    text = sc.generated_text(out)
                    facts["text"] = text
                    if p is None and text is None:
                        p = "llama-simple printed no generated text after the prompt"
                    texts.append(text or "")
                    if p is None and i == 2 and texts[0] != texts[1]:
                        p = (f"the repeat run generated {texts[1]!r}, the first {texts[0]!r} (greedy decoding of one "
                             "model must repeat)")
                    return p, facts, cmd
                return one

            if have_model:
                generated = step("generate", gen(1)) and step("generate again", gen(2))

                def serving() -> tuple[Any, dict, str | None]:
                    port["value"] = _free_port()
                    a = fill(by["serve"].argv)
                    full = launcher.argv(a[0], a[1:], prog_env)
                    timeout = 240.0 if launcher.qemu else 60.0
                    p, facts = sc.serve(full, launcher.process_env(prog_env), port["value"], plan.log, timeout=timeout,
                                        n_predict=N_PREDICT, expect=texts[0] if generated else None)
                    return p, facts, proc.quote(full)

                step("serve", serving)
        if plan.cuda:
            pr = probe()
            sass, ptx, summary = _inventory(bundle_dir, info.os)
            d = decide(info.os, info.arch, host_platform(), pr, sass, ptx)
            if not d.run or d.gpu is None:
                not_applicable("gpu", d.reason)
            else:
                _gpu_checks(plan, d, by, step, run_prog, prog_env, have_model, bundle_dir, results)
    finally:
        rmtree(tmp)
    failed = [r for r in results if r["status"] not in ("passed", "not applicable")]
    status = "failed" if failed else "passed"
    from ..fsutil import sha256_file

    record = {"leg": leg, "status": status, "bundle": plan.bundle.name, "bundle_sha256": sha256_file(plan.bundle),
              "how": launcher.describe(),
              "fatbin": summary, "gpu": d.gpu, "coverage": d.coverage, "probe": d.probe,
              "runtime_dir": plan.runtime_dir.as_posix() if plan.runtime_dir else None,
              "seconds": round(time.monotonic() - t_all, 1), "checks": results}
    atomic_write_json(plan.record, record)
    if failed:  # the bundle leaves dist/: it never reaches the manifest or the SHA index
        sidecar(plan.bundle).unlink(missing_ok=True)
        kept = plan.work_dir / "smoke-failed" / plan.bundle.name
        kept.parent.mkdir(parents=True, exist_ok=True)
        os.replace(plan.bundle, kept)
        raise BundleGraphError(f"smoke:{leg}: {len(failed)} check(s) failed: "
                               + "; ".join(f"{r['check']}: {r.get('problem', r['status'])}" for r in failed)
                               + f"; {plan.bundle.name} moved out of dist/ to {kept} (details: {plan.record}, "
                               f"log: {plan.log})")
    atomic_write_json(sidecar(plan.bundle), record)
    ran = [r for r in results if r["status"] == "passed"]
    say(f"smoke:{leg}: {len(ran)} checks passed ({launcher.describe()}); "
        f"{len(results) - len(ran)} not applicable here")
    return [plan.record, sidecar(plan.bundle)]


def _gpu_checks(plan: SmokePlan, d: Decision, by: dict[str, Check], step: Callable, run_prog: Callable,
                prog_env: dict[str, str], have_model: bool, bundle_dir: Path, results: list[dict]) -> None:
    """The GPU checks of a CUDA leg on a host whose GPU the bundle covers (module docstring)."""
    gpu: dict = d.gpu or {}
    dev = "CUDA0"  # the chosen GPU alone is made visible, in the driver's (PCI) order
    say(f"smoke:{plan.leg}: on GPU {gpu['index']} {gpu['name']} (sm_{gpu['sm']}) via {d.coverage}")
    env = dict(prog_env, CUDA_DEVICE_ORDER="PCI_BUS_ID", CUDA_VISIBLE_DEVICES=str(gpu["index"]))

    def devices() -> tuple[Any, dict, str | None]:
        out, rc, cmd = run_prog(by["devices"].argv, "devices", env)
        p = judge_devices(out) if rc == 0 else f"exit code {rc}"
        return p, {"devices": [l.strip() for l in out.splitlines() if re.match(r"^\s*\w+\d+: ", l)]}, cmd

    step("devices", devices)
    if have_model:
        def gen() -> tuple[Any, dict, str | None]:
            out, rc, cmd = run_prog(by["generate-gpu"].argv, "generate on the GPU", env)
            p, facts = judge_generate(out, rc)
            return p, facts, cmd

        step("generate-gpu", gen)
    else:
        results.append({"check": "generate-gpu", "status": "not run", "problem": "no model"})

    def tools() -> tuple[Any, dict, str | None]:
        prog = tools_program(plan)
        if not prog.is_file():
            raise BundleGraphError(f"{prog} is missing; run smoke:tools-{plan.leg}")
        shutil.copy2(prog, bundle_dir / prog.name)
        return None, {"program": prog.as_posix()}, None

    have_tools = step("test-backend-ops build", tools)
    for op in OPS:
        if not have_tools:
            results.append({"check": f"op:{op}", "status": "not run", "problem": "test-backend-ops was not built"})
            continue

        def one(op: str = op) -> tuple[Any, dict, str | None]:
            out, rc, cmd = run_prog(by[f"op:{op}"].argv, f"test-backend-ops {op}", env, dev)
            p, facts = judge_op(out, rc, dev)
            return p, facts, cmd

        step(f"op:{op}", one)


def smoke_inputs(ctx: Context, leg: str) -> dict:
    """The action-key inputs of ``smoke:<leg>``: the bundle and source digests, this host and
    how it starts the bundle (:func:`~bundlegraph.emulation.launcher_for`), the checks; for a CUDA
    leg also the test-backend-ops digest, the GPUs (probe key), the ops and the tools' cache."""
    from ..emulation import launcher_for

    spec = ctx.spec(leg)
    how = launcher_for(spec.os, spec.arch)
    key: dict[str, object] = {"bundle": upstream_digest(f"package:{leg}"), "source": upstream_digest(f"source:{leg}"),
           "host": list(host_platform()), "how": how if isinstance(how, str) else how.describe(),
           "checks": [c.name for c in plan_smoke(ctx, leg).checks]}
    if spec.cuda is not None:
        from ..gpus import probe

        key |= {"test_backend_ops": upstream_digest(f"smoke:tools-{leg}"), "gpus": probe().key(), "ops": list(OPS),
                "tools": TOOLS_CACHE}
    return key


def tools_inputs(ctx: Context, leg: str) -> dict:
    """The action-key inputs of ``smoke:tools-<leg>``: the source, the base's cache entries and
    toolchain text (as planned, before compilers resolve), the tools' cache, host and GPUs."""
    from ..gpus import probe

    spec = ctx.spec(leg)
    base = plan_configure(ctx, spec.merge.base if spec.merge else leg)
    return {"source": upstream_digest(f"source:{leg}"), "base_cache": base.cache,
            "toolchain": base.toolchain_text, "tools": TOOLS_CACHE, "host": list(host_platform()),
            "gpus": probe().key()}


def _prepare_smoke(ctx: Context, leg: str) -> Prepared:
    return Prepared(smoke_inputs(ctx, leg), plan_smoke(ctx, leg))


def _prepare_tools(ctx: Context, leg: str) -> Prepared:
    return Prepared(tools_inputs(ctx, leg), plan_tools(ctx, leg))


def _apply_smoke(p: Prepared) -> list[Path]:
    assert isinstance(p.plan, SmokePlan)
    return run_smoke(p.plan)


def _apply_tools(p: Prepared) -> list[Path]:
    assert isinstance(p.plan, SmokeToolsPlan)
    return run_tools(p.plan)


def runs_here(ctx: Context, leg: str) -> bool:
    """Whether this host can start ``leg``'s bundle (then its smoke is a default task)."""
    from ..emulation import launcher_for

    spec = ctx.spec(leg)
    return not isinstance(launcher_for(spec.os, spec.arch), str)


def plans(ctx: Context) -> list:
    """``smoke:<leg>`` for every selected leg, after ``package:<leg>``, and for a CUDA leg
    ``smoke:tools-<leg>`` (test-backend-ops for the GPU checks) before it."""
    out = []
    for leg in ctx.legs:
        cuda = ctx.spec(leg).cuda is not None

        def details(leg: str = leg) -> dict:
            p = plan_smoke(ctx, leg)
            return {"bundle": p.bundle.as_posix(), "record": p.record.as_posix(), "tools_dir": p.tools_dir.as_posix(),
                    "checks": {c.name: proc.quote(c.argv) for c in p.checks}, "model": proc.quote(p.model_argv)}

        if cuda:
            out.append(TaskPlan(stage="smoke", name=f"tools-{leg}", leg=leg, deps=[f"source:{leg}"],
                                prepare=partial(_prepare_tools, ctx, leg), apply=_apply_tools,
                                doc=f"build test-backend-ops for smoke:{leg} (skipped without a GPU)"))
        out.append(TaskPlan(stage="smoke", name=leg, leg=leg,
                            deps=[f"package:{leg}", f"source:{leg}"] + ([f"smoke:tools-{leg}"] if cuda else []),
                            prepare=partial(_prepare_smoke, ctx, leg), apply=_apply_smoke, details=details,
                            doc=f"start {leg}'s bundle here (natively or under qemu-user): version, backends, "
                                f"libraries, generation, serving" + ("; on an NVIDIA GPU its CUDA kernels" if cuda else "")))
    return out


__all__ = ["OPS", "SmokePlan", "Check", "plan_smoke", "decide", "run_smoke", "plans", "judge_op",
           "judge_devices", "judge_generate", "host_platform", "tools_argv", "SmokeToolsPlan", "plan_tools",
           "runs_here", "sidecar"]
