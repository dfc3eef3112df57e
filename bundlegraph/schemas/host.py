"""A host as the installer sees it, and what it gets: :class:`Host`, :class:`Selection` and the
shape of a backend's ``install`` module (:class:`InstallSide`), which holds its own fit rules. Records and rules on the records' floor, so that a backend's module
imports no floor above them; the selection itself is :mod:`bundlegraph.installer.selection`."""

from __future__ import annotations

from dataclasses import field
from typing import TYPE_CHECKING, Any, Protocol

from ..core.lightclass import frozen, mutable
from .manifest import ManifestArtifact

if TYPE_CHECKING:
    from .records import BundleSpec


@frozen
class Host:
    """A host as data. ``sms``: GPU SM numbers (``(121,)``); ``driver_cuda``: ``(13, 0)`` or
    None (no NVIDIA driver); ``runtime_lines``: lines whose runtime libraries are present, None
    for every line the driver allows; ``gpu``: the vendor of a GPU the host has besides
    (``intel``; ``amd``: an AMD GPU without ROCm), None for none (the installer looks for one
    only on a host without a usable NVIDIA driver)."""

    os: str
    arch: str
    sms: tuple[int, ...] = ()
    driver_cuda: tuple[int, int] | None = None
    runtime_lines: tuple[str, ...] | None = None
    gpu: str | None = None
    gfx: str | None = None
    """an AMD GPU with ROCm: its gfx target (``gfx1100``); None: no ROCm GPU"""

    @property
    def nvidia(self) -> bool:
        return self.driver_cuda is not None

    def describe(self) -> str:
        gpu = (
            f"sm {','.join(map(str, self.sms)) or 'unknown'}, driver CUDA {self.driver_cuda[0]}.{self.driver_cuda[1]}"
            if self.driver_cuda
            else f"AMD {self.gfx} with ROCm"
            if self.gfx
            else "no NVIDIA GPU"
        )
        other = f", {GPU_WORDS.get(self.gpu, self.gpu)}" if self.gpu else ""
        return f"{self.os} {self.arch} ({gpu}{other})"

    def to_json(self) -> dict[str, Any]:
        return {
            "os": self.os,
            "arch": self.arch,
            "sms": list(self.sms),
            "driver_cuda": f"{self.driver_cuda[0]}.{self.driver_cuda[1]}" if self.driver_cuda else None,
            "runtime_lines": list(self.runtime_lines) if self.runtime_lines is not None else None,
            "gpu": self.gpu,
        } | ({"gfx": self.gfx} if self.gfx else {})


GPU_WORDS = {"intel": "an Intel GPU", "amd": "an AMD GPU without ROCm"}
"""How :meth:`Host.describe` says a ``gpu`` vendor."""


@mutable
class Selection:
    """What a host gets: ``attempts`` (asset names in the order an installer tries them; the
    first is the ``choice``, None when empty), the ``install_kind`` of the choice (None when
    nothing fits), the kinds ``asked`` for in order, ``rejected`` (asset, reason) for every other candidate,
    and what the host downloads: ``download_mb`` (the choice's size in MB, 10^6 bytes; None when
    nothing is chosen or its size is unknown) and ``size_from`` (``measured``: the SHA index's
    bytes of the built bundle; ``estimated``: :func:`bundlegraph.installer.planned.estimate_mb`)."""

    host: Host
    asked: list[str]
    attempts: list[str] = field(default_factory=list)
    install_kind: str | None = None
    rejected: list[tuple[str, str]] = field(default_factory=list)
    download_mb: float | None = None
    size_from: str | None = None

    @property
    def choice(self) -> str | None:
        return self.attempts[0] if self.attempts else None

    def to_json(self) -> dict[str, Any]:
        return {
            "host": self.host.to_json(),
            "asked": self.asked,
            "choice": self.choice,
            "install_kind": self.install_kind,
            "attempts": self.attempts,
            "rejected": [{"asset": a, "reason": r} for a, r in self.rejected],
            "download_mb": self.download_mb,
            "size_from": self.size_from,
        }


def vendor_hosts(os_name: str, arch: str, vendors: tuple[str, ...]) -> list[Host]:
    """A host of ``os_name``/``arch`` with a GPU of each of ``vendors`` and no NVIDIA driver (a
    backend's :attr:`~bundlegraph.schemas.backend.Backend.HOST_GPUS`), else one plain host: the host
    classes a kind serves when its backend's facts alone describe them."""
    return [Host(os_name, arch, gpu=v) for v in vendors] or [Host(os_name, arch)]


class InstallSide(Protocol):
    """How the installer treats the kinds of one backend: which bundle of a kind a host tries
    (:meth:`attempts`), which host classes a kind serves (:meth:`host_classes`) and which a leg
    claims (:meth:`claims`). Its package's ``install`` module (:func:`bundlegraph.schemas.backend.plug_in`:
    CUDA's per-line choice over SMs and drivers, Vulkan's by arch, ROCm's by gfx target); a
    backend without one is chosen by :func:`lowest_rank`, its hosts described by its facts alone
    (a host of each GPU vendor it serves, else a plain one)."""

    def attempts(self, sel: Selection, kind: str, arts: list[ManifestArtifact], host: Host) -> list[str]:
        """the asset names of ``kind`` the host tries, in order; every other candidate of ``kind``
        is added to ``sel.rejected`` with the reason"""
        ...

    def host_classes(self, os_name: str, arch: str, drivers: list[tuple[int, int]]) -> list[Host]:
        """the host classes one of its kinds serves on ``os_name``/``arch`` (``drivers``: every
        NVIDIA driver a release is asked about, :func:`bundlegraph.installer.selection.driver_lines`)"""
        ...

    def claims(self, spec: BundleSpec) -> list[Host]:
        """the host classes a promised leg of it claims to serve"""
        ...
