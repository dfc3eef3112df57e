"""What a CUDA leg puts into its bundles' manifest entry and info file
(:class:`bundlegraph.schemas.entry.EntrySide`): its archs, its toolkit version and the SMs its
GPU code runs on, and what its fatbin and shipped runtime add to the download size.

``supported_sms`` come from the SASS the bundle holds by NVIDIA's compatibility rule, among the
SMs the leg's toolkit knows (:func:`~bundlegraph.schemas.archs.supported_sms_of`); a PTX-only leg
states its own (``cuda.supported_sms``). A planned entry takes the SASS the build will hold
(:func:`planned_sass`): ggml rewrites every plain ``12X`` arch to ``12Xa`` (llama.cpp
``ggml/src/ggml-cuda/CMakeLists.txt``, "Replace any plain 12X CUDA architectures with their
architecture-specific equivalents", for every toolkit), so ``120`` plans SASS ``120a``, which runs
on sm_120 only.

Sizes (MB = 10^6 bytes, of the archive an installer downloads), estimates from measured parts
(BENCHMARKS.md, "Download size per host class"): :data:`ENTRY_MB` per fatbin entry and
:data:`RUNTIME_MB` for the runtime a bundle ships."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...schemas.archs import supported_sms_of
from ...schemas.entry import EntryFields
from .spec import CUDA

if TYPE_CHECKING:
    from ...schemas.records import BundleSpec

ENTRY_MB = 20.8
"""One fatbin entry, compressed as nvcc stores it (deflate gains < 1 % on it). Measured: the real
``app-b11642-…-linux-arm64-cuda13-blackwell.tar.gz`` is 90.7 MB, 83.2 MB more than the 7.5 MB
CPU bundle it merges, for 4 entries (SASS and PTX of 120a and 121a). The npm
``@node-llama-cpp/win-x64-cuda@3.21.1`` ``ggml-cuda.dll`` agrees: 16.1-18.7 MB per SASS entry,
19.7 MB per PTX entry, 143 kernels each."""

RUNTIME_MB = {"windows": {("cuda13", "x64"): 423.3, ("cuda12", "x64"): 423.3, ("cuda13", "arm64"): 154.0}}
"""os -> ``(runtime line, arch)`` -> MB of the CUDA runtime a bundle ships (an OS not named: none
measured, counted as 0; a line and arch not measured: the OS's largest). Windows: ``cudart64``,
``cublas64`` and ``cublasLt64`` in a zip (deflate level 6).
Measured for CUDA 13.4's redist DLLs: windows-x86_64 0.2 + 50.7 + 372.4 MB (0.6 + 54.9 + 493.5 MB
unpacked), windows-arm64 0.2 + 20.9 + 132.9 MB; CUDA 12.8's x64 DLLs are not reachable here and
are taken as 13.4's."""


def planned_sass(spec: BundleSpec) -> list[str]:
    """The SASS targets a CUDA leg's fatbin will hold, as verify reports them (``["86", "120a"]``):
    its archs with SASS, plain ``12X`` rewritten to ``12Xa`` as ggml does (module docstring)."""
    cuda = CUDA.of(spec)
    out = []
    for a in cuda.archs:
        if a.sass:
            plain = not a.feature and 120 <= a.sm <= 129
            out.append(f"{a.sm}{'a' if plain else a.feature}")
    return out


def fields(spec: BundleSpec, sass: list[str] | None) -> EntryFields:
    """The archs in CMake's spelling, the spec's toolkit version and the supported SMs: a PTX-only
    leg's from its spec, else from ``sass`` (the SASS verify found; None: :func:`planned_sass`)."""
    cuda = CUDA.of(spec)
    if cuda.supported_sms:
        sms = list(cuda.supported_sms)
    else:
        sms = supported_sms_of(planned_sass(spec) if sass is None else sass, cuda.version.parts)
    return EntryFields(archs=cuda.cmake_archs, toolkit_version=str(cuda.version), supported_sms=sms)


def extra_mb(spec: BundleSpec) -> float:
    """One :data:`ENTRY_MB` per SASS and per PTX arch, plus the runtime the bundle ships on its OS
    (:data:`RUNTIME_MB`)."""
    cuda = CUDA.of(spec)
    mb = ENTRY_MB * sum(int(a.sass) + int(a.ptx) for a in cuda.archs)
    shipped = RUNTIME_MB.get(spec.os, {})
    if shipped and spec.runtime.ships and spec.profile.line:
        mb += shipped.get((spec.profile.line, spec.arch), max(shipped.values()))
    return mb


if TYPE_CHECKING:  # mypy holds this module to the protocol the manifest's makers ask it by
    from ...schemas.entry import EntrySide
    from . import manifest as _this

    _AS_SIDE: EntrySide = _this
