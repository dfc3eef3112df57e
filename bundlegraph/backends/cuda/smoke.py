"""The CUDA side of ``smoke:<leg>`` (:class:`~.side.GpuSide`): on a host with an NVIDIA GPU
(``nvidia-smi``, :mod:`bundlegraph.core.gpus`) that the bundle's CUDA code covers (its fatbin's SASS
and PTX per SM, :mod:`bundlegraph.checks.fatbin`), the chosen GPU alone is made visible
(``CUDA_VISIBLE_DEVICES`` in the driver's PCI order) and ``test-backend-ops`` compares CUDA with
the CPU per op in :data:`OPS`. The CUDA runtime the leg declares external comes from its toolkit."""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...core.errors import BundleGraphError
from ...pipeline.smoke import side
from ...pipeline.smoke.line import Sibling
from ...pipeline.smoke.side import Decision, RunView
from ...schemas.backend import backend, library_file
from ...toolchains.base import this_host
from .spec import CUDA

if TYPE_CHECKING:
    from ...core.gpus import GpuProbe
    from ...pipeline.base import Context

BACKEND = "cuda"
"""The backend's spec name."""
DEV = "CUDA0"
"""The device the GPU steps run on (the chosen GPU alone is visible)."""
OP_NAMES = ("GET_ROWS", "RMS_NORM", "SOFT_MAX", "MUL_MAT", "MUL_MAT_ID", "FLASH_ATTN_EXT")  # cheapest first
OPS: tuple[tuple[str, str | None], ...] = tuple((op, None) for op in OP_NAMES)
"""``test-backend-ops -o OP`` runs, every case of each op."""
DOC = "; on an NVIDIA GPU its CUDA kernels"
"""What ``doit list`` adds for a CUDA leg."""
PARALLEL_OPS = True
"""``test-backend-ops -j <cores>``."""
REFERENCE_JOBS = {"linux": "ubuntu-cuda"}
"""Upstream's release job per bundle os whose CMake flags build the throughput check's
reference (``.github/workflows/release.yml``; Windows' ``windows-cuda`` builds ggml-cuda alone,
with cmd syntax, and no Windows host with a GPU runs the smoke)."""


def reference_sms(probe: Any) -> list[int]:
    """The SMs of the GPUs ``nvidia-smi`` listed (the reference is built for them alone)."""
    return sorted({g.sm for g in getattr(probe, "gpus", ())})


def reference_problem(probe: Any) -> str | None:
    """Why no throughput figure of this host means anything (None: it does; :data:`REFERENCE_JOBS`
    decides whether there is a check at all)."""
    return None


def probe() -> GpuProbe:
    """The NVIDIA GPUs (``nvidia-smi``, once per process: :func:`bundlegraph.core.gpus.probe`)."""
    from ...core.gpus import probe as nvidia_probe

    return nvidia_probe()


def decide(
    bundle_os: str,
    bundle_arch: str,
    host: tuple[str, str],
    probe: Any,
    sass: Collection[int] | None = None,
    ptx: Collection[int] | None = None,
) -> Decision:
    """Whether a bundle can be smoke-tested here on a GPU, and on which (pure): the bundle's
    os/arch must be this host's, the driver must list a GPU, and (once the bundle's fatbin is
    read: ``sass``/``ptx``, None before) its CUDA code must cover one of them
    (:func:`bundlegraph.core.gpus.covered`)."""
    from ...core.gpus import covered

    elsewhere, pj = side.start(bundle_os, bundle_arch, host, probe)
    if elsewhere is not None:
        return elsewhere
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


def runtime_dir(ctx: Context, leg: str) -> Path | None:
    """The leg's toolkit's target library directory (the CUDA runtime an installer pairs), or
    None when the toolkit is not there."""
    from .sdk import toolkit_for_leg

    try:
        return toolkit_for_leg(ctx, leg).bin_dir
    except BundleGraphError:
        return None


def inventory(unpacked: Path, os_name: str) -> tuple[set[int], set[int], str]:
    """The SASS and PTX SMs of the unpacked bundle's CUDA library, and the fatbin's summary."""
    from ...checks.bundle import mapped
    from ...checks.inspect import inspect_file

    name = library_file(backend(BACKEND), os_name)
    hits = sorted(unpacked.rglob(name))
    if not hits:
        raise BundleGraphError(f"the bundle has no {name}")
    with mapped(hits[0]) as data:
        r = inspect_file(hits[0].name, data)
    if r.fatbin is None:
        raise BundleGraphError(f"{name} in the bundle has no CUDA fatbin")
    return set(r.fatbin.sass), set(r.fatbin.ptx), r.fatbin.summary()


def decide_here(run: RunView, os_name: str, arch: str) -> str | None:
    """The plan's decision (host, driver) made final with the unpacked bundle's fatbin inventory
    (SASS and PTX per SM); sets ``run.decision`` and returns the fatbin's summary."""
    plan = run.plan
    sass, ptx, summary = inventory(run.bundle_dir, os_name)
    if plan.gpus is None or plan.decision is None or not plan.decision.run:
        assert plan.decision is not None  # a GPU leg's plan
        run.decision = plan.decision
    else:
        run.decision = decide(os_name, arch, this_host(), plan.gpus, sass, ptx)
    return summary


def env(run: RunView) -> dict[str, str]:
    """The chosen GPU alone is made visible, in the driver's (PCI) order: it is ``CUDA0``."""
    assert run.decision is not None and run.decision.gpu is not None
    return dict(run.env, CUDA_DEVICE_ORDER="PCI_BUS_ID", CUDA_VISIBLE_DEVICES=str(run.decision.gpu["index"]))


LINE = "cuda12"
"""The toolkit line of the second reference (:func:`sibling`)."""


def sibling(ctx: Context, leg: str) -> Sibling | None:
    """The release's CUDA 12 leg a CUDA 13 ``leg``'s throughput is also compared with, or None
    (not a CUDA 13 leg, or no such CUDA 12 leg for its os and arch). The CUDA 12 bundle is a fair
    reference: it is built with upstream's CUDA 12 flags (``tests/integration/test_upstream_flags.py``
    holds every cuda12 leg to them, ``GGML_CUDA_CUB_3DOT2`` included) and the CUDA 12 toolkit line,
    its own smoke holds it to a reference built with upstream's flags, and it is the bundle an
    installer would have sent the user instead. Which one: a leg with the same os and arch,
    ``profile.line`` ``cuda12``, not PTX-only (the legacy class JIT-compiles on the GPU: its speed
    says nothing of the CUDA 12 toolkit's SASS); of the same class as the bundle where there is
    one, else the highest rank."""
    spec = ctx.spec(leg)
    if CUDA.get(spec) is None or spec.profile.line != "cuda13":
        return None
    legs = ctx.matrix.legs
    candidates = [
        n
        for n, s in legs.items()
        if (cuda := CUDA.get(s)) is not None
        and (s.os, s.arch) == (spec.os, spec.arch)
        and s.profile.line == LINE
        and any(a.sass for a in cuda.archs)
    ]
    if not candidates:
        return None
    best = min(candidates, key=lambda n: (legs[n].profile.klass != spec.profile.klass, -legs[n].profile.rank, n))
    return Sibling(best, "the release's CUDA 12 bundle for this os and arch", "the CUDA 12 runtime")


def describe(decision: Decision) -> str:
    """``GPU 0 NVIDIA H200 (sm_90) via SASS sm_90``."""
    g = decision.gpu or {}
    return f"GPU {g.get('index')} {g.get('name')} (sm_{g.get('sm')}) via {decision.coverage}"
