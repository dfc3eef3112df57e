"""What a GPU backend's side of ``smoke:<leg>`` is (:class:`GpuSide`), the :class:`Decision` it
makes, and the parts several sides share (:data:`MUL_MAT_PLAIN`, :class:`DriverFileProbe`,
:func:`start`, :func:`plan_decision_stands` ...). A GPU backend's side is the module its
package names in ``SMOKE`` (``bundlegraph/backends/<name>/smoke.py``, collected in
:func:`.sides.sides`); the plan, the run and the GPU steps ask the leg's side and never branch on
a backend's name. The backend's facts (its ``__init__``) never import its side, so the registry
stays below the stages (``[tool.importlinter]`` in pyproject.toml)."""

from __future__ import annotations

from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ...core.lightclass import frozen, mutable

if TYPE_CHECKING:
    from ..base import Context
    from .line import Sibling


@mutable
class Decision:
    """``run``: whether to run the checks; ``reason`` when not; ``gpu`` chosen and how the
    bundle covers it (``coverage``); ``probe`` as JSON."""

    run: bool
    reason: str = ""
    gpu: dict[str, Any] | None = None
    coverage: str | None = None
    probe: dict[str, Any] = field(default_factory=dict)


class RunView(Protocol):
    """What a side reads of a smoke run (:class:`.steps.SmokeRun` has it all): the ``plan``,
    the unpacked ``bundle_dir``, the programs' ``env`` and the GPU ``decision``. A protocol, so
    the sides import nothing of :mod:`.steps`, which imports them (no import circle)."""

    plan: Any
    bundle_dir: Path
    env: dict[str, str]
    decision: Decision | None


class Probe(Protocol):
    """What a side found on this host before anything runs (NVIDIA's GPUs, a Vulkan driver):
    ``command`` (how it asked, for the record) and its action-key JSON (:meth:`key`: a GPU or a
    driver appearing changes it)."""

    @property
    def command(self) -> str: ...

    def key(self) -> dict[str, Any]: ...


class GpuSide(Protocol):
    """A GPU backend's part of the smoke: a module of this package."""

    BACKEND: str
    """the backend's spec name (``cuda``, ``vulkan``)"""
    DEV: str
    """the ggml device the GPU steps run on (``CUDA0``, ``Vulkan0``): the chosen device alone is
    made visible, so it is always device 0"""
    OPS: tuple[tuple[str, str | None], ...]
    """``test-backend-ops`` runs, cheapest first: ``(op, params regex or None)`` (``-o OP -p REGEX``)"""
    DOC: str
    """what ``doit list`` adds for a leg of this backend (``; on an NVIDIA GPU its CUDA kernels``)"""
    PARALLEL_OPS: bool
    """whether ``test-backend-ops`` may run its cases on parallel workers (``-j N``, N = cores)"""
    REFERENCE_JOBS: dict[str, str]
    """bundle os -> the job of upstream's ``.github/workflows/release.yml`` whose flags build the
    throughput check's reference (:mod:`.reference`); an os not here has no throughput check"""

    def reference_sms(self, probe: Any) -> list[int]:
        """The compute capabilities the reference build targets, from this host's probe (the
        GPUs' own; empty where there is none)."""
        ...

    def reference_problem(self, probe: Any) -> str | None:
        """Why this host's throughput figures would mean nothing (Vulkan on lavapipe, a CPU
        rasterizer), or None: the reference is built and the check runs."""
        ...

    def probe(self) -> Probe:
        """What this host offers the GPU steps (never raises for a host without one)."""
        ...

    def decide(self, bundle_os: str, bundle_arch: str, host: tuple[str, str], probe: Any) -> Decision:
        """Whether the GPU steps can run here, before the bundle is unpacked (pure)."""
        ...

    def sibling(self, ctx: Context, leg: str) -> Sibling | None:
        """The release's leg whose bundle the throughput check also compares ``leg``'s with
        (:mod:`.line`: a CUDA 13 leg's CUDA 12 sibling), or None: none."""
        ...

    def runtime_dir(self, ctx: Context, leg: str) -> Path | None:
        """The directory of the runtime the leg declares external and its bundle pairs (CUDA's
        toolkit libraries), put first on the programs' loader path; None: nothing to add."""
        ...

    def decide_here(self, run: RunView, os_name: str, arch: str) -> str | None:
        """The decision made final with the unpacked bundle (sets ``run.decision``); returns a
        summary of the bundle's device code for the record (the fatbin), or None."""
        ...

    def env(self, run: RunView) -> dict[str, str]:
        """The programs' environment for the GPU steps: the chosen device alone, as :attr:`DEV`."""
        ...

    def describe(self, decision: Decision) -> str:
        """The chosen device in words, for the run's output."""
        ...


MUL_MAT_PLAIN: tuple[str, str] = (
    "MUL_MAT",
    r"type_a=(f32|f16|q4_0|q8_0),type_b=f32,m=16,n=[0-9]+,k=256,bs=\[1,1\],nr=\[1,1\],per=\[0,1,2,3\],"
    r"k_v=0,o=1,src_overlap=0",
)
"""A ``test-backend-ops`` run (an :attr:`GpuSide.OPS` entry): MUL_MAT with f32, f16, q4_0 and q8_0
weights and f32 activations (the products a model's layers run), plain layouts only (no batch
broadcast, no permutation): 45 cases, n = 1..9 and 16, so both the matrix-vector and the
matrix-matrix kernels of each type. The Vulkan, HIP and OpenCL sides run it."""


# The parts several sides share: a side assigns them to its own names (``runtime_dir =
# no_runtime_dir``), so a new backend's side copies only what is its own.


def no_reference_sms(probe: Any) -> list[int]:
    """No SMs: the side has no throughput check (its :attr:`GpuSide.REFERENCE_JOBS` is empty) or
    targets no compute capability."""
    return []


def no_reference_problem(probe: Any) -> str | None:
    """None: a throughput figure of this host would mean something (whether there is a check at
    all is :attr:`GpuSide.REFERENCE_JOBS`'s)."""
    return None


def no_sibling(ctx: Context, leg: str) -> Sibling | None:
    """None: the throughput check compares with the side's own reference alone."""
    return None


def no_runtime_dir(ctx: Context, leg: str) -> Path | None:
    """Nothing to put on the loader path: the runtime is the host's, or in the bundle."""
    return None


def plan_decision_stands(run: RunView, os_name: str, arch: str) -> str | None:
    """The plan's decision stands with the unpacked bundle (the device check says whether the
    backend took the device); no device-code summary."""
    assert run.plan.decision is not None  # a GPU leg's plan
    run.decision = run.plan.decision
    return None


def start(
    bundle_os: str, bundle_arch: str, host: tuple[str, str], probe: Any
) -> tuple[Decision | None, dict[str, Any]]:
    """What every side's ``decide`` begins with (pure): the decision not to run on a host of another
    os/arch than the bundle's (None on the bundle's own), and the probe's record every decision
    carries (its :meth:`Probe.key` and ``command``)."""
    pj = probe.key() | {"command": probe.command}
    if (bundle_os, bundle_arch) != host:
        return Decision(
            False, f"the bundle is {bundle_os} {bundle_arch}, this host is {host[0]} {host[1]}", probe=pj
        ), pj
    return None, pj


@frozen
class DriverFileProbe:
    """The driver chosen here by a file that names it (a Vulkan ICD manifest, an OpenCL ``.icd``
    file): ``icd`` (its path) or ``problem`` (why none), and ``command`` (how it was chosen, for
    the record)."""

    icd: str | None
    problem: str | None
    command: str

    def key(self) -> dict[str, Any]:
        """JSON for action keys: the driver chosen, so another choice changes the key."""
        return {"icd": self.icd, "problem": self.problem}


def decide_on_driver_file(bundle_os: str, bundle_arch: str, host: tuple[str, str], probe: Any) -> Decision:
    """The GPU steps run when the bundle is this host's os/arch and a :class:`DriverFileProbe`
    chose a driver (pure)."""
    elsewhere, pj = start(bundle_os, bundle_arch, host, probe)
    if elsewhere is not None:
        return elsewhere
    if probe.icd is None:
        return Decision(False, probe.problem, probe=pj)
    return Decision(True, gpu={"index": 0, "name": Path(probe.icd).name}, coverage=f"ICD {probe.icd}", probe=pj)


def op_args(op: str, params: str | None) -> list[str]:
    """``test-backend-ops`` arguments that pick ``op`` (and its cases by ``params``)."""
    return ["-o", op] + (["-p", params] if params else [])


def ops_key(side: GpuSide) -> list[str]:
    """The ops as the action key records them (a bare op name when no params regex)."""
    return [op if params is None else f"{op} -p {params}" for op, params in side.OPS]


__all__ = [
    "MUL_MAT_PLAIN",
    "Decision",
    "DriverFileProbe",
    "GpuSide",
    "Probe",
    "decide_on_driver_file",
    "no_reference_problem",
    "no_reference_sms",
    "no_runtime_dir",
    "no_sibling",
    "op_args",
    "ops_key",
    "plan_decision_stands",
    "start",
]
