"""The Vulkan side of ``smoke:<leg>`` (:class:`~.side.GpuSide`): the bundle's Vulkan backend runs
on one Vulkan driver chosen here, and ``test-backend-ops`` compares it with the CPU per op in
:data:`OPS`.

The driver (its ICD manifest, a JSON file the Khronos loader reads) is, in this order:

1. the file :data:`ICD_ENV` names (``BUNDLEGRAPH_VULKAN_ICD=/usr/share/vulkan/icd.d/nvidia_icd.json``
   on a host with NVIDIA's driver);
2. Mesa's lavapipe (:data:`LAVAPIPE`, Debian 12's ``mesa-vulkan-drivers``): a Vulkan driver that
   runs on the CPU, so every Linux host can run the GPU steps (elsewhere, name a driver).

Otherwise the GPU steps are recorded as not applicable, with the reason. The programs then see
only that driver: ``VK_DRIVER_FILES`` (newer loaders) and ``VK_ICD_FILENAMES`` (its older name,
which older loaders read) name it (the Khronos loader's ``docs/LoaderInterfaceArchitecture.md``, "Table of Debug
Environment Variables"), and ``GGML_VK_VISIBLE_DEVICES=0`` names its first device: ggml skips
CPU-type devices such as lavapipe's unless that variable names them
(``ggml/src/ggml-vulkan/ggml-vulkan.cpp``, ``ggml_vk_instance_init``), and with one driver
visible device 0 is that driver's GPU. A bundle whose Vulkan backend does not load, or sees no
device there, lists no ``Vulkan0`` and offloads nothing: the smoke fails (a silent fallback to
the CPU is a failure).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ...pipeline.smoke import side
from ...pipeline.smoke.side import Decision, RunView
from ...toolchains.base import this_host

BACKEND = "vulkan"
"""The backend's spec name."""
DEV = "Vulkan0"
"""The device the GPU steps run on (the chosen driver's first device)."""
OPS: tuple[tuple[str, str | None], ...] = (side.MUL_MAT_PLAIN,)
"""``test-backend-ops`` runs: the plain MUL_MAT selection
(:data:`~bundlegraph.pipeline.smoke.side.MUL_MAT_PLAIN`), 45 cases, both the matrix-vector and the
matrix-matrix shaders of each type. Short on purpose. Measured 2026-12-05 with the release's bundle (b11642) on lavapipe, 2 loaded
cores: 2 min 10 s with an empty Mesa shader cache, 1.6 s warm; the whole MUL_MAT list of those
types (531 cases) crashed test-backend-ops there (segmentation fault after 2 min with one worker,
after 7 s with ``-j 2``; each case it reached passed, and the case after the last passed alone)."""
DOC = "; on a Vulkan driver (BUNDLEGRAPH_VULKAN_ICD, else Mesa's lavapipe) its Vulkan kernels"
"""What ``doit list`` adds for a Vulkan leg."""
PARALLEL_OPS = False
"""One worker (test-backend-ops's default): ``-j 2`` crashed on lavapipe sooner (:data:`OPS`)."""
REFERENCE_JOBS: dict[str, str] = {"linux": "ubuntu-vulkan"}
"""Upstream's release job per bundle os whose CMake flags build the throughput check's reference
(``.github/workflows/release.yml``: ``ubuntu-vulkan``, one matrix entry per arch, no toolkit
label). The check runs only on a real GPU's driver (:func:`reference_problem`); Windows'
``windows`` job builds ggml-vulkan alone with cmd syntax."""
ICD_ENV = "BUNDLEGRAPH_VULKAN_ICD"
"""Names the ICD manifest of the Vulkan driver the GPU steps run on."""
ICD_DIR = Path("/usr/share/vulkan/icd.d")
"""Where Debian's Vulkan drivers install their ICD manifests."""
LAVAPIPE = {"x64": "lvp_icd.x86_64.json", "arm64": "lvp_icd.aarch64.json"}
"""Mesa's lavapipe ICD manifest per host arch (Debian 12 ``mesa-vulkan-drivers``)."""


IcdProbe = side.DriverFileProbe

reference_sms = side.no_reference_sms


def reference_problem(probe: Any) -> str | None:
    """Why this host's throughput figures mean nothing: the chosen driver is Mesa's lavapipe, a CPU
    rasterizer (its speed says nothing of the bundle's GPU code), or there is no driver."""
    icd = getattr(probe, "icd", None)
    if icd is None:
        return getattr(probe, "problem", None) or "no Vulkan driver"
    if Path(icd).name.startswith("lvp_icd"):
        return f"the Vulkan driver is Mesa's lavapipe ({icd}), a CPU rasterizer: no speed to compare (name a GPU's driver in {ICD_ENV})"
    return None


def probe(environ: Mapping[str, str] | None = None) -> IcdProbe:
    """The Vulkan driver the GPU steps run on (module docstring); never raises."""
    from ...core import settings

    lvp = ICD_DIR / LAVAPIPE.get(this_host()[1], "lvp_icd.json")
    command = f"${ICD_ENV}, else {lvp.as_posix()}"
    chosen = settings.get(ICD_ENV, environ)
    if chosen:
        if not Path(chosen).is_file():
            return IcdProbe(None, f"{ICD_ENV}={chosen}: no such file (want a Vulkan driver's ICD manifest)", command)
        return IcdProbe(Path(chosen).as_posix(), None, command)
    if lvp.is_file():
        return IcdProbe(lvp.as_posix(), None, command)
    return IcdProbe(
        None,
        f"no Vulkan driver: {ICD_ENV} is not set and Mesa's lavapipe ({lvp.as_posix()}, Debian's "
        "mesa-vulkan-drivers) is not installed",
        command,
    )


decide = side.decide_on_driver_file

runtime_dir = side.no_runtime_dir  # the loader is the host's and the bundle pairs no runtime


decide_here = side.plan_decision_stands


def env(run: RunView) -> dict[str, str]:
    """Only the chosen driver, and its first device named for ggml (module docstring)."""
    assert run.decision is not None and run.decision.probe.get("icd")
    icd = run.decision.probe["icd"]
    return dict(run.env, VK_DRIVER_FILES=icd, VK_ICD_FILENAMES=icd, GGML_VK_VISIBLE_DEVICES="0")


def describe(decision: Decision) -> str:
    """``the Vulkan driver of /usr/share/vulkan/icd.d/lvp_icd.x86_64.json``."""
    return f"the Vulkan driver of {decision.probe.get('icd')}"


sibling = side.no_sibling
