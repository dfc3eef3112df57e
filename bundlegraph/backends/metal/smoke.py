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

from typing import Any

from ...core.lightclass import frozen
from ...pipeline.smoke import side
from ...pipeline.smoke.side import Decision, RunView
from ...toolchains.base import this_host

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


def decide(bundle_os: str, bundle_arch: str, host: tuple[str, str], probe: Any) -> Decision:
    """The GPU steps run when the bundle is this host's os/arch and the host is an Apple silicon Mac (pure)."""
    elsewhere, pj = side.start(bundle_os, bundle_arch, host, probe)
    if elsewhere is not None:
        return elsewhere
    if not probe.apple_silicon:
        return Decision(False, f"Metal runs on an Apple silicon Mac; this host is {probe.host}", probe=pj)
    return Decision(True, gpu={"index": 0, "name": "Apple GPU"}, coverage="Metal (embedded shader library)", probe=pj)


runtime_dir = side.no_runtime_dir  # the Metal framework is the system's
decide_here = side.plan_decision_stands  # the shaders compile when the backend starts


def env(run: RunView) -> dict[str, str]:
    """The programs' environment as it is: a Mac has one GPU."""
    return dict(run.env)


def describe(decision: Decision) -> str:
    """``the Mac's GPU (Metal)``."""
    return "the Mac's GPU (Metal)"


# no throughput reference, no second bundle to compare with
reference_sms = side.no_reference_sms
reference_problem = side.no_reference_problem
sibling = side.no_sibling
