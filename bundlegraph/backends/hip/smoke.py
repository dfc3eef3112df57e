"""The HIP side of ``smoke:<leg>`` (:class:`~.side.GpuSide`): the bundle's ROCm backend runs on
the host's AMD GPU, and ``test-backend-ops`` compares it with the CPU per op in :data:`OPS`.

No hosted runner has an AMD GPU (GitHub's runners carry none), so on CI these steps never run:
every ROCm leg states ``[smoke] waived`` with that reason, and verify stands in (the code objects
of ``ggml-hip`` are exactly the leg's ``mapped_targets``; the runtime and a rocBLAS kernel file of
every target are in the bundle). The side still runs where an AMD GPU is: a Linux host whose
amdgpu driver exposes the compute device :data:`KFD` (``/dev/kfd``, the node the ROCm runtime
opens: ROCm's "Linux installation prerequisites"). ``HIP_VISIBLE_DEVICES=0`` makes the first GPU
the only one the programs see (ROCm's environment variables reference), so it is ``ROCm0``
(ggml-hip names its devices ``ROCm<n>``: ``ggml/src/ggml-cuda/vendors/hip.h`` builds
``GGML_CUDA_NAME`` as ``ROCm``). Never run on this project's machines: none has an AMD GPU.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...core.lightclass import frozen
from ...pipeline.smoke import side
from ...pipeline.smoke.side import Decision, RunView

BACKEND = "hip"
"""The backend's spec name."""
DEV = "ROCm0"
"""The device the GPU steps run on (the first AMD GPU, made the only visible one)."""
OPS: tuple[tuple[str, str | None], ...] = (side.MUL_MAT_PLAIN,)
"""``test-backend-ops`` runs: the plain MUL_MAT selection (:data:`~bundlegraph.pipeline.smoke.side.MUL_MAT_PLAIN`:
rocBLAS's and ggml's own matrix-vector and matrix-matrix kernels)."""
DOC = "; on an AMD GPU (/dev/kfd; none on a hosted runner: the ROCm legs waive it) its HIP kernels"
"""What ``doit list`` adds for a HIP leg."""
PARALLEL_OPS = False
"""One worker: the cases share one GPU."""
REFERENCE_JOBS: dict[str, str] = {}
"""No throughput check yet: upstream's ROCm jobs build on hosted runners that hold no AMD GPU, and no AMD GPU is reachable from here to run a reference on."""

KFD = Path("/dev/kfd")
"""The amdgpu driver's compute device node: present on a Linux host whose AMD GPU ROCm can use."""
NO_GPU = (
    "no AMD GPU here ({kfd} is absent): no hosted runner has one, so a ROCm bundle's smoke is waived and "
    "verify stands in (its code objects, runtime and rocBLAS kernels)"
)
"""Why the GPU steps do not run on a host without an AMD GPU."""


@frozen
class KfdProbe:
    """Whether this host has an AMD GPU ROCm can use: ``kfd`` (the device node's path, None when
    absent) and ``command`` (how it was asked, for the record)."""

    kfd: str | None
    command: str

    def key(self) -> dict[str, Any]:
        """JSON for action keys: a GPU appearing changes it."""
        return {"kfd": self.kfd}


def probe(kfd: Path = KFD) -> KfdProbe:
    """Whether ``kfd`` exists (module docstring); never raises."""
    return KfdProbe(kfd.as_posix() if kfd.exists() else None, f"test -e {kfd.as_posix()}")


def decide(bundle_os: str, bundle_arch: str, host: tuple[str, str], probe: Any) -> Decision:
    """The GPU steps run when the bundle is this host's os/arch and the host has an AMD GPU (pure)."""
    elsewhere, pj = side.start(bundle_os, bundle_arch, host, probe)
    if elsewhere is not None:
        return elsewhere
    if probe.kfd is None:
        return Decision(False, NO_GPU.format(kfd=KFD.as_posix()), probe=pj)
    return Decision(True, gpu={"index": 0, "name": "AMD GPU 0"}, coverage="gfx targets checked by verify", probe=pj)


runtime_dir = side.no_runtime_dir  # the HIP runtime is in the bundle, beside the programs
decide_here = side.plan_decision_stands  # the code objects were checked by verify


def env(run: RunView) -> dict[str, str]:
    """Only the first AMD GPU (module docstring)."""
    return dict(run.env, HIP_VISIBLE_DEVICES="0")


def describe(decision: Decision) -> str:
    """``the first AMD GPU (/dev/kfd)``."""
    return f"the first AMD GPU ({decision.probe.get('kfd')})"


# no throughput reference, no second bundle to compare with
reference_sms = side.no_reference_sms
reference_problem = side.no_reference_problem
sibling = side.no_sibling
