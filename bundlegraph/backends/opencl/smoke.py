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
from typing import Any

from ...pipeline.smoke import side
from ...pipeline.smoke.side import Decision, RunView

BACKEND = "opencl"
"""The backend's spec name."""
DEV = "GPUOpenCL"
"""The device the GPU steps run on (``ggml_backend_opencl_device_get_name``)."""
OPS: tuple[tuple[str, str | None], ...] = (side.MUL_MAT_PLAIN,)
"""``test-backend-ops`` runs: the plain MUL_MAT selection (:data:`~bundlegraph.pipeline.smoke.side.MUL_MAT_PLAIN`),
both matrix-vector and matrix-matrix kernels."""
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


IcdProbe = side.DriverFileProbe

reference_sms = side.no_reference_sms


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


decide = side.decide_on_driver_file

runtime_dir = side.no_runtime_dir  # the loader is the host's and the bundle pairs no runtime


decide_here = side.plan_decision_stands


def env(run: RunView) -> dict[str, str]:
    """Only the named driver (module docstring)."""
    assert run.decision is not None and run.decision.probe.get("icd")
    return dict(run.env, **{ICD_ENV: run.decision.probe["icd"]})


def describe(decision: Decision) -> str:
    """``the OpenCL driver of /etc/OpenCL/vendors/intel.icd``."""
    return f"the OpenCL driver of {decision.probe.get('icd')}"


sibling = side.no_sibling
