"""The installer contract: what the installer our release serves reads, requires and chooses.

Checked against unsloth's ``studio/install_llama_prebuilt.py`` in the PyPI package
``unsloth==2026.10.9`` (:data:`CHECKED_AGAINST`); ``docs/installer-contract.md`` states the
whole contract in words, and ``tests/integration/test_installer_contract.py`` runs that
installer's own selection and hash checks against our releases. Nothing here is the
installer's code: these are the facts it was measured to depend on.

- :data:`INSTALL_KINDS`: the ``install_kind`` values it asks for, with the host each describes
  (os, arch, backend); each backend module of :mod:`bundlegraph.schemas.backend` declares its own. A spec's ``install_kind`` must be one of them and match the leg.
- :func:`required_patterns`: the files it requires of a bundle of an install kind (checked
  before install: ``llama-server``/``llama-quantize``; health groups: the shared libraries, by
  glob). A spec's ``required`` list (with its merge base's) must cover them, so ``verify``
  refuses what the installer would.
- :data:`PORTABLE_CLASS`, rank and SM rules: see :mod:`bundlegraph.installer.selection`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from ..core.lightclass import frozen
from ..core.platforms import platform
from . import backend as backends
from .records import IMPL_SPLIT_BUILD

CHECKED_AGAINST = "unsloth==2026.10.9 (studio/install_llama_prebuilt.py)"
"""The installer version this contract was checked against."""

PORTABLE_CLASS = "portable"
"""The ``coverage_class`` the installer treats as the fallback after the best targeted bundle."""


@frozen
class InstallKind:
    """One ``install_kind``: the hosts it serves (``os``, ``archs``) and the ``backend`` of the
    bundles published under it. Most kinds serve one arch; the installer's ``linux-vulkan``
    serves both Linux arches (it tells their bundles apart by name:
    :data:`bundlegraph.backends.vulkan.ARCH_TOKENS`)."""

    name: str
    os: str
    archs: tuple[str, ...]
    backend: str

    @property
    def arch(self) -> str:
        """The arch of a one-arch kind; the first of :attr:`archs` otherwise (use :meth:`serves`
        to ask about a host)."""
        return self.archs[0]

    def serves(self, os: str, arch: str, backend: str) -> bool:
        """Whether a host/bundle of ``os``/``arch``/``backend`` is of this kind."""
        return (os, backend) == (self.os, self.backend) and arch in self.archs


class _InstallKinds(Mapping[str, InstallKind]):
    """The install kinds by name, derived from the backends' registry
    (:func:`bundlegraph.schemas.backend.install_kinds`) at each look-up, so a backend added to the
    registry is seen without editing this module."""

    def __init__(self) -> None:
        self._for: tuple[object, dict[str, InstallKind]] | None = None

    def _rows(self) -> dict[str, InstallKind]:
        # rebuilt only when the registry's tuple is another one (a test's fake backend)
        if self._for is None or self._for[0] is not backends.BACKENDS:
            archs: dict[str, list[str]] = {}
            for k, _o, a, _b in backends.install_kinds():
                archs.setdefault(k, []).append(a)
            rows = {k: InstallKind(k, o, tuple(archs[k]), b) for k, o, _a, b in backends.install_kinds()}
            self._for = (backends.BACKENDS, rows)
        return self._for[1]

    def __getitem__(self, name: str) -> InstallKind:
        return self._rows()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._rows())

    def __len__(self) -> int:
        return len(self._rows())


INSTALL_KINDS: Mapping[str, InstallKind] = _InstallKinds()
"""Every ``install_kind`` the installer asks for, by name, in the order of
:func:`bundlegraph.schemas.backend.install_kinds` (each backend module declares its own)."""


def kind_for(os: str, arch: str, backend: str) -> str:
    """The install kind of a host/bundle of ``os``/``arch``/``backend`` (``linux``, ``arm64``,
    ``cuda`` -> ``linux-arm64-cuda``; ``linux``, ``arm64``, ``vulkan`` -> ``linux-vulkan``).
    Raises KeyError when the installer has none."""
    for k in INSTALL_KINDS.values():
        if k.serves(os, arch, backend):
            return k.name
    raise KeyError(f"no install kind for {os}/{arch}/{backend}")


def required_patterns(kind: str, build_number: int | None, programs: bool = True) -> list[str]:
    """File names/globs a bundle of install kind ``kind`` must hold for the installer to take it.

    Every kind: the two entry points it copies and refuses to install without
    (``llama-server``, ``llama-quantize``; ``.exe`` on Windows). Then its runtime health
    groups: ``llama``, ``llama-common``, ``ggml``, ``ggml-base``, ``ggml-cpu*``, ``mtmd`` shared
    libraries; the ``llama-server-impl`` / ``llama-quantize-impl`` libraries when
    ``build_number`` >= :data:`~bundlegraph.schemas.records.IMPL_SPLIT_BUILD` (or unknown);
    the programs the kind's backend requires besides (``REQUIRED_PROGRAMS``: the DiffusionGemma
    visual server in a Vulkan bundle);
    a GPU backend's own library (``ggml-cuda`` for CUDA kinds, ``ggml-vulkan`` for Vulkan kinds:
    the installer's ``libggml-vulkan.so*`` / ``ggml-vulkan.dll`` groups), and the runtime files of the
    backend it checks when a bundle carries them (:data:`bundlegraph.backends.cuda.RUNTIME_GLOBS`:
    on Windows ``cudart64_*.dll``, ``cublas64_*.dll``, ``cublasLt64_*.dll``). File names follow
    the kind's OS (:mod:`bundlegraph.core.platforms`; one ``ggml-cpu`` library where the OS has no CPU
    variants: macOS). ``programs=False`` leaves the backend's
    ``REQUIRED_PROGRAMS`` out (the spec check does for a leg that is not promised: no upstream tag
    builds the visual server, which comes from llama.cpp PR #24423)."""
    k = INSTALL_KINDS[kind]
    b = backends.backend(k.backend)
    p = platform(k.os)
    # every bundle carries the CPU backend; a GPU bundle its own library too
    cpu = backends.BY_NAME["cpu"].LIBRARY
    libs = ["llama", "llama-common", "ggml", "ggml-base", cpu if p.cpu_variants else cpu.rstrip("*"), "mtmd"]
    if build_number is None or build_number >= IMPL_SPLIT_BUILD:
        libs += ["llama-server-impl", "llama-quantize-impl"]
    if b.GPU:
        libs.append(b.LIBRARY)
    return [
        p.program("llama-server"),
        p.program("llama-quantize"),
        *(p.program(n) for n in (b.REQUIRED_PROGRAMS if programs else ())),
        *(p.library_glob(n) for n in libs),
        *b.RUNTIME_GLOBS.get(k.os, ()),
    ]


__all__ = ["CHECKED_AGAINST", "INSTALL_KINDS", "PORTABLE_CLASS", "InstallKind", "kind_for", "required_patterns"]


BACKFILLED = "llama-diffusion-gemma-visual-server"
"""A program the installer expects in every published bundle of the fork (it comes from a pull
request the fork merges; upstream has no such target): an install without it is downloaded and
extracted again on every run of the installer to backfill it
(``diffusion_visual_server_backfill_needed``; ``.exe`` on Windows). Checked against
:data:`CHECKED_AGAINST`."""
