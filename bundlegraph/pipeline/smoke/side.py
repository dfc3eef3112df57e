"""What a GPU backend's side of ``smoke:<leg>`` is (:class:`GpuSide`) and the :class:`Decision`
it makes. A GPU backend of :data:`bundlegraph.backends.BACKENDS` has a module of this package
(:mod:`.cuda`, :mod:`.vulkan`) that the backend module names (``SMOKE``, collected in :func:`.sides.sides`); the plan,
the run and the GPU steps ask the leg's side and never branch on a backend's name. (The sides live
here, not in the backend modules, because the backends table sits below the stages:
``[tool.importlinter]`` in pyproject.toml; the shape of :func:`bundlegraph.verification.table.registry_rows`.)
"""

from __future__ import annotations

from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ...core.lightclass import mutable

if TYPE_CHECKING:
    from ..base import Context


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


def op_args(op: str, params: str | None) -> list[str]:
    """``test-backend-ops`` arguments that pick ``op`` (and its cases by ``params``)."""
    return ["-o", op] + (["-p", params] if params else [])


def ops_key(side: GpuSide) -> list[str]:
    """The ops as the action key records them (a bare op name when no params regex)."""
    return [op if params is None else f"{op} -p {params}" for op, params in side.OPS]


__all__ = ["Decision", "GpuSide", "Probe", "op_args", "ops_key"]
