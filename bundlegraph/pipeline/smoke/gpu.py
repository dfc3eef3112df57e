"""The GPU steps of ``smoke:<leg>``, for a GPU leg on a host where its side (:mod:`.sides`:
:mod:`.cuda`, :mod:`.vulkan`) found a device the bundle can run on: the ``test-backend-ops``
build of ``smoke:tools-<leg>`` (:func:`run_tools`), the reference build of
``smoke:reference-<leg>`` (:func:`run_reference`, :mod:`.reference`) and the steps
(:func:`steps_for`: devices, generation with ``-ngl 99``, ``test-backend-ops`` against the CPU
per op of the side's ``OPS``, then the throughput check of :mod:`.throughput`), each judged by
:mod:`.judges` (the throughput by its own module) and run in the side's environment (the chosen
device alone).
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

from ...core import proc
from ...core.errors import BundleGraphError
from ...core.fsutil import atomic_write_json
from ...core.platforms import platform
from ...core.report import say
from ...schemas.backend import backend
from . import judges, reference, throughput
from .host import not_llama
from .plan import TOOLS_CACHE, ReferencePlan, SmokePlan, SmokeToolsPlan
from .side import GpuSide
from .steps import Outcome, SmokeRun, Step


def tools_argv(plan: SmokeToolsPlan) -> tuple[list[str], str]:
    """``(configure argv, toolchain text)`` of the test-backend-ops build: the merge base's (else
    the leg's own) configure plan retargeted at ``tools_dir`` with :data:`TOOLS_CACHE`."""
    bp = plan.configure
    assert bp is not None  # only planned when the smoke test can run here
    cache = {k: v for k, v in bp.cache.items() if not k.startswith("GGML_CUDA")} | TOOLS_CACHE
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
    from ...core.fsutil import atomic_write_bytes
    from ...core.state import key_of
    from ..compile import jobs as jobs_mod

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
    j = jobs_mod.decide(0, platform(sp.os).msvc_host)
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
    t0 = time.monotonic()
    prog = _build_tools(plan)
    say(f"smoke:tools-{leg}: {prog} built in {time.monotonic() - t0:.1f}s")
    return [prog]


def run_reference(plan: ReferencePlan) -> list[Path]:
    """``smoke:reference-<leg>``: build the throughput check's reference (:mod:`.reference`), or,
    where the GPU checks cannot run, build nothing and record why in
    ``<tools_dir>/reference/not-built.json`` (an up-to-date result for this host, as
    :func:`run_tools`'s)."""
    from ..compile import jobs as jobs_mod

    sp = plan.smoke
    if not plan.decision.run:
        note = sp.tools_dir / "reference" / "not-built.json"
        atomic_write_json(note, {"leg": sp.leg, "built": False, "reason": plan.decision.reason})
        say(f"smoke:reference-{sp.leg}: nothing to build here: {plan.decision.reason}")
        return [note]
    assert plan.configure is not None and plan.resolved is not None
    rec = reference.build_reference(
        leg=sp.leg,
        cmake=plan.cmake,
        ninja=plan.ninja,
        source_tree=sp.source_tree,
        tools_dir=sp.tools_dir,
        toolchain_text=plan.configure.toolchain_text,
        job=plan.job,
        arch=sp.arch,
        toolkit_major=plan.toolkit_major,
        sms=plan.sms,
        jobs=jobs_mod.decide(0, platform(sp.os).msvc_host).n,
        env=plan.resolved.env,
        log=sp.log.with_name("smoke-reference.log"),
        exe=sp.exe,
        pins=plan.pins,
        cache=plan.cache,
        backend=plan.backend,
    )
    archs = f"; CMAKE_CUDA_ARCHITECTURES={rec['cuda_architectures']}" if rec["cuda_architectures"] else ""
    say(
        f"smoke:reference-{sp.leg}: llama-bench with upstream's flags ({rec['flags_from']}{archs}) built in {rec['seconds']} s"
    )
    return [reference.reference_record(sp.tools_dir), reference.reference_bin(sp.tools_dir) / f"llama-bench{sp.exe}"]


def _side(run: SmokeRun) -> GpuSide:
    assert run.side is not None  # the GPU steps run for a GPU leg only
    return run.side


def device_name(side: GpuSide) -> str:
    """ggml's name of the side's devices without the index (``CUDA``, ``Vulkan``, ``ROCm``, ``MTL``:
    :attr:`~.side.GpuSide.DEV` less its digits); not the backend's title (``ROCm (HIP)``, ``Metal``),
    which ``--list-devices`` does not print."""
    import re

    return re.sub(r"\d+$", "", side.DEV)


def devices(run: SmokeRun) -> Outcome:
    """``llama-cli --list-devices`` lists a device named as the side's (``CUDA0``, ``Vulkan0``,
    ``ROCm0``, ``MTL0``: its :attr:`~.side.GpuSide.DEV` with any index)."""
    import re

    side = _side(run)
    assert run.decision is not None and run.decision.gpu is not None
    say(f"smoke:{run.plan.leg}: on {side.describe(run.decision)}")
    out, rc, cmd = run.program("devices", "devices", side.env(run))
    p = judges.judge_devices(out, device_name(side), backend(side.BACKEND).TITLE) if rc == 0 else f"exit code {rc}"
    return p, {"devices": [l.strip() for l in out.splitlines() if re.match(r"^\s*\w+\d+: ", l)]}, cmd


def generate_gpu(run: SmokeRun) -> Outcome:
    """``llama-simple -ngl 99``: every layer offloaded, tokens generated."""
    out, rc, cmd = run.program("generate-gpu", "generate on the GPU", _side(run).env(run))
    return (*judges.judge_gpu_generate(out, rc), cmd)


def tools(run: SmokeRun) -> Outcome:
    """``test-backend-ops`` from ``smoke:tools-<leg>``, copied beside the bundle's libraries."""
    prog = tools_program(run.plan)
    if not prog.is_file():
        raise BundleGraphError(f"{prog} is missing; run smoke:tools-{run.plan.leg}")
    shutil.copy2(prog, run.bundle_dir / prog.name)
    return None, {"program": prog.as_posix()}, None


def _op(op: str) -> Step:
    def one(run: SmokeRun) -> Outcome:
        side = _side(run)
        out, rc, cmd = run.program(f"op:{op}", f"test-backend-ops {op}", side.env(run), side.DEV)
        return (*judges.judge_op(out, rc, side.DEV), cmd)

    def gate(run: SmokeRun) -> tuple[str, str] | None:
        return None if "test-backend-ops build" in run.passed else ("not run", "test-backend-ops was not built")

    return Step(f"op:{op}", one, gate)


def _with_model(run: SmokeRun) -> tuple[str, str] | None:
    """Generation needs the tiny model: not applicable without a llama.cpp source (the stand-in),
    not run (a failure) when the model step failed."""
    why = not_llama(run)
    if why is not None:
        return ("not applicable", why)
    return None if "model" in run.passed else ("not run", "no model")


def _with_bench(run: SmokeRun) -> tuple[str, str] | None:
    """The throughput check runs where the plan has it (the side's :attr:`REFERENCE_JOBS` name
    the bundle's os) and, like generation, with a model."""
    try:
        run.plan.check("throughput")
    except KeyError:
        return ("", "")  # not planned for this os: not recorded
    problem = _side(run).reference_problem(run.plan.gpus)
    if problem:
        return ("not applicable", problem)
    return _with_model(run)


def _with_bench_model(run: SmokeRun) -> tuple[str, str] | None:
    gated = _with_bench(run)
    if gated is not None:
        return gated
    return None if "bench-model" in run.passed else ("not run", "no bench model")


def steps_for(side: GpuSide) -> tuple[Step, ...]:
    """The GPU steps of ``side``'s legs, in order (cheapest op first; the throughput check last,
    with the GPU to itself)."""
    return (
        Step("devices", devices),
        Step("generate-gpu", generate_gpu, _with_model),
        Step("test-backend-ops build", tools),
        *(_op(op) for op, _params in side.OPS),
        *(
            (
                Step("bench-model", throughput.bench_model, _with_bench),
                Step("throughput", throughput.throughput, _with_bench_model),
            )
            if side.REFERENCE_JOBS
            else ()
        ),
    )


__all__ = ["device_name", "run_reference", "run_tools", "steps_for", "tools_argv", "tools_program"]
