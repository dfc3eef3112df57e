"""The GPU side of ``smoke:<leg>``, for a CUDA leg on a host whose NVIDIA GPU the bundle's CUDA
code covers: the decision made final with the bundle's fatbin (:func:`decide_here`: the plan's
probe and :func:`~.plan.decide`), the ``test-backend-ops`` build of ``smoke:tools-<leg>``
(:func:`run_tools`) and the GPU steps (:data:`STEPS`: devices, generation with ``-ngl 99``,
``test-backend-ops`` CUDA vs CPU per op in :data:`~.plan.OPS`), each judged by :mod:`.judges`.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

from ...backends import backend, library_file
from ...core import proc
from ...core.errors import BundleGraphError
from ...core.fsutil import atomic_write_json
from ...core.report import say
from ...toolchains.base import this_host
from . import judges
from .plan import OPS, TOOLS_CACHE, SmokePlan, SmokeToolsPlan, decide
from .steps import Outcome, SmokeRun, Step


def inventory(unpacked: Path, os_name: str) -> tuple[set[int], set[int], str]:
    from ...checks.bundle import mapped
    from ...checks.inspect import inspect_file

    name = library_file(backend("cuda"), os_name)
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
    t0 = time.monotonic()
    prog = _build_tools(plan)
    say(f"smoke:tools-{leg}: {prog} built in {time.monotonic() - t0:.1f}s")
    return [prog]


def decide_here(run: SmokeRun, os_name: str, arch: str) -> str:
    """The GPU the GPU steps run on: the plan's decision (host, driver) made final with the
    unpacked bundle's fatbin inventory (SASS and PTX per SM); sets ``run.decision`` and returns
    the fatbin's summary."""
    plan = run.plan
    sass, ptx, summary = inventory(run.bundle_dir, os_name)
    if plan.gpus is None or plan.decision is None or not plan.decision.run:
        assert plan.decision is not None  # a CUDA leg's plan
        run.decision = plan.decision
    else:
        run.decision = decide(os_name, arch, this_host(), plan.gpus, sass, ptx)
    return summary


def _gpu_env(run: SmokeRun) -> dict[str, str]:
    """The chosen GPU alone is made visible, in the driver's (PCI) order: it is ``CUDA0``."""
    assert run.decision is not None and run.decision.gpu is not None
    return dict(run.env, CUDA_DEVICE_ORDER="PCI_BUS_ID", CUDA_VISIBLE_DEVICES=str(run.decision.gpu["index"]))


DEV = "CUDA0"


def devices(run: SmokeRun) -> Outcome:
    """``llama-cli --list-devices`` lists a ``CUDA<n>`` device."""
    import re

    assert run.decision is not None and run.decision.gpu is not None
    gpu = run.decision.gpu
    say(f"smoke:{run.plan.leg}: on GPU {gpu['index']} {gpu['name']} (sm_{gpu['sm']}) via {run.decision.coverage}")
    out, rc, cmd = run.program("devices", "devices", _gpu_env(run))
    p = judges.judge_devices(out) if rc == 0 else f"exit code {rc}"
    return p, {"devices": [l.strip() for l in out.splitlines() if re.match(r"^\s*\w+\d+: ", l)]}, cmd


def generate_gpu(run: SmokeRun) -> Outcome:
    """``llama-simple -ngl 99``: every layer offloaded, tokens generated."""
    out, rc, cmd = run.program("generate-gpu", "generate on the GPU", _gpu_env(run))
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
        out, rc, cmd = run.program(f"op:{op}", f"test-backend-ops {op}", _gpu_env(run), DEV)
        return (*judges.judge_op(out, rc, DEV), cmd)

    def gate(run: SmokeRun) -> tuple[str, str] | None:
        return None if "test-backend-ops build" in run.passed else ("not run", "test-backend-ops was not built")

    return Step(f"op:{op}", one, gate)


STEPS: tuple[Step, ...] = (
    Step("devices", devices),
    Step("generate-gpu", generate_gpu, lambda run: None if "model" in run.passed else ("not run", "no model")),
    Step("test-backend-ops build", tools),
    *(_op(op) for op in OPS),
)
"""The GPU steps, in order (cheapest op first)."""


__all__ = ["DEV", "STEPS", "decide_here", "inventory", "run_tools", "tools_argv", "tools_program"]
