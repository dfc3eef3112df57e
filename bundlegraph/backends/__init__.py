"""The backends, in one registry: what a backend is (:class:`Backend`) and which there are
(:data:`BACKENDS`). Everything else that names a backend's facts derives from here: the
install kinds the installer asks for, the GPU backends' library and driver file names per OS,
the runtime files the installer checks.

A backend is a module of this package with the attributes of :class:`Backend`; the modules are
checked against it by mypy (a module can implement a protocol) and when this package loads.
This is the shape of :mod:`bundlegraph.pipeline.stages` and of cibuildwheel's
``cibuildwheel/platforms/__init__.py`` (a ``PlatformModule`` protocol and one table), on the
axis that varies per leg. OS-dependent naming comes from :mod:`bundlegraph.platforms`.

Adding a backend: one module here, its entry in :data:`BACKENDS`, and its spec files; its verify
rows (if any) are a module of :mod:`bundlegraph.verification` registered under its name in
:data:`bundlegraph.verification.table.BACKEND_ROWS` (they call :mod:`bundlegraph.checks`, which
sits above this table, so they cannot live in the backend module). The toolchain contribution (GPU
compilers as machine-file ``[binaries]``), the pinned SDK and the smoke GPU steps are not yet read
from here (issue 42's next slice).
"""

from __future__ import annotations

from typing import Protocol

from ..platforms import OS_NAMES, platform
from . import cpu, cuda, vulkan


class Backend(Protocol):
    """A backend module: its spec name and the facts every stage reads about it."""

    NAME: str
    """a spec's ``backend`` value (``cpu``, ``cuda``)"""
    TITLE: str
    """its name in messages (``CUDA``)"""
    GPU: bool
    """whether it drives a GPU (a driver, device code, GPU smoke steps)"""
    LIBRARY: str
    """ggml's library stem for it (``ggml-cuda``; a glob for ``ggml-cpu*``), named per OS by
    :meth:`~bundlegraph.platforms.Platform.library`"""
    DRIVERS: dict[str, str]
    """os -> the driver's library, which a bundle may import without shipping (empty: none)"""
    DRIVER_WHAT: str
    """what the driver is, for messages (``the NVIDIA driver``)"""
    INSTALL_KINDS: dict[tuple[str, str], str]
    """``(os, arch)`` -> the installer's install kind for this backend's bundles"""
    RUNTIME_GLOBS: dict[str, tuple[str, ...]]
    """os -> globs of runtime files the installer checks when a bundle carries them"""
    CPU_FALLBACK: frozenset[tuple[str, str]]
    """``(os, arch)`` of the hosts that fall back to their CPU kind when no bundle of this backend fits"""


BACKENDS: tuple[Backend, ...] = (cpu, cuda, vulkan)
"""Every backend, CPU first (every bundle carries it)."""

BY_NAME: dict[str, Backend] = {b.NAME: b for b in BACKENDS}
"""The backends by spec name."""

BACKEND_NAMES: tuple[str, ...] = tuple(BY_NAME)
"""The spec names, in registry order."""

GPU_BACKENDS: tuple[Backend, ...] = tuple(b for b in BACKENDS if b.GPU)
"""The GPU backends."""


def backend(name: str) -> Backend:
    """The backend of spec name ``name``. Raises KeyError naming the known backends for any other
    (a spec's ``backend`` is validated on load, so only a bug gets here)."""
    try:
        return BY_NAME[name]
    except KeyError:
        raise KeyError(f"unknown backend {name!r}: expected one of {', '.join(BACKEND_NAMES)}") from None


def library_file(b: Backend, os_name: str) -> str:
    """The file name of ``b``'s ggml library on ``os_name`` (``libggml-cuda.so``, ``ggml-cuda.dll``)."""
    return platform(os_name).library(b.LIBRARY)


def driver_owners(os_name: str) -> dict[str, Backend]:
    """The GPU drivers' library file names on ``os_name`` (lower-case where the OS folds case),
    each with the backend whose legs may import it."""
    fold = platform(os_name).fold
    return {(d.lower() if fold else d): b for b in BACKENDS for o, d in b.DRIVERS.items() if o == os_name}


def install_kinds(table: tuple[Backend, ...] | None = None) -> list[tuple[str, str, str, str]]:
    """``(install kind, os, arch, backend)`` for every kind of every backend of ``table``
    (default :data:`BACKENDS`), ordered by OS (:data:`~bundlegraph.platforms.PLATFORMS`), then
    backend, then the backend's own order."""
    return [
        (kind, os_name, arch, b.NAME)
        for os_name in OS_NAMES
        for b in (BACKENDS if table is None else table)
        for (o, arch), kind in b.INSTALL_KINDS.items()
        if o == os_name
    ]


def registry_problems(table: tuple[Backend, ...]) -> list[str]:
    """What is wrong with ``table`` as a registry, one line each (empty: nothing): two backends of
    one name or one install kind, an OS that :mod:`bundlegraph.platforms` does not know, a GPU
    backend without a driver on an OS it has install kinds for. Checked on :data:`BACKENDS` when
    this package loads (a bad table is a bug, so it raises RuntimeError there)."""
    probs = []
    names = [b.NAME for b in table]
    if len(set(names)) != len(names):
        probs.append(f"two backends share a name: {names}")
    kinds = [k for k, *_ in install_kinds(table)]
    if len(set(kinds)) != len(kinds):
        probs.append(f"two backends share an install kind: {sorted(k for k in set(kinds) if kinds.count(k) > 1)}")
    for b in table:
        oses = {o for o, _ in b.INSTALL_KINDS}
        unknown = (oses | set(b.DRIVERS) | set(b.RUNTIME_GLOBS)) - set(OS_NAMES)
        if unknown:
            probs.append(f"backend {b.NAME}: unknown os {sorted(unknown)}: expected one of {', '.join(OS_NAMES)}")
        if b.GPU and oses - set(b.DRIVERS):
            probs.append(f"backend {b.NAME}: a GPU backend with no driver for {sorted(oses - set(b.DRIVERS))}")
    return probs


if _probs := registry_problems(BACKENDS):
    raise RuntimeError("bundlegraph.backends: " + "; ".join(_probs))

__all__ = [
    "BACKENDS",
    "BACKEND_NAMES",
    "BY_NAME",
    "GPU_BACKENDS",
    "Backend",
    "backend",
    "driver_owners",
    "install_kinds",
    "library_file",
    "registry_problems",
]
