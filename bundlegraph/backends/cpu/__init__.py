"""The CPU backend: ggml's own CPU code, in every bundle (a GPU bundle carries it too, as the
fallback its programs start with). Registered in :data:`bundlegraph.schemas.backend.BACKENDS`.

Install kinds: the installer's ``linux-cpu``, ``linux-arm64``, ``windows-cpu`` and
``windows-arm64``, and ``macos-x64`` (the fork builds its Intel Mac bundle without Metal) (checked against :data:`~bundlegraph.schemas.installer.CHECKED_AGAINST`;
``docs/installer-contract.md``): the kinds a host without a usable GPU driver asks for.

Every member of :class:`~bundlegraph.schemas.backend.Backend` not set below keeps its default
(:data:`~bundlegraph.schemas.backend.DEFAULTS`): no driver, spec table, SDK, GPU compiler, smoke
GPU steps or CMake option (ggml builds its CPU backend unless ``GGML_CPU`` is off), and no GPU
vendor routes a host here (a host without a GPU its installer serves asks for CPU).
"""

from __future__ import annotations

ORDER = 0
"""Its place in the registry (:data:`bundlegraph.schemas.backend.BACKENDS`, lowest first)."""

TITLE = "CPU"
"""Its name in messages."""

GPU = False
"""Not a GPU backend: no driver, no device code, no GPU smoke steps."""

LIBRARY = "ggml-cpu*"
"""ggml's CPU backend library, as a stem glob: ``ggml-cpu`` or, with ``GGML_CPU_ALL_VARIANTS``,
one per CPU feature level (``ggml-cpu-haswell``); what ggml looks for beside the programs under
``GGML_BACKEND_DL``."""


INSTALL_KINDS: dict[tuple[str, str], str] = {
    ("linux", "x64"): "linux-cpu",
    ("linux", "arm64"): "linux-arm64",
    ("windows", "x64"): "windows-cpu",
    ("windows", "arm64"): "windows-arm64",
    ("macos", "x64"): "macos-x64",
}
"""``(os, arch)`` -> the install kind of this backend's bundles (the installer's names)."""
