"""The HIP backend (AMD GPUs through ROCm): ``ggml-hip``, the runtime a bundle ships, the fork's
gfx families, its install kinds and the installer's rules for choosing a ROCm bundle.
Registered in :data:`bundlegraph.schemas.backend.BACKENDS`.

Sources:

- the gfx families, their expansion and TheRock's archive names: the fork's
  ``.github/workflows/unsloth-prebuilt-rocm.yml`` (its ``mapped_target`` switch and the
  ``<family>-all`` archive mapping) and ``scripts/unsloth/assemble_metadata.py``
  (``ROCM_TARGET_MAP``: the manifest's ``gfx_target`` / ``mapped_targets``), in the mirror of
  ``unslothai/llama.cpp``; read, not copied. This module holds the one table
  (:data:`FAMILIES`): :data:`bundlegraph.backends.hip.gfx.GFX_FAMILIES` (the code-object check's
  ``--expect`` families) is this table.
- the runtime a bundle carries: the same workflow's copy steps (``libamdhip64``, comgr, rocBLAS,
  hipBLAS(Lt), their ``rocm_sysdeps`` and the ``rocblas/library`` / ``hipblaslt/library`` kernel
  folders, with ``$ORIGIN`` rpaths on Linux; the DLLs beside the programs on Windows). Unlike
  CUDA's, the HIP runtime is shipped: the host brings only the amdgpu kernel driver
  (``/dev/kfd``, ``/dev/dri``), which no file of the bundle imports by name, so :data:`DRIVERS`
  is empty and :data:`SHIPS_RUNTIME` says why.
- the install kinds, the runtime groups, the kernel folders and the selection facts: the
  installer (:data:`~bundlegraph.schemas.installer.CHECKED_AGAINST`): ``linux-rocm`` /
  ``windows-rocm``, ``published_rocm_choice_for_host`` (a host's gfx against a bundle's
  ``mapped_targets`` or its ``gfx_target`` label), ``runtime_subdirs_for_choice``
  (``hipblaslt``, ``rocblas``), ``WINDOWS_HIP_PREBUILT_GFX_TARGETS`` (must stay a superset of
  the windows-rocm ``mapped_targets``).
- field failures the runtime rules catch: a Windows bundle without ``hipblas.dll``
  (ggml-org/llama.cpp#26996: ``ggml-hip.dll`` imports it, so the bundle does not load), and a
  runtime copy without the rocBLAS kernel folder for the bundle's gfx (rocBLAS aborts at its
  first GEMM: "Cannot read TensileLibrary_lazy_<gfx>.dat").

Left at their defaults (:data:`~bundlegraph.schemas.backend.DEFAULTS`): no user-mode driver library is
imported unshipped (the HIP runtime, ``libamdhip64``, ``libhsa-runtime64``, ``amdhip64_*.dll``, is
in the bundle: :data:`SHIPS_RUNTIME`); no runtime globs the installer checks beyond ``ggml-hip``;
no CPU fallback (a ROCm host whose gfx no bundle covers builds HIP from source, or takes Vulkan
when hipcc is missing); no vendor routing (a ROCm host is described by its gfx target; an AMD GPU
without ROCm is Vulkan's, :data:`bundlegraph.backends.vulkan.HOST_GPUS`).
"""

from __future__ import annotations

ORDER = 30
"""Its place in the registry (:data:`bundlegraph.schemas.backend.BACKENDS`, lowest first)."""

TITLE = "ROCm (HIP)"
"""Its name in messages."""

GPU = True
"""A GPU backend: device code (clang offload bundles of gfx code objects) and a GPU to run on."""

LIBRARY = "ggml-hip"
"""ggml's HIP backend library stem (``libggml-hip.so`` / ``ggml-hip.dll``): the file whose code
objects must be exactly the leg's ``mapped_targets``."""


SHIPS_RUNTIME = True
"""The backend's user-mode runtime is shipped in the bundle; the host provides only a kernel
driver (:data:`DRIVER_WHAT`), so the registry does not ask for a driver library."""

DRIVER_WHAT = "the amdgpu kernel driver"
"""What the host must provide, for messages."""

INSTALL_KINDS: dict[tuple[str, str], str] = {
    ("linux", "x64"): "linux-rocm",
    ("windows", "x64"): "windows-rocm",
}
"""``(os, arch)`` -> the install kind of this backend's bundles (the installer's names)."""


SPEC_TABLE: str | None = "hip"
"""The spec table a HIP leg must have (``[hip]``: its gfx family and SDK)."""


COMPILER: str | None = "hip"
"""The machine-file ``[binaries]`` entry a HIP leg's toolchain must name: ``hip =
"lib/llvm/bin/clang++"``, TheRock's clang++ (the compiler ``hipcc`` drives), found under the SDK's
prefix first, then on PATH; CMake's HIP language takes it as ``CMAKE_HIP_COMPILER``."""


FAMILIES: dict[str, tuple[str, ...]] = {
    "gfx1151": ("gfx1151",),
    "gfx1150": ("gfx1150",),
    "gfx120X": ("gfx1200", "gfx1201"),
    "gfx110X": ("gfx1100", "gfx1101", "gfx1102", "gfx1103"),
    "gfx103X": ("gfx1030", "gfx1031", "gfx1032", "gfx1034"),
    "gfx90a": ("gfx90a",),
    "gfx908": ("gfx908",),
}
"""The fork's default gfx families (its ``gfx_target`` labels, in its order) -> the gfx targets
each bundle compiles (``GPU_TARGETS``; the manifest's ``mapped_targets``). One bundle per family
per OS: 14 bundles."""

ARCHIVE_FAMILY: dict[str, str] = {
    "gfx120X": "gfx120X-all",
    "gfx110X": "gfx110X-all",
    "gfx103X": "gfx103X-all",
}
"""A family's name in TheRock's tarball names where it differs (``therock-dist-linux-gfx110X-all-
<version>.tar.gz``); any other family is its own name."""

INSTALLER_WINDOWS_TARGETS: frozenset[str] = frozenset().union(*FAMILIES.values())
"""The gfx targets the installer must serve from a windows-rocm bundle: exactly the families'
targets, each of which must be in the installer's ``WINDOWS_HIP_PREBUILT_GFX_TARGETS`` (checked
against the installer's own module by ``tests/integration/test_installer_rocm_macos.py``)."""

RUNTIME_FILES: dict[str, tuple[str, ...]] = {
    "linux": (
        "libamdhip64.so*",
        "libhsa-runtime64.so*",
        "libamd_comgr.so*",
        "libamd_comgr_loader.so*",
        "libhipblas.so*",
        "libhipblaslt.so*",
        "librocblas.so*",
        "librocsolver.so*",
        "libroctx64.so*",
        "librocprofiler-register.so*",
        "librocroller.so*",
        "liborigami.so*",
        "librocm_kpack.so*",
        "libLLVM.so*",
        "libclang-cpp.so*",
        "librocm_sysdeps_*.so*",
    ),
    "windows": (
        "amdhip64_*.dll",
        "amd_comgr*.dll",
        "rocm_kpack.dll",
        "hipblas.dll",
        "libhipblas.dll",
        "hipblaslt.dll",
        "libhipblaslt.dll",
        "rocblas.dll",
        "rocsolver.dll",
        "origami.dll",
    ),
}
"""Per OS, the SDK's runtime files a bundle ships beside the programs (globs over the SDK's
``lib/`` on Linux, with ``lib/rocm_sysdeps/lib/`` and ``lib/llvm/lib/``; its ``bin/`` on
Windows), as the fork copies them. The fork also copies the build machine's ``libatomic.so.1``
(``librocm_sysdeps_numa`` needs it); our Linux legs declare it external instead (GCC's runtime,
like ``libgomp.so.1``), so verify's closure names it."""

RUNTIME_REQUIRED: dict[str, tuple[str, ...]] = {
    "linux": ("libamdhip64.so*", "libhsa-runtime64.so*", "libhipblas.so*", "librocblas.so*", "libamd_comgr*.so*"),
    "windows": ("amdhip64_*.dll", "hipblas.dll", "rocblas.dll", "amd_comgr*.dll"),
}
"""Per OS, the runtime files a HIP bundle must hold (``ggml-hip`` imports them; a Windows bundle
without ``hipblas.dll`` is ggml-org/llama.cpp#26996)."""

KERNEL_FOLDERS: tuple[str, ...] = ("rocblas/library", "hipblaslt/library")
"""The kernel catalog folders a bundle ships beside its libraries (the installer copies the
``rocblas`` and ``hipblaslt`` trees whole: ``runtime_subdirs_for_choice``)."""

ROCBLAS_FOLDER = "rocblas/library"
"""The folder that must hold a rocBLAS kernel file for every gfx target of the bundle
(``TensileLibrary*_<gfx>.dat`` / ``.co`` / ``.hsaco``; the fallback ``*_fallback_<gfx>``)."""


def family_targets(family: str) -> tuple[str, ...]:
    """The gfx targets of ``family`` (``gfx110X`` -> gfx1100..gfx1103). Raises KeyError naming the
    known families."""
    try:
        return FAMILIES[family]
    except KeyError:
        raise KeyError(f"unknown gfx family {family!r}: expected one of {', '.join(FAMILIES)}") from None


def archive_family(family: str) -> str:
    """TheRock's name of ``family`` in its tarball names (``gfx110X`` -> ``gfx110X-all``)."""
    family_targets(family)
    return ARCHIVE_FAMILY.get(family, family)


def family_of_target(gfx: str) -> str | None:
    """The family whose bundle serves a host of gfx target ``gfx`` (case-insensitive, as the
    installer compares), or None when no family does (the installer then builds from source)."""
    g = gfx.strip().lower()
    for fam, targets in FAMILIES.items():
        if g in targets or g == fam.lower():
            return fam
    return None


def missing_kernels(gfx_targets: tuple[str, ...] | list[str], rocblas_files: list[str]) -> list[str]:
    """The targets of ``gfx_targets`` with no rocBLAS kernel file among ``rocblas_files`` (file
    names under :data:`ROCBLAS_FOLDER`): a file names its target after an underscore and before
    its suffix (``TensileLibrary_lazy_gfx1100.dat``, ``Kernels.so-000-gfx1100.hsaco``)."""
    import re

    have = set()
    for name in rocblas_files:
        for m in re.finditer(r"gfx[0-9a-f]{3,4}", name.lower()):
            have.add(m.group(0))
    return [g for g in gfx_targets if g.lower() not in have]


CMAKE_OPTION: str | None = "GGML_HIP"
"""ggml's CMake option that builds this backend (``ggml/CMakeLists.txt``); on unless a spec says
otherwise (:mod:`bundlegraph.specs.derive`)"""

CMAKE_TARGETS_KEY: str | None = "GPU_TARGETS"
"""the CMake cache entry that lists the GPU targets to compile for, filled from the leg's targets
where the spec leaves it out (``ggml/src/ggml-hip/CMakeLists.txt`` reads ``GPU_TARGETS``)"""


def table_targets(table: object) -> tuple[object, tuple[str, ...]]:
    """``[hip]`` as a spec file wrote it -> itself with ``mapped_targets`` filled in from its
    family where the file leaves it out (``gfx_target``, one of the fork's families,
    :data:`FAMILIES`: ``gfx103X`` -> gfx1030 ...; a name it does not know fills nothing), and
    those targets (the GPU targets a bundle of the leg holds code for; empty where the table
    names none)."""
    if not isinstance(table, dict):
        return table, ()
    out = dict(table)
    family = out.get("gfx_target")
    if "mapped_targets" not in out and isinstance(family, str) and family in FAMILIES:
        out["mapped_targets"] = list(FAMILIES[family])
    got = out.get("mapped_targets")
    return out, tuple(str(t) for t in got) if isinstance(got, list) else ()


def required_files(os_name: str, targets: tuple[str, ...]) -> tuple[str, ...]:
    """What a bundle of this backend must hold beside its library on ``os_name`` for ``targets``
    (the HIP runtime ``ggml-hip`` imports, :data:`RUNTIME_REQUIRED`, and one rocBLAS kernel file per target in :data:`ROCBLAS_FOLDER`: the installer's kernel check)."""
    return (*RUNTIME_REQUIRED.get(os_name, ()), *(f"{ROCBLAS_FOLDER}/*{t}*" for t in targets))
