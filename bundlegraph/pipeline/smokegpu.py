"""The GPU side of ``smoke:<leg>`` (:mod:`.smoke`), for a CUDA leg on a host whose NVIDIA GPU
the bundle's CUDA code covers: the decision (:func:`decide`: host, driver, fatbin coverage), the
``test-backend-ops`` build of ``smoke:tools-<leg>`` (:class:`SmokeToolsPlan`, :func:`run_tools`)
and the checks that need the GPU (:func:`gpu_checks`: devices, generation with ``-ngl 99``,
``test-backend-ops`` CUDA vs CPU per op in :data:`OPS`), each judged from the program's output
by a pure function (:func:`judge_devices`, :func:`judge_op`, :func:`judge_gpu_generate`).

Formats read: ``llama-cli --list-devices`` (``  CUDA0: <name> (<MiB> MiB, <MiB> MiB free)``),
``test-backend-ops`` (``  <op>(...): OK`` / ``FAIL`` per case, ``<n>/<m> tests passed``, ``Backend
<dev>: OK``), ``llama-simple`` (``offloaded N/M layers to GPU``, ``decoded N tokens``): llama.cpp's
own ``common/arg.cpp``, ``tests/test-backend-ops.cpp``, ``examples/simple/simple.cpp``.
"""

from __future__ import annotations

import re
import shutil
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core import proc
from ..core.errors import BundleGraphError
from ..core.fsutil import atomic_write_json
from ..core.report import say
from ..toolchains.base import Resolved
from .configure import ConfigurePlan
from .smokeplan import Check, SmokePlan

OPS = ("GET_ROWS", "RMS_NORM", "SOFT_MAX", "MUL_MAT", "MUL_MAT_ID", "FLASH_ATTN_EXT")  # cheapest first
TOOLS_CACHE = {
    "LLAMA_BUILD_TESTS": "ON",
    "GGML_CPU": "OFF",
    "GGML_CPU_ALL_VARIANTS": "OFF",
    "LLAMA_BUILD_TOOLS": "OFF",
    "LLAMA_BUILD_EXAMPLES": "OFF",
    "LLAMA_BUILD_SERVER": "OFF",
    "LLAMA_BUILD_APP": "OFF",
}
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


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


@dataclass
class Decision:
    """``run``: whether to run the checks; ``reason`` when not; ``gpu`` chosen and how the
    bundle covers it (``coverage``); ``probe`` as JSON."""

    run: bool
    reason: str = ""
    gpu: dict[str, Any] | None = None
    coverage: str | None = None
    probe: dict[str, Any] = field(default_factory=dict)


def decide(
    bundle_os: str,
    bundle_arch: str,
    host: tuple[str, str],
    probe: Any,
    sass: Collection[int] | None = None,
    ptx: Collection[int] | None = None,
) -> Decision:
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


def inventory(unpacked: Path, os_name: str) -> tuple[set[int], set[int], str]:
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
    argv = [
        plan.cmake,
        "-S",
        plan.smoke.source_tree.as_posix(),
        "-B",
        (tdir / "cmake").as_posix(),
        "-G",
        "Ninja",
        f"-DCMAKE_MAKE_PROGRAM={Path(plan.ninja).as_posix()}",
        f"-DCMAKE_TOOLCHAIN_FILE={(tdir / 'toolchain.cmake').as_posix()}",
    ] + [f"-D{k}={v}" for k, v in sorted(cache.items())]
    return argv, bp.toolchain_text


def _build_tools(plan: SmokeToolsPlan) -> Path:
    """Configure (when its command changed) and build ``test-backend-ops``; returns the program."""
    from ..core.fsutil import atomic_write_bytes
    from ..core.state import key_of
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
        proc.run(
            [argv[0], "--fresh", *argv[1:]], env=env, log=sp.log, what=f"smoke:{sp.leg}: configure test-backend-ops"
        )
        atomic_write_bytes(stamp, key.encode())
    j = jobs_mod.decide(0, sp.os == "windows")
    proc.run(
        [argv[0], "--build", cmake_dir.as_posix(), "--target", "test-backend-ops", "-j", str(j.n)],
        env=env,
        log=sp.log,
        what=f"smoke:{sp.leg}: build test-backend-ops",
    )
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


def judge_op(out: str, rc: int, dev: str) -> tuple[str | None, dict[str, Any]]:
    """``(problem or None, facts)`` for one ``test-backend-ops test -b DEV -o OP`` run."""
    out = _ANSI.sub("", out)
    m = re.findall(r"^\s*(\d+)/(\d+) tests passed", out, re.MULTILINE)
    passed, total = (int(m[-1][0]), int(m[-1][1])) if m else (0, 0)
    facts = {
        "passed": passed,
        "total": total,
        "failed_cases": [l.strip() for l in out.splitlines() if re.search(r"\bFAIL\b", l)][:10],
    }
    if rc != 0:
        return f"exit code {rc}", facts
    if not re.search(rf"Backend {re.escape(dev)}: OK", out):
        return f"no 'Backend {dev}: OK'", facts
    if total == 0:
        return "ran no test case", facts
    if passed != total:
        return f"{passed}/{total} tests passed", facts
    return None, facts


def judge_gpu_generate(out: str, rc: int) -> tuple[str | None, dict[str, Any]]:
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


def gpu_checks(
    plan: SmokePlan,
    d: Decision,
    by: dict[str, Check],
    step: Callable[..., Any],
    run_prog: Callable[..., Any],
    prog_env: dict[str, str],
    have_model: bool,
    bundle_dir: Path,
    results: list[dict[str, Any]],
) -> None:
    """The GPU checks of a CUDA leg on a host whose GPU the bundle covers (module docstring)."""
    gpu: dict[str, Any] = d.gpu or {}
    dev = "CUDA0"  # the chosen GPU alone is made visible, in the driver's (PCI) order
    say(f"smoke:{plan.leg}: on GPU {gpu['index']} {gpu['name']} (sm_{gpu['sm']}) via {d.coverage}")
    env = dict(prog_env, CUDA_DEVICE_ORDER="PCI_BUS_ID", CUDA_VISIBLE_DEVICES=str(gpu["index"]))

    def devices() -> tuple[Any, dict[str, Any], str | None]:
        out, rc, cmd = run_prog(by["devices"].argv, "devices", env)
        p = judge_devices(out) if rc == 0 else f"exit code {rc}"
        return p, {"devices": [l.strip() for l in out.splitlines() if re.match(r"^\s*\w+\d+: ", l)]}, cmd

    step("devices", devices)
    if have_model:

        def gen() -> tuple[Any, dict[str, Any], str | None]:
            out, rc, cmd = run_prog(by["generate-gpu"].argv, "generate on the GPU", env)
            p, facts = judge_gpu_generate(out, rc)
            return p, facts, cmd

        step("generate-gpu", gen)
    else:
        results.append({"check": "generate-gpu", "status": "not run", "problem": "no model"})

    def tools() -> tuple[Any, dict[str, Any], str | None]:
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

        def one(op: str = op) -> tuple[Any, dict[str, Any], str | None]:
            out, rc, cmd = run_prog(by[f"op:{op}"].argv, f"test-backend-ops {op}", env, dev)
            p, facts = judge_op(out, rc, dev)
            return p, facts, cmd

        step(f"op:{op}", one)


__all__ = [
    "OPS",
    "TOOLS_CACHE",
    "Decision",
    "SmokeToolsPlan",
    "decide",
    "gpu_checks",
    "inventory",
    "judge_devices",
    "judge_gpu_generate",
    "judge_op",
    "run_tools",
    "tools_argv",
    "tools_program",
]
