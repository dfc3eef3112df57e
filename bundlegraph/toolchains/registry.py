"""The toolchains as data: one machine file per toolchain id, ``toolchains/machines/<id>.toml``,
in the shape of Meson's machine files (its "Cross and native file reference"): the
``[build_machine]`` the compilers run on and the ``[host_machine]`` the output runs on (``system``
and ``cpu``), the ``[binaries]`` the CMake toolchain file names (the kind's compilers, and the GPU compilers of
:data:`GPU_BINARIES` the machine can run: Meson's ``cuda = [...]``, here ``cuda = "nvcc"``,
``glslc = "glslc"``, ``hip = "lib/llvm/bin/clang++"``), and ``[properties]``. ``kind``
says which class gives the behaviour (:func:`bundlegraph.toolchains.get`); the classes hold no
facts of their own.

Every file is checked when it loads against the tables below (:data:`SYSTEMS`, :data:`CPUS`,
:data:`KINDS` with the binaries and properties each kind needs, NVIDIA's redist platforms): an
unknown or missing key, or a value outside its table, is a :class:`ToolchainFileError` naming the
file, the key and what was expected. The Windows ARM64 CUDA leg is built on a Windows x64
build machine for an ARM64 host machine, and says so here.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any, Literal

from ..core.errors import BundleGraphError
from ..core.lightclass import frozen
from ..core.platforms import OS_NAMES
from .cuda import TARGET_DIRS

MACHINES_DIR = Path(__file__).resolve().parent / "machines"
"""Where the machine files are."""

SYSTEMS = OS_NAMES
"""Known ``system`` values (spec terms: a leg's ``os``; :data:`bundlegraph.core.platforms.OS_NAMES`)."""
CPUS = ("x64", "arm64")
"""Known ``cpu`` values (spec terms: a leg's ``arch``)."""
KINDS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "gcc": (("c", "cxx"), ("redist_host", "cmake_system_processor", "packages")),
    "msvc": (("c", "cxx"), ("redist_host", "vcvars_arch")),
    "clang-windows": (("c", "cxx"), ("redist_host", "vcvars_arch", "target", "arch_flags", "warn_flags")),
    "apple-clang": (("c", "cxx"), ("cmake_system_processor", "osx_architectures")),
}
"""Each kind: (binaries it needs, properties it needs); it may have no others."""
GPU_BINARIES: dict[str, str] = {
    "cuda": "the CUDA compiler (nvcc), found in the CUDA toolkit",
    "glslc": "the Vulkan shader compiler, found in the Vulkan SDK's bin directory first, then on PATH",
    "hip": "the HIP compiler (CMAKE_HIP_COMPILER: TheRock's clang++), a path under the HIP SDK's prefix first, then on PATH",
}
"""The GPU compilers a machine file may name under ``[binaries]`` (any kind), with what each is.
A toolchain compiles a GPU backend's device code when it names that backend's compiler."""
VCVARS_ARCHES = ("amd64", "amd64_arm64")
"""``vcvarsall.bat`` arguments bundlegraph knows (an x64 build machine)."""
_TOP = {"kind", "summary", "build_machine", "host_machine", "binaries", "properties"}
_OPTIONAL_TOP = {"compiler"}
COMPILER_KINDS = ("gcc",)
"""The kinds whose compilers come pinned from a ``[compiler]`` table (:mod:`.compiler`); it is
required there, so no Linux leg compiles with the runner's own GCC."""
EMPTY_OK = {"packages"}
"""Properties that may be the empty string (``packages``: nothing to install on the runner)."""
_FLOOR = re.compile(r"^\d+\.\d+(\.\d+)?$")


class ToolchainFileError(BundleGraphError):
    """A machine file that does not hold what its kind needs: ``problems``, one line each,
    ``<file>: <key>: <what was expected>``."""

    def __init__(self, problems: list[str]):
        self.problems = list(problems)
        n = len(self.problems)
        head = f"{n} problem{'s' if n != 1 else ''} in the toolchain machine files:"
        super().__init__("\n".join([head, *("  " + p for p in self.problems)]))


@frozen
class ToolchainInfo:
    """One toolchain id's machine file, loaded and checked.

    ``build_os``/``build_arch``: the machine the build runs on; ``target_os``/``target_arch``:
    the machine the output runs on; ``cuda``: can compile CUDA (``[binaries] cuda`` is set);
    ``redist_host``: NVIDIA redist
    platform key of the build machine; ``binaries`` (role -> name or relative path) and
    ``properties`` as the file says; ``kind``: the class that implements it; ``file``: where it
    came from."""

    id: str
    build_os: Literal["windows", "linux", "macos"]
    build_arch: Literal["x64", "arm64"]
    target_os: Literal["windows", "linux", "macos"]
    target_arch: Literal["x64", "arm64"]
    cuda: bool
    redist_host: str
    summary: str
    kind: str = "gcc"
    binaries: tuple[tuple[str, str], ...] = ()
    properties: tuple[tuple[str, str], ...] = ()
    file: str = ""
    compiler: tuple[tuple[str, str], ...] = ()
    """The ``[compiler]`` table (:mod:`.compiler`: the pinned GCC, binutils and C library, and
    the glibc/GLIBCXX floors every bundle of this toolchain keeps); empty for kinds without one."""

    def floors(self) -> tuple[str, str] | None:
        """``(glibc_floor, glibcxx_floor)`` of the pinned compiler, or None (not a Linux GCC)."""
        c = dict(self.compiler)
        return (c["glibc_floor"], c["glibcxx_floor"]) if c else None

    @property
    def cross(self) -> bool:
        return (self.build_os, self.build_arch) != (self.target_os, self.target_arch)

    def has_binary(self, role: str) -> bool:
        """Whether the machine file names a binary of ``role`` (``glslc``: it can compile Vulkan shaders)."""
        return any(r == role for r, _ in self.binaries)

    def binary(self, role: str) -> str:
        """The binary of ``role`` (``c``, ``cxx``). Raises ``KeyError`` naming the file."""
        for r, v in self.binaries:
            if r == role:
                return v
        raise KeyError(f"{self.file}: binaries.{role} is not set")

    def prop(self, name: str) -> str:
        """Property ``name``. Raises ``KeyError`` naming the file."""
        for k, v in self.properties:
            if k == name:
                return v
        raise KeyError(f"{self.file}: properties.{name} is not set")


def _one_of(problems: list[str], f: Path, key: str, value: object, allowed: tuple[str, ...] | list[str]) -> None:
    if value not in allowed:
        problems.append(f"{f}: {key}: {value!r} is not one of {', '.join(allowed)}")


def load_machine(f: Path) -> ToolchainInfo:
    """Read and check one machine file. Raises :class:`ToolchainFileError` listing every
    problem."""
    problems: list[str] = []
    try:
        data: dict[str, Any] = tomllib.loads(f.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise ToolchainFileError([f"{f}: (TOML): {e}"]) from None
    problems += [
        f"{f}: {k}: unknown key; allowed: {', '.join(sorted(_TOP | _OPTIONAL_TOP))}"
        for k in sorted(set(data) - _TOP - _OPTIONAL_TOP - {"cuda"})
    ]
    problems += [f"{f}: {k}: required key is missing" for k in sorted(_TOP - set(data))]
    kind = data.get("kind")
    _one_of(problems, f, "kind", kind, list(KINDS))
    if "cuda" in data:
        problems.append(f'{f}: cuda: a GPU compiler is a [binaries] entry now (cuda = "nvcc"), not a flag')
    machines = {}
    for m in ("build_machine", "host_machine"):
        t = data.get(m, {})
        if not isinstance(t, dict):
            problems.append(f"{f}: {m}: expected a table with system and cpu")
            continue
        problems += [f"{f}: {m}.{k}: unknown key; allowed: cpu, system" for k in sorted(set(t) - {"system", "cpu"})]
        _one_of(problems, f, f"{m}.system", t.get("system"), SYSTEMS)
        _one_of(problems, f, f"{m}.cpu", t.get("cpu"), CPUS)
        machines[m] = t
    bins = data.get("binaries", {})
    props = data.get("properties", {})
    if kind in KINDS and isinstance(bins, dict) and isinstance(props, dict):
        need_bins, need_props = KINDS[kind]
        for k in need_bins:
            if not isinstance(bins.get(k), str) or not bins[k]:
                problems.append(f"{f}: binaries.{k}: required for kind '{kind}' (a program name or path)")
        for k in sorted(set(bins) - set(need_bins)):
            if k in GPU_BINARIES:
                if not isinstance(bins[k], str) or not bins[k]:
                    problems.append(f"{f}: binaries.{k}: expected a program name or path ({GPU_BINARIES[k]})")
                continue
            known = ", ".join([*need_bins, *GPU_BINARIES])
            problems.append(f"{f}: binaries.{k}: unknown for kind '{kind}'; known: {known}")
        for k in need_props:
            if not isinstance(props.get(k), str) or (not props[k] and k not in EMPTY_OK):
                problems.append(f"{f}: properties.{k}: required for kind '{kind}'")
        for k in sorted(set(props) - set(need_props)):
            problems.append(f"{f}: properties.{k}: unknown for kind '{kind}'; known: {', '.join(need_props)}")
        if "redist_host" in props:
            _one_of(problems, f, "properties.redist_host", props["redist_host"], list(TARGET_DIRS))
        if "vcvars_arch" in props:
            _one_of(problems, f, "properties.vcvars_arch", props["vcvars_arch"], VCVARS_ARCHES)
    compiler = data.get("compiler", {})
    problems += _compiler_problems(f, kind, compiler)
    if problems:
        raise ToolchainFileError(problems)
    b, h = machines["build_machine"], machines["host_machine"]
    return ToolchainInfo(
        id=f.stem,
        build_os=b["system"],
        build_arch=b["cpu"],
        target_os=h["system"],
        target_arch=h["cpu"],
        cuda="cuda" in bins,
        redist_host=props.get("redist_host", ""),
        summary=str(data["summary"]),
        kind=str(kind),
        binaries=tuple(sorted(bins.items())),
        properties=tuple(sorted(props.items())),
        file=f.as_posix(),
        compiler=tuple(sorted(compiler.items())) if isinstance(compiler, dict) else (),
    )


def _compiler_problems(f: Path, kind: object, table: object) -> list[str]:
    """The problems of a machine file's ``[compiler]`` table (:mod:`.compiler`): required for the
    kinds of :data:`COMPILER_KINDS`, refused for the others; every key of
    :data:`~.compiler.KEYS` a non-empty string, the lock an existing file of
    :data:`~.compiler.LOCKS_DIR`, the floors ``major.minor[.patch]``."""
    from .compiler import KEYS, LOCKS_DIR

    if kind not in COMPILER_KINDS:
        return [f"{f}: compiler: only kind {', '.join(COMPILER_KINDS)} takes a pinned compiler"] if table else []
    if not isinstance(table, dict) or not table:
        return [
            f"{f}: compiler: required for kind '{kind}': the pinned compiler's lock, drivers, tools, binutils_prefix "
            f"and floors (no Linux leg compiles with the runner's own GCC)"
        ]
    out = [f"{f}: compiler.{k}: unknown key; allowed: {', '.join(KEYS)}" for k in sorted(set(table) - set(KEYS))]
    for k in KEYS:
        v = table.get(k)
        if not isinstance(v, str) or not v:
            out.append(f"{f}: compiler.{k}: required (a string)")
        elif k.endswith("_floor") and not _FLOOR.match(v):
            out.append(f"{f}: compiler.{k}: expected a version such as 2.35 or 3.4.30, got {v!r}")
    lock = table.get("lock")
    if isinstance(lock, str) and lock and not (LOCKS_DIR / lock).is_file():
        out.append(f"{f}: compiler.lock: {lock!r} is not a file in {LOCKS_DIR}")
    return out


def load_machines(directory: Path = MACHINES_DIR) -> dict[str, ToolchainInfo]:
    """Every machine file of ``directory`` by id (the file stem), checked. Raises
    :class:`ToolchainFileError` listing the problems of every file."""
    out: dict[str, ToolchainInfo] = {}
    problems: list[str] = []
    for f in sorted(directory.glob("*.toml")):
        try:
            out[f.stem] = load_machine(f)
        except ToolchainFileError as e:
            problems += e.problems
    if problems:
        raise ToolchainFileError(problems)
    return out


TOOLCHAINS: dict[str, ToolchainInfo] = load_machines()
"""The known toolchain ids and their machines (loaded when bundlegraph imports this module)."""
