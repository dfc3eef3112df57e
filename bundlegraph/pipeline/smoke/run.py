"""The run of ``smoke:<leg>``: the bundle unpacked once, then the steps of the tables in order
(:data:`.host.STEPS`, then for a GPU leg whose device this host has its side's steps,
:func:`.gpu.steps_for`), each recorded as it finishes (:mod:`.steps`), then the verdict.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

from ...core.errors import BundleGraphError, TaskSkipped
from ...core.fsutil import atomic_write_json, rmtree, sha256_file
from ...core.platforms import platform
from ...core.report import say
from ...schemas.smoke_status import sidecar
from . import gpu, host
from .plan import Decision, SmokePlan
from .steps import SmokeRun


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
    return {platform(plan.os).loader_var: plan.runtime_dir.as_posix()}


def run_smoke(plan: SmokePlan) -> list[Path]:
    """Run the host steps, then (GPU leg, a device the bundle runs on here) the GPU steps. Returns
    ``[smoke.json, sidecar]`` when every step that applies passed; raises :class:`TaskSkipped`
    (recorded) when the bundle cannot start here, or :class:`BundleGraphError` naming the failing
    steps (recorded; the bundle leaves ``dist/``)."""
    from ...core.extract import extract
    from ...toolchains.emulation import launcher_for
    from ..bundle.archive import read_bundle_info
    from ..compile import jobs as jobs_mod

    leg = plan.leg
    if not plan.bundle.is_file():
        raise BundleGraphError(f"smoke:{leg}: {plan.bundle} is missing; run package:{leg}")
    info = read_bundle_info(plan.bundle, plan.info_file)
    launcher = launcher_for(info.os, info.arch, sysroot=plan.qemu_sysroot, label=plan.qemu_label)
    if isinstance(launcher, str):
        skipped = {"leg": leg, "status": "skipped", "reason": launcher, "bundle": plan.bundle.name, "probe": {}}
        atomic_write_json(plan.record, skipped)
        say(f"smoke:{leg}: SKIPPED (not a pass): {launcher}")
        raise TaskSkipped(f"smoke:{leg}: {launcher}")
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
        run.backend_dl = info.ggml_backend_dl
        extract(plan.bundle, run.bundle_dir)
        run.walk(host.STEPS)
        side = run.side
        if side is not None:
            summary = side.decide_here(run, info.os, info.arch)
            assert run.decision is not None
            if not run.decision.run or run.decision.gpu is None:
                run.skip_step("gpu", "not applicable", run.decision.reason)
            else:
                run.walk(gpu.steps_for(side))
    finally:
        rmtree(tmp)
    d = run.decision or Decision(False, "not a GPU leg")
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


__all__ = ["run_smoke"]
