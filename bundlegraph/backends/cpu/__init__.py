"""The CPU backend: ggml's own CPU code, in every bundle (a GPU bundle carries it too, as the
fallback its programs start with). Registered in :data:`bundlegraph.schemas.backend.BACKENDS`.

Install kinds: the installer's ``linux-cpu``, ``linux-arm64``, ``windows-cpu`` and
``windows-arm64``, and ``macos-x64`` (the fork builds its Intel Mac bundle without Metal) (checked against :data:`~bundlegraph.schemas.installer.CHECKED_AGAINST`;
``docs/installer-contract.md``): the kinds a host without a usable GPU driver asks for.
"""

from __future__ import annotations

from ..verbs import no_required_files, no_table_targets

NAME = "cpu"
"""A spec's ``backend`` value."""

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

DRIVERS: dict[str, str] = {}
"""No driver library on any OS."""

DRIVER_WHAT = ""
"""No driver to describe."""

INSTALL_KINDS: dict[tuple[str, str], str] = {
    ("linux", "x64"): "linux-cpu",
    ("linux", "arm64"): "linux-arm64",
    ("windows", "x64"): "windows-cpu",
    ("windows", "arm64"): "windows-arm64",
    ("macos", "x64"): "macos-x64",
}
"""``(os, arch)`` -> the install kind of this backend's bundles (the installer's names)."""

RUNTIME_GLOBS: dict[str, tuple[str, ...]] = {}
"""No runtime files the installer checks beyond the common libraries."""

CPU_FALLBACK: frozenset[tuple[str, str]] = frozenset()
"""Not a GPU backend: nothing to fall back from."""

SPEC_TABLE: str | None = None
"""No spec table of its own (a CPU leg has neither ``[cuda]`` nor ``[vulkan]``)."""

SDK: str | None = None
"""No SDK: the toolchain's compilers are all a CPU leg needs."""

COMPILER: str | None = None
"""No GPU compiler: a CPU leg's toolchain needs only its C and C++ compilers."""

SMOKE: str | None = None
"""No GPU steps: a CPU leg's smoke is the host checks."""

COMPILED_BY_DRIVER = False
"""Not a GPU backend: no device code."""

REQUIRED_PROGRAMS: tuple[str, ...] = ()
"""No program beyond every bundle's the installer requires of this backend's bundles."""

HOST_GPUS: tuple[str, ...] = ()
"""No GPU vendor routes a host here: a host without a GPU its installer serves asks for CPU."""


CMAKE_OPTION: str | None = None
"""ggml's CMake option that builds this backend (:mod:`bundlegraph.specs.derive` turns it on where a spec
leaves it out); none: ggml builds its CPU backend unless ``GGML_CPU`` is off"""

CMAKE_TARGETS_KEY: str | None = None
"""the CMake cache entry that lists the GPU targets to compile for, filled from the leg's targets
where the spec leaves it out (none)"""


table_targets = no_table_targets
required_files = no_required_files
