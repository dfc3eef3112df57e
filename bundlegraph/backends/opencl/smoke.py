"""The OpenCL side of ``smoke:<leg>`` (:class:`~bundlegraph.pipeline.smoke.side.GpuSide`): the
bundle's OpenCL backend runs on the driver an ICD file names, and ``test-backend-ops`` compares it
with the CPU per op in :data:`OPS`.

The driver is the ICD file :data:`ICD_ENV` names (``OCL_ICD_VENDORS=/etc/OpenCL/vendors/intel.icd``,
the ICD loader's own variable, read from the environment the smoke runs in): ggml's
OpenCL backend takes only Adreno and Intel GPUs (``ggml_opencl_probe_devices`` refuses any other
device as "unsupported GPU"), so a host's first driver is no safe default (a CPU driver such as
pocl would be refused, and the smoke would fail for the host, not the bundle). Without it the GPU
steps are recorded as not applicable, with the reason. The programs then see only that driver
(ocl-icd's loader reads that one ICD file when the variable names a file ending in ``.icd``, its
``README``), and ggml's backend lists its device as ``GPUOpenCL``. A bundle whose OpenCL backend does not load, or refuses the device, lists no
``GPUOpenCL`` and offloads nothing: the smoke fails (a silent fallback to the CPU is a failure).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...core.lightclass import frozen
from ...pipeline.smoke.side import Decision, RunView

if TYPE_CHECKING:
    from ...pipeline.base import Context

BACKEND = "opencl"
"""The backend's spec name."""
DEV = "GPUOpenCL"
"""The device the GPU steps run on (``ggml_backend_opencl_device_get_name``)."""
OPS: tuple[tuple[str, str | None], ...] = (
    (
        "MUL_MAT",
        r"type_a=(f32|f16|q4_0|q8_0),type_b=f32,m=16,n=[0-9]+,k=256,bs=\[1,1\],nr=\[1,1\],per=\[0,1,2,3\],"
        r"k_v=0,o=1,src_overlap=0",
    ),
)
"""``test-backend-ops`` runs: the Vulkan side's MUL_MAT cases (f32, f16, q4_0 and q8_0 weights,
plain layouts: the products a model's layers run), both matrix-vector and matrix-matrix kernels."""
DOC = "; on the OpenCL driver OCL_ICD_VENDORS names (an Adreno or Intel GPU's .icd file) its OpenCL kernels"
"""What ``doit list`` adds for an OpenCL leg."""
PARALLEL_OPS = False
"""One worker: a driver compiles each kernel once, on first use."""
REFERENCE_JOBS: dict[str, str] = {}
"""No throughput check: upstream's release builds OpenCL only for Adreno on Windows arm64 and
Android, so no job's flags build a Linux reference."""
ICD_ENV = "OCL_ICD_VENDORS"
"""The ICD loader's variable that names the ICD file (``/etc/OpenCL/vendors/<vendor>.icd``) of the
OpenCL driver the GPU steps run on (ocl-icd's, which the Khronos loader also reads)."""


@frozen
class IcdProbe:
    """The OpenCL driver chosen here: ``icd`` (its ICD file) or ``problem`` (why none), and
    ``command`` (how it was chosen, for the record)."""

    icd: str | None
    problem: str | None
    command: str

    def key(self) -> dict[str, Any]:
        """JSON for action keys: the driver chosen, so another choice changes the key."""
        return {"icd": self.icd, "problem": self.problem}


def reference_sms(probe: Any) -> list[int]:
    """None: no throughput check on this side (:data:`REFERENCE_JOBS`)."""
    return []


def reference_problem(probe: Any) -> str | None:
    """Why there is no throughput figure: no upstream job to build a reference from."""
    return "upstream releases no Linux OpenCL build to compare with"


def probe(environ: Mapping[str, str] | None = None) -> IcdProbe:
    """The OpenCL driver the GPU steps run on (module docstring); never raises."""
    import os

    command = f"${ICD_ENV}"
    chosen = (os.environ if environ is None else environ).get(ICD_ENV, "")
    if not chosen:
        return IcdProbe(
            None,
            f"no OpenCL driver named: {ICD_ENV} is not set (ggml's OpenCL backend runs only on Adreno and Intel "
            "GPUs; name such a driver's ICD file)",
            command,
        )
    if not Path(chosen).is_file() or not chosen.endswith(".icd"):
        return IcdProbe(None, f"{ICD_ENV}={chosen}: no such .icd file (want an OpenCL driver's ICD file)", command)
    return IcdProbe(Path(chosen).as_posix(), None, command)


def decide(bundle_os: str, bundle_arch: str, host: tuple[str, str], probe: Any) -> Decision:
    """The GPU steps run when the bundle is this host's os/arch and a driver was named (pure)."""
    pj = probe.key() | {"command": probe.command}
    if (bundle_os, bundle_arch) != host:
        return Decision(False, f"the bundle is {bundle_os} {bundle_arch}, this host is {host[0]} {host[1]}", probe=pj)
    if probe.icd is None:
        return Decision(False, probe.problem, probe=pj)
    return Decision(True, gpu={"index": 0, "name": Path(probe.icd).name}, coverage=f"ICD {probe.icd}", probe=pj)


def runtime_dir(ctx: Context, leg: str) -> Path | None:
    """Nothing: the loader is the host's and the bundle pairs no runtime."""
    return None


def decide_here(run: RunView, os_name: str, arch: str) -> str | None:
    """The plan's decision stands (the driver compiles the kernels; the device check says whether
    the backend took the device); no device-code summary."""
    assert run.plan.decision is not None  # a GPU leg's plan
    run.decision = run.plan.decision
    return None


def env(run: RunView) -> dict[str, str]:
    """Only the named driver (module docstring)."""
    assert run.decision is not None and run.decision.probe.get("icd")
    return dict(run.env, **{ICD_ENV: run.decision.probe["icd"]})


def describe(decision: Decision) -> str:
    """``the OpenCL driver of /etc/OpenCL/vendors/intel.icd``."""
    return f"the OpenCL driver of {decision.probe.get('icd')}"


__all__ = [
    "BACKEND",
    "DEV",
    "DOC",
    "ICD_ENV",
    "OPS",
    "PARALLEL_OPS",
    "REFERENCE_JOBS",
    "IcdProbe",
    "decide",
    "decide_here",
    "describe",
    "env",
    "probe",
    "reference_problem",
    "reference_sms",
    "runtime_dir",
]
