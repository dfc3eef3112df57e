"""The step machinery of ``smoke:<leg>``: a :class:`Step` (a name, what it runs, when it does
not apply) and the :class:`SmokeRun` the steps of one run share. The step tables are the host's
(:data:`.host.STEPS`) and the GPU side's (:func:`.gpu.steps_for`); :func:`.run.run_smoke` walks
them."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...core import proc
from ...core.errors import BundleGraphError
from ...core.fsutil import atomic_write_json
from ...core.lightclass import frozen, mutable
from ...core.report import say
from ...schemas.backend import backend, library_file
from .plan import Decision, SmokePlan
from .sides import side_of

if TYPE_CHECKING:
    from .side import GpuSide

Outcome = tuple[str | None, dict[str, Any], str | None]
"""What a step returns: ``(problem or None, facts to record, the command it ran or None)``."""
Gate = Callable[["SmokeRun"], tuple[str, str] | None]
"""When a step does not run: None (it runs), else ``(status, why)``: ``"not applicable"`` or
``"not run"`` (recorded with ``why``; "not run" fails the smoke), or ``""`` (not recorded)."""


@frozen
class Step:
    """One row of a step table: ``name`` (recorded as ``check``), ``run`` and its ``gate`` (by
    default the step always runs)."""

    name: str
    run: Callable[[SmokeRun], Outcome]
    gate: Gate = lambda _run: None


@mutable
class SmokeRun:
    """What the steps of one smoke run share: the ``plan``, the ``launcher`` that starts the
    bundle's programs here (:mod:`bundlegraph.toolchains.emulation`), the unpacked bundle (``bundle_dir``) in
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
    """The device the GPU steps run on (GPU legs: the side's decision, from the plan's probe and,
    for CUDA, the fatbin)."""
    backend_dl: bool = True
    """Whether the bundle was built with ``GGML_BACKEND_DL`` (its info file's ``ggml_backend_dl``):
    only then does ggml load its backends at run time and log each one (the ``backends`` step)."""

    @property
    def side(self) -> GpuSide | None:
        """The leg's GPU side (:mod:`.sides`), None for a CPU leg."""
        return side_of(self.plan.backend)

    @property
    def gpu_lib(self) -> str | None:
        """The bundle's GPU backend library name (``libggml-cuda.so``), for a GPU leg."""
        if self.side is None:
            return None
        return library_file(backend(self.plan.backend), self.plan.os)

    @property
    def gpu_driver(self) -> str | None:
        """The GPU backend's driver library on the bundle's OS (``libcuda.so.1``,
        ``libvulkan.so.1``): present on a host with the driver, never shipped."""
        if self.side is None:
            return None
        return backend(self.plan.backend).DRIVERS.get(self.plan.os)

    def bench_model(self, shape: str) -> Path:
        """The throughput check's model of ``shape`` (:mod:`.throughput`), beside the tiny one."""
        return self.model.with_name(f"bench-{shape}.gguf")

    @property
    def line_dir(self) -> Path:
        """Where the CUDA 12 bundle of the throughput check's second reference is unpacked (:mod:`.line`)."""
        return self.bundle_dir.with_name("line-bundle")

    def fill(self, argv: list[str], dev: str = "") -> list[str]:
        """``argv`` with its placeholders filled (``{bundle}``, ``{model}``, ``{bench_model:<shape>}``,
        ``{reference}``, ``{line}``, ``{dev}``, ``{jobs}``, ``{port}``)."""
        from .bench import SHAPES
        from .reference import reference_bin

        subs = {
            "{bundle}": self.bundle_dir.as_posix(),
            **{f"{{bench_model:{shape}}}": self.bench_model(shape).as_posix() for shape in SHAPES},
            "{reference}": reference_bin(self.plan.tools_dir).as_posix(),
            "{line}": self.line_dir.as_posix(),
            "{model}": self.model.as_posix(),
            "{dev}": dev,
            "{jobs}": self.jobs,
            "{port}": str(self.port),
        }
        out = []
        for a in argv:
            for placeholder, value in subs.items():
                a = a.replace(placeholder, value)
            out.append(a)
        return out

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

    def step(self, name: str, fn: Callable[[SmokeRun], Outcome]) -> None:
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

    def skip_step(self, name: str, status: str, why: str) -> None:
        """Record a step that does not run: ``not applicable`` (with the reason) or ``not run``
        (a failure: with the problem)."""
        self.results.append(
            {"check": name, "status": status, ("reason" if status == "not applicable" else "problem"): why}
        )
        say(f"smoke:{self.plan.leg}: {name}: {status}: {why}")


__all__ = ["Gate", "Outcome", "SmokeRun", "Step"]
