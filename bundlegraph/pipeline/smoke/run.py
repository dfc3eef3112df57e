"""The run of ``smoke:<leg>``: the bundle unpacked once, then the steps of the tables in order
(:data:`.host.STEPS`, then for a CUDA leg whose GPU this host has :data:`.gpu.STEPS`), each
recorded as it finishes, then the verdict. A step is a :class:`Step`: a name, what it runs
(returning an :data:`Outcome`) and a gate saying when it does not apply. What the steps share
(the unpacked bundle, the launcher, the programs' environment, the results so far) is the
:class:`SmokeRun`.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

from ...core import proc
from ...core.errors import BundleGraphError, TaskSkipped
from ...core.fsutil import atomic_write_json, rmtree, sha256_file
from ...core.report import say
from ...smokestatus import sidecar
from .plan import Decision, SmokePlan

Outcome = tuple[str | None, dict[str, Any], str | None]
"""What a step returns: ``(problem or None, facts to record, the command it ran or None)``."""
Gate = Callable[["SmokeRun"], tuple[str, str] | None]
"""When a step does not run: None (it runs), else ``(status, why)``: ``"not applicable"`` or
``"not run"`` (recorded with ``why``; "not run" fails the smoke), or ``""`` (not recorded)."""


def always(_run: SmokeRun) -> tuple[str, str] | None:
    """The gate of a step that always runs."""
    return None


@dataclass(frozen=True)
class Step:
    """One row of a step table: ``name`` (recorded as ``check``), ``run`` and its ``gate``."""

    name: str
    run: Callable[[SmokeRun], Outcome]
    gate: Gate = always


@dataclass
class SmokeRun:
    """What the steps of one smoke run share: the ``plan``, the ``launcher`` that starts the
    bundle's programs here (:mod:`bundlegraph.emulation`), the unpacked bundle (``bundle_dir``) in
    the run's scratch directory ``tmp``, the tiny ``model``'s path, the programs' ``env`` (the
    CUDA runtime directory), and the ``results`` so far (``passed``: names of passed steps)."""

    plan: SmokePlan
    launcher: Any
    tmp: Path
    bundle_dir: Path
    model: Path
    jobs: str
    env: dict[str, str]
    results: list[dict[str, Any]] = field(default_factory=list)
    passed: set[str] = field(default_factory=set)
    port: int = 0
    texts: list[str] = field(default_factory=list)
    """What each host generation printed (the repeat and the server must match the first)."""
    decision: Decision | None = None
    """The GPU the GPU steps run on (CUDA legs, decided from the plan's probe and the fatbin)."""

    @property
    def cuda_lib(self) -> str | None:
        """The bundle's CUDA backend library name, for a CUDA leg."""
        if not self.plan.cuda:
            return None
        return "ggml-cuda.dll" if self.plan.os == "windows" else "libggml-cuda.so"

    def fill(self, argv: list[str], dev: str = "") -> list[str]:
        """``argv`` with its placeholders filled (``{bundle}``, ``{model}``, ``{dev}``, ``{jobs}``, ``{port}``)."""
        return [
            a.replace("{bundle}", self.bundle_dir.as_posix())
            .replace("{model}", self.model.as_posix())
            .replace("{dev}", dev)
            .replace("{jobs}", self.jobs)
            .replace("{port}", str(self.port))
            for a in argv
        ]

    def program(self, check: str, what: str, env: dict[str, str] | None = None, dev: str = "") -> tuple[str, int, str]:
        """Run the command of plan check ``check`` through the launcher; ``(output, exit code,
        the command as text)``. Output goes to the smoke log too."""
        a = self.fill(self.plan.check(check).argv, dev)
        env = self.env if env is None else env
        full = self.launcher.argv(a[0], a[1:], env)
        r = proc.run(
            full,
            env=self.launcher.process_env(env),
            log=self.plan.log,
            capture=True,
            check=False,
            what=f"smoke:{self.plan.leg}: {what}",
            cwd=self.tmp,
        )
        return r.output, r.returncode, proc.quote(full)

    def walk(self, steps: Sequence[Step]) -> None:
        """Run ``steps`` in order, each through its gate."""
        for s in steps:
            gated = s.gate(self)
            if gated is None:
                self.step(s.name, s.run)
            elif gated[0]:
                self.skip_step(s.name, *gated)

    def step(self, name: str, fn: Callable[[SmokeRun], Outcome]) -> bool:
        """Run one step, record it (``smoke.json`` is rewritten as each step ends) and say it."""
        t0 = time.monotonic()
        try:
            problem, facts, cmd = fn(self)
        except BundleGraphError as e:
            problem, facts, cmd = str(e).splitlines()[0], {}, None
        r: dict[str, Any] = {
            "check": name,
            "status": "failed" if problem else "passed",
            "seconds": round(time.monotonic() - t0, 1),
            "command": cmd,
            **facts,
        }
        if problem:
            r["problem"] = problem
        else:
            self.passed.add(name)
        self.results.append(r)
        atomic_write_json(
            self.plan.record,
            {
                "leg": self.plan.leg,
                "status": "running",
                "bundle": self.plan.bundle.name,
                "how": self.launcher.describe(),
                "checks": self.results,
            },
        )
        say(f"smoke:{self.plan.leg}: {name}: {'FAILED: ' + problem if problem else 'passed'} ({r['seconds']} s)")
        return not problem

    def skip_step(self, name: str, status: str, why: str) -> None:
        """Record a step that does not run: ``not applicable`` (with the reason) or ``not run``
        (a failure: with the problem)."""
        self.results.append(
            {"check": name, "status": status, ("reason" if status == "not applicable" else "problem"): why}
        )
        say(f"smoke:{self.plan.leg}: {name}: {status}: {why}")


def _skip(plan: SmokePlan, d: Decision) -> NoReturn:
    atomic_write_json(
        plan.record,
        {"leg": plan.leg, "status": "skipped", "reason": d.reason, "bundle": plan.bundle.name, "probe": d.probe},
    )
    say(f"smoke:{plan.leg}: SKIPPED (not a pass): {d.reason}")
    raise TaskSkipped(f"smoke:{plan.leg}: {d.reason}")


def _runtime_env(plan: SmokePlan) -> dict[str, str]:
    """The programs' environment: the CUDA runtime the leg declares, from its toolkit (never the
    driver or its link-only stub, which crashes a process that loads it)."""
    if plan.runtime_dir is None:
        return {}
    stubs = sorted(p.name for p in plan.runtime_dir.glob("libcuda.so*"))
    if stubs:
        raise BundleGraphError(
            f"smoke:{plan.leg}: {plan.runtime_dir} holds {', '.join(stubs)}: the driver "
            "(or its link-only stub) must never be on a bundle's runtime path"
        )
    return {("PATH" if plan.os == "windows" else "LD_LIBRARY_PATH"): plan.runtime_dir.as_posix()}


def run_smoke(plan: SmokePlan) -> list[Path]:
    """Run the host steps, then (CUDA leg, a GPU the bundle covers here) the GPU steps. Returns
    ``[smoke.json, sidecar]`` when every step that applies passed; raises :class:`TaskSkipped`
    (recorded) when the bundle cannot start here, or :class:`BundleGraphError` naming the failing
    steps (recorded; the bundle leaves ``dist/``)."""
    from ...archive import read_bundle_info
    from ...core.extract import extract
    from ...emulation import launcher_for
    from ..compile import jobs as jobs_mod
    from . import gpu, host

    leg = plan.leg
    if not plan.bundle.is_file():
        raise BundleGraphError(f"smoke:{leg}: {plan.bundle} is missing; run package:{leg}")
    info = read_bundle_info(plan.bundle, plan.info_file)
    launcher = launcher_for(info.os, info.arch)
    if isinstance(launcher, str):
        _skip(plan, Decision(False, launcher))
    assert not isinstance(launcher, str)  # (_skip raised)
    plan.log.parent.mkdir(parents=True, exist_ok=True)
    plan.log.write_text("", encoding="utf-8")
    t_all = time.monotonic()
    plan.work_dir.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="smoke-", dir=plan.work_dir))
    summary: str | None = None
    try:
        run = SmokeRun(
            plan, launcher, tmp, tmp / "bundle", tmp / "tiny.gguf", str(jobs_mod.cores()), _runtime_env(plan)
        )
        extract(plan.bundle, run.bundle_dir)
        run.walk(host.STEPS)
        if plan.cuda:
            summary = gpu.decide_here(run, info.os, info.arch)
            assert run.decision is not None
            if not run.decision.run or run.decision.gpu is None:
                run.skip_step("gpu", "not applicable", run.decision.reason)
            else:
                run.walk(gpu.STEPS)
    finally:
        rmtree(tmp)
    d = run.decision or Decision(False, "not a CUDA leg")
    failed = [r for r in run.results if r["status"] not in ("passed", "not applicable")]
    record = {
        "leg": leg,
        "status": "failed" if failed else "passed",
        "bundle": plan.bundle.name,
        "bundle_sha256": sha256_file(plan.bundle),
        "how": launcher.describe(),
        "fatbin": summary,
        "gpu": d.gpu,
        "coverage": d.coverage,
        "probe": d.probe,
        "runtime_dir": plan.runtime_dir.as_posix() if plan.runtime_dir else None,
        "seconds": round(time.monotonic() - t_all, 1),
        "checks": run.results,
    }
    atomic_write_json(plan.record, record)
    if failed:  # the bundle leaves dist/: it never reaches the manifest or the SHA index
        sidecar(plan.bundle).unlink(missing_ok=True)
        kept = plan.work_dir / "smoke-failed" / plan.bundle.name
        kept.parent.mkdir(parents=True, exist_ok=True)
        os.replace(plan.bundle, kept)
        raise BundleGraphError(
            f"smoke:{leg}: {len(failed)} check(s) failed: "
            + "; ".join(f"{r['check']}: {r.get('problem', r['status'])}" for r in failed)
            + f"; {plan.bundle.name} moved out of dist/ to {kept} (details: {plan.record}, "
            f"log: {plan.log})"
        )
    atomic_write_json(sidecar(plan.bundle), record)
    ran = [r for r in run.results if r["status"] == "passed"]
    say(
        f"smoke:{leg}: {len(ran)} checks passed ({launcher.describe()}); "
        f"{len(run.results) - len(ran)} not applicable here"
    )
    return [plan.record, sidecar(plan.bundle)]


__all__ = ["Gate", "Outcome", "SmokeRun", "Step", "always", "run_smoke"]
