"""The Metal side of ``smoke:<leg>`` (:class:`~.side.GpuSide`): the bundle's Metal backend runs on
the Mac's GPU, and ``test-backend-ops`` compares it with the CPU per op in :data:`OPS`.

It runs on an Apple silicon Mac: GitHub's ``macos-26`` runner, where the release's
``macos-arm64`` job smokes the bundle before publish (version, libraries, generation, serve,
then these GPU steps). Every Apple silicon Mac has a Metal GPU (Apple's Metal feature set tables:
all Apple-family GPUs), so the probe asks only whether this host is one. ggml-metal names its
device ``MTL0`` (``ggml/src/ggml-metal/ggml-metal-device.m``). Planned here, never run: this
project's machines are Linux.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...core.lightclass import frozen
from ...pipeline.smoke.side import Decision, RunView
from ...toolchains.base import this_host

if TYPE_CHECKING:
    from ...pipeline.base import Context

BACKEND = "metal"
"""The backend's spec name."""
DEV = "MTL0"
"""The device the GPU steps run on (the Mac's GPU)."""
OPS: tuple[tuple[str, str | None], ...] = (
    (
        "MUL_MAT",
        r"type_a=(f32|f16|q4_0|q8_0),type_b=f32,m=16,n=[0-9]+,k=256,bs=\[1,1\],nr=\[1,1\],per=\[0,1,2,3\],"
        r"k_v=0,o=1,src_overlap=0",
    ),
)
"""``test-backend-ops`` runs: the Vulkan side's MUL_MAT selection (f32, f16, q4_0 and q8_0 weights,
plain layouts, n = 1..9 and 16: the matrix-vector and matrix-matrix kernels of each type)."""
DOC = "; on an Apple silicon Mac (the macos-26 runner) its Metal kernels"
"""What ``doit list`` adds for a Metal leg."""
PARALLEL_OPS = False
"""One worker: the cases share one GPU."""
REFERENCE_JOBS: dict[str, str] = {}
"""No throughput check yet: upstream's macOS jobs build on hosted runners; a reference on an Apple GPU is left for when a Mac runs the smoke."""


@frozen
class MacProbe:
    """Whether this host is an Apple silicon Mac: ``host`` (``macos arm64``; another host's
    ``os arch``) and ``command`` (how it was asked, for the record)."""

    host: str
    command: str

    @property
    def apple_silicon(self) -> bool:
        return self.host == "macos arm64"

    def key(self) -> dict[str, Any]:
        """JSON for action keys: another host changes it."""
        return {"host": self.host}


def probe(host: tuple[str, str] | None = None) -> MacProbe:
    """This host's os and arch (:func:`~bundlegraph.toolchains.base.this_host`); never raises."""
    os_name, arch = host or this_host()
    return MacProbe(f"{os_name} {arch}", "uname -s -m")


def reference_sms(probe: Any) -> list[int]:
    """None: no throughput check on this side (:data:`REFERENCE_JOBS`)."""
    return []


def reference_problem(probe: Any) -> str | None:
    """Why no throughput figure of this host means anything (None: it does; :data:`REFERENCE_JOBS`
    decides whether there is a check at all)."""
    return None


def decide(bundle_os: str, bundle_arch: str, host: tuple[str, str], probe: Any) -> Decision:
    """The GPU steps run when the bundle is this host's os/arch and the host is an Apple silicon Mac (pure)."""
    pj = probe.key() | {"command": probe.command}
    if (bundle_os, bundle_arch) != host:
        return Decision(False, f"the bundle is {bundle_os} {bundle_arch}, this host is {host[0]} {host[1]}", probe=pj)
    if not probe.apple_silicon:
        return Decision(False, f"Metal runs on an Apple silicon Mac; this host is {probe.host}", probe=pj)
    return Decision(True, gpu={"index": 0, "name": "Apple GPU"}, coverage="Metal (embedded shader library)", probe=pj)


def runtime_dir(ctx: Context, leg: str) -> Path | None:
    """Nothing: the Metal framework is the system's."""
    return None


def decide_here(run: RunView, os_name: str, arch: str) -> str | None:
    """The plan's decision stands; no device-code summary (the shaders compile when the backend starts)."""
    assert run.plan.decision is not None  # a GPU leg's plan
    run.decision = run.plan.decision
    return None


def env(run: RunView) -> dict[str, str]:
    """The programs' environment as it is: a Mac has one GPU."""
    return dict(run.env)


def describe(decision: Decision) -> str:
    """``the Mac's GPU (Metal)``."""
    return "the Mac's GPU (Metal)"


__all__ = [
    "BACKEND",
    "DEV",
    "DOC",
    "OPS",
    "PARALLEL_OPS",
    "REFERENCE_JOBS",
    "MacProbe",
    "decide",
    "decide_here",
    "describe",
    "env",
    "probe",
    "reference_problem",
    "reference_sms",
    "runtime_dir",
]
