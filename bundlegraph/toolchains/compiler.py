"""A pinned compiler: the GCC, binutils and C library a Linux machine file names in its
``[compiler]`` table, unpacked from .debs pinned by sha256 into one prefix, so that the bytes of a
Linux bundle depend on the lock and not on the runner's image (issue 50: GitHub's
``ubuntu-24.04`` has glibc 2.39 and GCC 13, whose ``__isoc23_strtol`` and ``GLIBCXX_3.4.31+``
broke every promised floor).

This module is pure (no process, no download): :func:`compiler_of` maps a machine file to its
:class:`PinnedCompiler`, where the compiler task (:mod:`bundlegraph.toolkit.compiler`) puts it and
what the toolchain file names. The prefix looks like this (``<cache>/toolkits/<name>/``)::

    usr/, lib/, lib64/       the packages' files, as dpkg-deb -x writes them (the sysroot)
    bin/<c>, bin/<cxx>       wrappers: the real driver with --sysroot=<prefix> and -B<prefix>/<tools>/,
                             loading the compiler's own libraries (GMP, MPFR, isl...) from hostlib/
    hostlib/                 links to the prefix's build-host libraries that are not glibc's
    bundlegraph-compiler.json the receipt: the packages, the driver's version and search dirs

The machine file's table (checked when it loads, :mod:`.registry`)::

    [compiler]
    lock = "debian12-gcc12-x86_64.toml"   # in toolchains/machines/locks/ (bundlegraph.toolkit.debs format)
    driver_c = "usr/bin/x86_64-linux-gnu-gcc-12"     # the real drivers, prefix-relative
    driver_cxx = "usr/bin/x86_64-linux-gnu-g++-12"
    tools = "usr/bin"                     # where the target's `as` and `ld` are (gcc's -B)
    binutils_prefix = "x86_64-linux-gnu-" # usr/bin/<prefix>ar, nm, ranlib, objcopy, strip
    glibc_floor = "2.35"                  # what every bundle of this toolchain may need at most
    glibcxx_floor = "3.4.30"
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any

from ..core.fsutil import parsed_once
from ..core.lightclass import frozen

LOCKS_DIR = Path(__file__).resolve().parent / "machines" / "locks"
"""Where the compiler locks a machine file names are."""

RECEIPT = "bundlegraph-compiler.json"
"""The compiler task's receipt, in the prefix."""

LAYOUT_VERSION = 3
"""The layout of an installed compiler prefix (wrappers, hostlib); a change reinstalls."""

KEYS = ("lock", "driver_c", "driver_cxx", "tools", "binutils_prefix", "glibc_floor", "glibcxx_floor")
"""The keys of a machine file's ``[compiler]`` table, each required."""

BINUTILS = {
    "CMAKE_AR": "ar",
    "CMAKE_RANLIB": "ranlib",
    "CMAKE_NM": "nm",
    "CMAKE_OBJCOPY": "objcopy",
    "CMAKE_OBJDUMP": "objdump",
    "CMAKE_STRIP": "strip",
    "CMAKE_READELF": "readelf",
    "CMAKE_LINKER": "ld",
}
"""The binutils a CMake toolchain file pins (CMake variable -> tool), so CMake's
``CMakeFindBinUtils`` takes none of the runner's."""


@frozen
class PinnedCompiler:
    """One machine file's pinned compiler (module docstring). ``toolchain``: the machine file's
    id; ``lock``: the lock file; ``lock_digest``: :meth:`~bundlegraph.toolkit.debs.DebLock.digest`
    of it (the prefix's identity); ``version``: gcc's version from the lock (``12.2.0``);
    ``wrappers``: role (``c``, ``cxx``) -> wrapper name under ``bin/``; ``drivers``: role -> the
    real driver, prefix-relative; ``tools``: gcc's ``-B`` directory; ``binutils_prefix``;
    ``floors``: ``(glibc, glibcxx)``; ``root``: where toolkits are installed."""

    toolchain: str
    lock: Path
    lock_digest: str
    version: str
    wrappers: tuple[tuple[str, str], ...]
    drivers: tuple[tuple[str, str], ...]
    tools: str
    binutils_prefix: str
    floors: tuple[str, str]
    root: Path
    target: str

    @property
    def name(self) -> str:
        """``gcc-<version>-<target>-<6 hex>``: the task is ``toolkit:<name>``; machine files with
        the same lock, target and layout share one."""
        ident = json.dumps([self.lock_digest, self.target, self.tools, LAYOUT_VERSION])
        return f"gcc-{self.version}-{self.target}-{hashlib.sha256(ident.encode()).hexdigest()[:6]}"

    @property
    def task(self) -> str:
        return f"toolkit:{self.name}"

    @property
    def prefix(self) -> Path:
        """``root / name``, made once per compiler (a no-op run asks it some 360 times)."""
        got = self.__dict__.get("_prefix")
        if got is None:
            got = self.__dict__["_prefix"] = self.root / self.name
        return got

    @property
    def receipt(self) -> Path:
        return self.prefix / RECEIPT

    @property
    def cross_root(self) -> Path:
        """The target's C library root of a cross compiler (``usr/aarch64-linux-gnu``: Debian's
        ``libc6-arm64-cross`` layout, ``lib/ld-linux-aarch64.so.1`` in it): what ``qemu-aarch64 -L``
        runs the bundle's programs with in the smoke, the same C library they were linked against."""
        return self.prefix / "usr" / self.binutils_prefix.rstrip("-")

    def wrapper(self, role: str) -> Path:
        """The wrapper of ``role`` (``c``/``cxx``): what CMake and nvcc call."""
        return self.prefix / "bin" / dict(self.wrappers)[role]

    def binutil(self, tool: str) -> Path:
        """The wrapper of ``usr/bin/<binutils_prefix><tool>`` (``ar``, ``nm`` ...): ``bin/`` of
        the prefix (:meth:`tool_wrappers`), since CMake runs them directly."""
        return self.prefix / "bin" / f"{self.binutils_prefix}{tool}"

    def tool_wrappers(self) -> dict[str, str]:
        """Wrapper name in ``bin/`` -> the real program, prefix-relative: the binutils CMake pins
        and GCC's LTO ``gcc-ar``/``gcc-ranlib``. The programs load libbfd and libctf from
        ``hostlib/`` (the runner has another binutils, or none), so CMake must not run them bare."""
        out = {f"{self.binutils_prefix}{t}": f"usr/bin/{self.binutils_prefix}{t}" for t in BINUTILS.values()}
        c = dict(self.drivers)["c"]
        for tool in ("ar", "ranlib"):
            real = c.replace("-gcc-", f"-gcc-{tool}-")
            out[Path(real).name] = real
        return out

    def lto_tools(self) -> dict[str, Path]:
        """``CMAKE_<LANG>_COMPILER_AR``/``_RANLIB`` -> GCC's LTO wrappers beside the C driver
        (``x86_64-linux-gnu-gcc-ar-12``): CMake otherwise looks for them on the runner's PATH."""
        c = dict(self.drivers)["c"]
        out: dict[str, Path] = {}
        for lang in ("C", "CXX"):
            for tool in ("ar", "ranlib"):
                out[f"CMAKE_{lang}_COMPILER_{tool.upper()}"] = (
                    self.prefix / "bin" / Path(c.replace("-gcc-", f"-gcc-{tool}-")).name
                )
        return out

    def identity(self) -> dict[str, Any]:
        """What the bundle's info file and the provenance record of the compiler: its lock file
        name and digest, gcc version and floors (the packages are in the receipt). Not the task's
        name, which names the layout too: a new layout must not change a bundle's bytes."""
        return {
            "lock": self.lock.name,
            "lock_digest": self.lock_digest,
            "gcc": self.version,
            "glibc_floor": self.floors[0],
            "glibcxx_floor": self.floors[1],
        }


_IMPLICIT = re.compile(r'^set\(CMAKE_(C|CXX)_IMPLICIT_(INCLUDE|LINK)_DIRECTORIES "([^"]*)"\)', re.M)


def implicit_dir_problems(compiler_files: dict[str, str], prefix: Path) -> list[str]:
    """Every directory CMake found the C and C++ compilers searching that is not in ``prefix``
    (the pinned compiler's), one line each naming the file and the directory.
    ``compiler_files``: file name -> text of CMake's ``CMakeFiles/<version>/CMake{C,CXX}Compiler.cmake``
    (where CMake records ``CMAKE_<LANG>_IMPLICIT_INCLUDE_DIRECTORIES`` and ``..._LINK_DIRECTORIES``,
    from the compiler's own ``-v`` output): the configure's proof that no header or library of the
    runner reaches a compile or a link."""
    root = os.path.normpath(prefix)
    out = []
    for name, text in sorted(compiler_files.items()):
        for lang, kind, dirs in _IMPLICIT.findall(text):
            for d in (os.path.normpath(x) for x in dirs.split(";") if x):
                if d != root and not d.startswith(root + os.sep):
                    out.append(
                        f"{name}: CMAKE_{lang}_IMPLICIT_{kind}_DIRECTORIES names {d}, outside the pinned compiler"
                    )
    return out


def _lock_facts(lock: Path) -> tuple[str, str]:
    """``(digest, gcc version)`` of a compiler lock: the digest is
    :meth:`bundlegraph.toolkit.debs.DebLock.digest`'s (the same rows, the same JSON; computed here
    because the toolkit layer imports this one), the version the upstream part of its
    ``gcc-<major>`` package's (``12.2.0-14+deb12u1`` -> ``12.2.0``). The lock's rows are checked
    when the compiler task loads it (:func:`bundlegraph.toolkit.debs.load_lock`)."""
    import tomllib

    rows = tomllib.loads(lock.read_text(encoding="utf-8")).get("package", [])
    keys = ("name", "version", "architecture", "suite", "sha256")
    digest = hashlib.sha256(json.dumps([[r.get(k) for k in keys] for r in rows]).encode()).hexdigest()
    version = "unknown"
    for r in rows:
        parts = str(r.get("name", "")).split("-")
        if parts[0] == "gcc" and len(parts) >= 2 and parts[1].isdigit() and "base" not in parts:
            version = str(r.get("version", "unknown")).split(":")[-1].split("-")[0]
            break
    return digest, version


def compiler_of(info: Any, root: Path | None = None) -> PinnedCompiler | None:
    """The pinned compiler of machine file ``info`` (a :class:`~.registry.ToolchainInfo`), or None
    when it names none (MSVC, Apple clang). ``root``: where toolkits go (default
    ``<cache>/toolkits``). Reads the lock file's text for its digest (no download)."""
    table = dict(info.compiler)
    if not table:
        return None
    from ..core import paths

    lock = LOCKS_DIR / table["lock"]
    digest, version = parsed_once(lock, _lock_facts)  # once per process: every leg of the toolchain asks
    wrappers = tuple((role, os.path.basename(info.binary(role))) for role in ("c", "cxx"))
    return PinnedCompiler(
        toolchain=info.id,
        lock=lock,
        lock_digest=digest,
        version=version,
        wrappers=wrappers,
        drivers=(("c", table["driver_c"]), ("cxx", table["driver_cxx"])),
        tools=table["tools"],
        binutils_prefix=table["binutils_prefix"],
        floors=(table["glibc_floor"], table["glibcxx_floor"]),
        root=root or (paths.cache_root() / "toolkits"),
        target=f"{info.target_os}-{info.target_arch}",
    )


__all__ = ["BINUTILS", "KEYS", "LOCKS_DIR", "RECEIPT", "PinnedCompiler", "compiler_of", "implicit_dir_problems"]
