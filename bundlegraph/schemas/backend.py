"""The backends' registry: what a backend is (:class:`Backend`) and which there are
(:data:`BACKENDS`). Everything else that names a backend's facts derives from here: the
install kinds the installer asks for, the GPU backends' library and driver file names per OS,
the runtime files the installer checks.

A backend is a package (or module) of :data:`PACKAGE` (``bundlegraph/backends/``) with the
attributes of :class:`Backend`; the packages are checked against it by mypy (a module can
implement a protocol) and when this registry loads. This is the shape of
:mod:`bundlegraph.pipeline.stages` and of cibuildwheel's ``cibuildwheel/platforms/__init__.py``
(a ``PlatformModule`` protocol and one table), on the axis that varies per leg. OS-dependent
naming comes from :mod:`bundlegraph.core.platforms`.

The registry lives on the records' floor and finds the backends by name (:func:`discover`,
:func:`plug_in`), the way a plug-in host finds its plug-ins: every floor may ask it, and none
imports a backend's package, whose modules implement the protocols of the floors above
(``pyproject.toml``'s import-linter layers put ``bundlegraph.backends`` above the pipeline).

Adding a backend: one folder there (:func:`discover` finds it), and its spec files. The folder's
``__init__`` holds the facts (importing only :mod:`bundlegraph.core`), only those that are its own
choices: every other member keeps its default (:data:`DEFAULTS`, :func:`complete`); beside it
live what the stages ask for by name (:func:`plug_in`): ``smoke`` (its smoke side), ``verify`` (its
verify rows and policy fields), ``rules`` (its spec table's rules), ``spec`` (that table's record),
``configure``, ``manifest``, ``install`` and its SDK (``sdk``, ``sdk_ref``). The spec table
(:attr:`Backend.SPEC_TABLE`), the SDK (:attr:`Backend.SDK`) and the GPU compiler
(:attr:`Backend.COMPILER`, a machine-file ``[binaries]`` entry) are read from here, and so is
the module of its smoke GPU steps (:attr:`Backend.SMOKE`, found by its dotted name as the SDK is:
by default the folder's ``sdk`` and ``smoke`` modules, where it has them).
"""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
from collections.abc import Callable
from types import ModuleType
from typing import Protocol, cast

from ..core.platforms import OS_NAMES, platform

PACKAGE = "bundlegraph.backends"
"""The package whose subpackages (and modules) are the backends: found by :func:`discover`, by name,
so this registry imports none of them statically (they hold plug-ins that import the floors above)."""


class Backend(Protocol):
    """A backend module: its spec name and the facts every stage reads about it. A backend's
    ``__init__`` may leave out ``NAME``, ``SDK``, ``SMOKE`` and the members of :data:`DEFAULTS`:
    :func:`complete` sets them when :func:`discover` imports it."""

    NAME: str
    """a spec's ``backend`` value (``cpu``, ``cuda``): by default its folder's name"""
    ORDER: int
    """its place in the registry (:data:`BACKENDS`, lowest first; CPU 0): the order of the install
    kinds, spec tables and verify rows every listing derives"""
    TITLE: str
    """its name in messages (``CUDA``)"""
    GPU: bool
    """whether it drives a GPU (a driver, device code, GPU smoke steps)"""
    LIBRARY: str
    """ggml's library stem for it (``ggml-cuda``; a glob for ``ggml-cpu*``), named per OS by
    :meth:`~bundlegraph.core.platforms.Platform.library`"""
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
    SPEC_TABLE: str | None
    """the spec table a leg of this backend must have (``cuda``, ``vulkan``; None: none), and no other
    backend's leg may"""
    SDK: str | None
    """the dotted name of the module that plans, keys and installs this backend's SDK (it satisfies
    :class:`bundlegraph.toolkit.sdk.SdkModule`; imported by the toolkit stage when a leg needs it,
    so this table imports nothing above :mod:`bundlegraph.core`); None: no SDK. By default the
    folder's ``sdk`` module where it has one, else None"""
    COMPILER: str | None
    """the machine-file ``[binaries]`` entry (a GPU compiler: ``cuda``, ``glslc``) a leg's toolchain must
    name to build this backend (:data:`bundlegraph.toolchains.registry.GPU_BINARIES`); None: none,
    which a GPU backend may say only with :attr:`COMPILED_BY_DRIVER`"""
    COMPILED_BY_DRIVER: bool
    """whether the GPU driver compiles this backend's device code on the user's machine (OpenCL C,
    Metal shader source), so its legs need no GPU compiler; a GPU backend with no
    :attr:`COMPILER` must say so, or its legs would plan with the host C compiler alone"""
    SMOKE: str | None
    """the dotted name of the module of this backend's smoke GPU steps (it satisfies
    :class:`bundlegraph.pipeline.smoke.side.GpuSide`: ``bundlegraph.backends.cuda.smoke``;
    imported by :mod:`bundlegraph.pipeline.smoke.sides`, so this table imports nothing above
    :mod:`bundlegraph.core`); None: no GPU steps, which only a backend that is not a GPU may say.
    By default the folder's ``smoke`` module where it has one, else None"""
    REQUIRED_PROGRAMS: tuple[str, ...]
    """programs (stems, named per OS) the installer requires of a published bundle of this
    backend's kinds beyond every bundle's ``llama-server`` and ``llama-quantize``"""
    HOST_GPUS: tuple[str, ...]
    """the GPU vendors (:attr:`bundlegraph.installer.selection.Host.gpu`: ``intel``, ``amd``) whose hosts an
    installer routes to this backend's kinds (empty: none by vendor alone; CUDA hosts are
    described by their SMs and driver)"""
    CMAKE_OPTION: str | None
    """ggml's CMake option that builds it (``GGML_CUDA``; None: none), on unless a spec says otherwise"""
    CMAKE_TARGETS_KEY: str | None
    """the CMake cache entry listing its GPU targets (``GPU_TARGETS``; None: none), filled from the leg's
    targets where the spec leaves it out"""

    def table_targets(self, table: object) -> tuple[object, tuple[str, ...]]:
        """its spec table as a spec file wrote it (a dict; None or another value where the file
        has none or a bad one) -> the table with what follows from it filled in (HIP's targets
        from its family), and the GPU targets a bundle of the leg holds code for (empty: none)"""
        ...

    def required_files(self, os_name: str, targets: tuple[str, ...]) -> tuple[str, ...]:
        """what a bundle of it must hold beside its library and ``RUNTIME_GLOBS`` on ``os_name``, for
        GPU ``targets`` (HIP's runtime and rocBLAS kernel files)"""
        ...


def no_table_targets(table: object) -> tuple[object, tuple[str, ...]]:
    """The default :meth:`Backend.table_targets`: the spec table as the file wrote it, and no GPU
    targets a bundle must hold files for (the backend's targets are listed where they are used,
    CUDA's archs, or there are none: CPU, Vulkan, Metal)."""
    return table, ()


def no_required_files(os_name: str, targets: tuple[str, ...]) -> tuple[str, ...]:
    """The default :meth:`Backend.required_files`: nothing beside the backend's library and its
    ``RUNTIME_GLOBS``."""
    return ()


DEFAULTS: dict[str, Callable[[], object]] = {
    "DRIVERS": dict,
    "DRIVER_WHAT": str,
    "RUNTIME_GLOBS": dict,
    "CPU_FALLBACK": frozenset,
    "SPEC_TABLE": lambda: None,
    "COMPILER": lambda: None,
    "COMPILED_BY_DRIVER": lambda: False,
    "REQUIRED_PROGRAMS": tuple,
    "HOST_GPUS": tuple,
    "CMAKE_OPTION": lambda: None,
    "CMAKE_TARGETS_KEY": lambda: None,
    "table_targets": lambda: no_table_targets,
    "required_files": lambda: no_required_files,
}
"""The members of :class:`Backend` a backend's facts may leave out, each with what it then is
(nothing: no driver, no runtime files, no spec table, no compiler, no CMake option...): a
backend's ``__init__`` states only its own choices. Besides these, ``NAME`` is its folder's name,
and ``SDK`` / ``SMOKE`` are the dotted names of its ``sdk`` / ``smoke`` modules where the folder
has them (else None), unless the facts say otherwise (:func:`complete`)."""


def _plug_in_name(backend_module: str, part: str) -> str | None:
    """``<backend_module>.<part>`` where that module exists (found, not imported), else None (also
    where the backend is a plain module, not a package)."""
    name = f"{backend_module}.{part}"
    try:
        found = importlib.util.find_spec(name)
    except ModuleNotFoundError:  # the backend is a module, not a package
        return None
    return name if found is not None else None


def complete(module: ModuleType) -> Backend:
    """``module`` (a backend package's facts, just imported) with every member it leaves out set
    as :data:`DEFAULTS` says, ``NAME`` its last dotted part, and ``SDK`` / ``SMOKE`` its ``sdk`` /
    ``smoke`` modules found by name (not imported: they import the floors above). A member the
    module sets is kept as it is; :func:`registry_problems` then checks the whole table."""
    for member, default in DEFAULTS.items():
        if not hasattr(module, member):
            setattr(module, member, default())
    if not hasattr(module, "NAME"):
        setattr(module, "NAME", module.__name__.rpartition(".")[2])  # noqa: B010 (a module: mypy knows no NAME)
    for member, part in (("SDK", "sdk"), ("SMOKE", "smoke")):
        if not hasattr(module, member):
            setattr(module, member, _plug_in_name(module.__name__, part))
    return cast(Backend, module)


def discover() -> tuple[Backend, ...]:
    """Every backend package (or module) of this package, imported and :func:`complete`, in
    :attr:`Backend.ORDER` (then name) order: adding a backend is adding its folder, no list here
    is edited. Only the facts (each package's ``__init__``) are imported; its SDK, smoke side and
    verify rows are imported by name where a stage needs them."""
    package = importlib.import_module(PACKAGE)
    found = [
        complete(importlib.import_module(f"{PACKAGE}.{m.name}"))
        for m in pkgutil.iter_modules(package.__path__)
        if not m.name.startswith("_")
    ]
    return tuple(sorted(found, key=lambda b: (b.ORDER, b.NAME)))


BACKENDS: tuple[Backend, ...] = discover()
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


def module_name(b: Backend) -> str:
    """The dotted name of ``b``'s module (``bundlegraph.backends.vulkan``): its plug-in modules
    are named below it (``<name>.verify``, ``<name>.smoke``)."""
    return str(getattr(b, "__name__"))  # noqa: B009 (a module; the protocol does not declare it)


def plug_in(b: Backend, part: str) -> ModuleType | None:
    """``b``'s plug-in module ``part`` (``verify``, ``rules``: ``bundlegraph.backends.<name>.<part>``),
    imported, or None where ``b`` has none (or is a plain module, not a package). Found by name, so
    this table imports none of them (they import the layers above it)."""
    name = _plug_in_name(module_name(b), part)
    return importlib.import_module(name) if name is not None else None


def library_file(b: Backend, os_name: str) -> str:
    """The file name of ``b``'s ggml library on ``os_name`` (``libggml-cuda.so``, ``ggml-cuda.dll``)."""
    return platform(os_name).library(b.LIBRARY)


def driver_owners(os_name: str) -> dict[str, Backend]:
    """The GPU drivers' library file names on ``os_name`` (lower-case where the OS folds case),
    each with the backend whose legs may import it."""
    fold = platform(os_name).fold
    return {(d.lower() if fold else d): b for b in BACKENDS for o, d in b.DRIVERS.items() if o == os_name}


def install_kinds(table: tuple[Backend, ...] | None = None) -> list[tuple[str, str, str, str]]:
    """``(install kind, os, arch, backend)`` for every ``(os, arch)`` of every backend of
    ``table`` (default :data:`BACKENDS`), ordered by OS (:data:`~bundlegraph.core.platforms.PLATFORMS`),
    then backend, then the backend's own order. A kind that serves two arches of one OS
    (``linux-vulkan``) appears once per arch."""
    return [
        (kind, os_name, arch, b.NAME)
        for os_name in OS_NAMES
        for b in (BACKENDS if table is None else table)
        for (o, arch), kind in b.INSTALL_KINDS.items()
        if o == os_name
    ]


def spec_tables() -> tuple[str, ...]:
    """The spec tables the backends own (``cuda``, ``vulkan``), in registry order."""
    return tuple(b.SPEC_TABLE for b in BACKENDS if b.SPEC_TABLE)


def registry_problems(table: tuple[Backend, ...]) -> list[str]:
    """What is wrong with ``table`` as a registry, one line each (empty: nothing): two backends of
    one name, one spec table or one install kind, an install kind on two OSes (one kind may serve several arches
    of one OS, as the installer's ``linux-vulkan`` does), an OS that :mod:`bundlegraph.core.platforms`
    does not know, a GPU backend without a driver on an OS it has install kinds for or without a smoke
    side (:attr:`Backend.SMOKE`) or without a compiler where its driver compiles nothing
    (:attr:`Backend.COMPILER`, :attr:`Backend.COMPILED_BY_DRIVER`), a module that lacks a member of :class:`Backend`. Checked on
    :data:`BACKENDS` when this package loads (a bad table is a bug, so it raises RuntimeError
    there)."""
    probs = []
    members = [*Backend.__annotations__, "table_targets", "required_files"]
    for b in table:
        if lacks := [n for n in members if not hasattr(b, n)]:
            probs.append(f"backend {getattr(b, 'NAME', b)}: lacks {', '.join(lacks)} (the Backend protocol)")
    if probs:
        return probs
    names = [b.NAME for b in table]
    if len(set(names)) != len(names):
        probs.append(f"two backends share a name: {names}")
    tables = [b.SPEC_TABLE for b in table if b.SPEC_TABLE]
    if len(set(tables)) != len(tables):
        probs.append(f"two backends share a spec table: {sorted(t for t in set(tables) if tables.count(t) > 1)}")
    owners: dict[str, set[str]] = {}
    oses: dict[str, set[str]] = {}
    for k, o, _arch, b_name in install_kinds(table):
        owners.setdefault(k, set()).add(b_name)
        oses.setdefault(k, set()).add(o)
    if shared := sorted(k for k, bs in owners.items() if len(bs) > 1):
        probs.append(f"two backends share an install kind: {shared}")
    if split := sorted(k for k, os_set in oses.items() if len(os_set) > 1):
        probs.append(f"an install kind serves two OSes: {split}")
    for b in table:
        b_oses = {o for o, _ in b.INSTALL_KINDS}
        unknown = (b_oses | set(b.DRIVERS) | set(b.RUNTIME_GLOBS)) - set(OS_NAMES)
        if unknown:
            probs.append(f"backend {b.NAME}: unknown os {sorted(unknown)}: expected one of {', '.join(OS_NAMES)}")
        # a backend that ships its user-mode runtime (HIP) needs only a kernel driver on the host
        if b.GPU and b_oses - set(b.DRIVERS) and not getattr(b, "SHIPS_RUNTIME", False):
            probs.append(f"backend {b.NAME}: a GPU backend with no driver for {sorted(b_oses - set(b.DRIVERS))}")
        if b.GPU and not b.COMPILER and not b.COMPILED_BY_DRIVER:
            # SYCL, say, left at COMPILER None would plan and configure with gcc alone
            probs.append(
                f"backend {b.NAME}: a GPU backend with no compiler (COMPILER) whose driver does not compile "
                "its device code either (COMPILED_BY_DRIVER)"
            )
        if b.GPU and not b.SMOKE:
            # a GPU bundle whose smoke had no GPU steps would pass on the CPU fallback
            probs.append(f"backend {b.NAME}: a GPU backend with no smoke side (SMOKE)")
    return probs


if _probs := registry_problems(BACKENDS):
    raise RuntimeError("bundlegraph.schemas.backend: " + "; ".join(_probs))

__all__ = [
    "BACKENDS",
    "BACKEND_NAMES",
    "BY_NAME",
    "GPU_BACKENDS",
    "PACKAGE",
    "Backend",
    "backend",
    "driver_owners",
    "install_kinds",
    "library_file",
    "module_name",
    "plug_in",
    "registry_problems",
    "spec_tables",
]
