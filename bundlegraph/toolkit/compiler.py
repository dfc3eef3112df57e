"""The compiler task: install a machine file's pinned compiler (:mod:`bundlegraph.toolchains.compiler`)
once per lock and target, and prove it hermetic before any leg configures with it.

``toolkit:gcc-<version>-<target>-<6 hex>`` (``toolkit:gcc-12.2.0-linux-x64-48cfb5``):

1. fetches the lock's .debs (verified by sha256, :func:`bundlegraph.toolkit.debs.fetch`) and
   unpacks them into ``<cache>/toolkits/<name>/`` (:func:`~bundlegraph.toolkit.debs.extract`,
   atomic), then lays out the wrappers and ``hostlib/`` (:func:`lay_out`);
2. runs the C++ wrapper: ``--version`` (a build host whose glibc is older than the lock's fails
   here, in one line naming both), and ``-v`` on a small C++ file compiled and linked, whose
   include and library search directories must all lie in the prefix (:func:`search_dirs`,
   :func:`foreign_dirs`): a directory of the runner there fails the task naming it;
3. writes the receipt :data:`~bundlegraph.toolchains.compiler.RECEIPT`: the identity, every
   package (name, version, architecture, sha256), the driver's version line and the search dirs.

Outputs: the receipt, then both wrappers by presence. Errors: :class:`HostMismatch` (no leg of the
task compiles here: nothing is downloaded), :class:`ToolkitError` (a bad lock, a compiler that does
not run on this host, a search directory outside the prefix), :class:`HashMismatch`.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from pathlib import Path
from typing import Any

from ..core import proc
from ..core.errors import HostMismatch, ToolFailed, ToolkitError
from ..core.fsutil import atomic_write_json
from ..core.lightclass import frozen
from ..core.state import Present
from ..toolchains.compiler import LAYOUT_VERSION, PinnedCompiler

BUILD_TRIPLET = "x86_64-linux-gnu"
"""Debian's multiarch directory of the build machine (every pinned compiler runs on Linux x86_64)."""

GLIBC_OBJECTS = (
    "ld-linux",
    "libc.so",
    "libm.so",
    "libmvec.so",
    "libpthread.so",
    "libdl.so",
    "librt.so",
    "libresolv.so",
    "libnss_",
    "libanl.so",
    "libutil.so",
    "libBrokenLocale.so",
    "libthread_db.so",
    "libc_malloc_debug.so",
    "libmemusage.so",
    "libpcprofile.so",
    "libnsl.so.1",
)
"""Name prefixes of the GNU C library's own shared objects (the libc6 package's file list): never
in ``hostlib/``, since the compiler's programs run on the build host's glibc and its loader, and a
second libc.so.6 on their library path would break them."""

_WRAPPER = """#!/bin/sh
# Written by bundlegraph: {driver} of {lock} (lock digest {digest}),
# with this prefix as its sysroot and -B {tools}/ (the target's as and ld), so that no header,
# library or program of the build host reaches a compile or a link. Its own libraries (GMP, MPFR,
# MPC, isl, zstd, libbfd) load from hostlib/; the build host's glibc runs it. GCC's own search
# variables would add the runner's directories (CPATH=/usr/include): unset.
unset CPATH C_INCLUDE_PATH CPLUS_INCLUDE_PATH OBJC_INCLUDE_PATH LIBRARY_PATH COMPILER_PATH GCC_EXEC_PREFIX
here=$(cd "$(dirname "$0")/.." && pwd)
LD_LIBRARY_PATH="$here/hostlib${{LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}}" exec "$here/{driver}" --sysroot="$here" -B"$here/{tools}/" "$@"
"""


def wrapper_text(c: PinnedCompiler, role: str) -> str:
    """The ``bin/<name>`` wrapper of ``role`` (``c``/``cxx``). Its text names the lock digest: ccache
    hashes a compiler by its content (``compiler_check=content``), so another lock is another compiler."""
    return _WRAPPER.format(driver=dict(c.drivers)[role], lock=c.lock.name, digest=c.lock_digest, tools=c.tools)


_TOOL_WRAPPER = """#!/bin/sh
# Written by bundlegraph: {real} of {lock} (lock digest {digest}), loading its libraries (libbfd,
# libctf, zstd) from hostlib/ (the runner's binutils, if any, are another version).
here=$(cd "$(dirname "$0")/.." && pwd)
LD_LIBRARY_PATH="$here/hostlib${{LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}}" exec "$here/{real}" "$@"
"""


def lay_out(c: PinnedCompiler, prefix: Path) -> None:
    """In a freshly unpacked ``prefix``: the wrappers under ``bin/`` (the drivers', and the
    binutils' CMake runs directly, :meth:`~bundlegraph.toolchains.compiler.PinnedCompiler.tool_wrappers`;
    mode 0755, their mtime the real program's, from the package) and ``hostlib/``, relative links to
    every shared library of the build machine's triplet directories but glibc's
    (:data:`GLIBC_OBJECTS`). Raises :class:`ToolkitError` when a program or the tools directory is missing."""
    scripts = {dict(c.wrappers)[role]: (driver, wrapper_text(c, role)) for role, driver in c.drivers}
    for name, target in c.tool_wrappers().items():
        scripts[name] = (target, _TOOL_WRAPPER.format(real=target, lock=c.lock.name, digest=c.lock_digest))
    for name, (rel, text) in scripts.items():
        real = prefix / rel
        if not real.is_file():
            raise ToolkitError(f"{c.task}: {c.lock.name} unpacked no {rel} (a program of {c.toolchain}'s [compiler])")
        w = prefix / "bin" / name
        w.parent.mkdir(parents=True, exist_ok=True)
        w.write_text(text, encoding="utf-8", newline="\n")
        w.chmod(0o755)
        st = real.stat()
        os.utime(w, ns=(st.st_mtime_ns, st.st_mtime_ns))
    if not (prefix / c.tools / "as").exists():
        raise ToolkitError(f"{c.task}: {c.lock.name} unpacked no {c.tools}/as (compiler.tools of {c.toolchain})")
    hostlib = prefix / "hostlib"
    hostlib.mkdir(exist_ok=True)
    for d in (f"lib/{BUILD_TRIPLET}", f"usr/lib/{BUILD_TRIPLET}"):
        for f in sorted((prefix / d).glob("*.so*")) if (prefix / d).is_dir() else []:
            if f.name.startswith(GLIBC_OBJECTS) or (hostlib / f.name).exists():
                continue
            (hostlib / f.name).symlink_to(Path("..") / d / f.name)


_SEARCH_START = "#include <...> search starts here:"
_SEARCH_END = "End of search list."
_LIBRARY_PATH = re.compile(r"^LIBRARY_PATH=(.*)$", re.M)
_COMPILER_PATH = re.compile(r"^COMPILER_PATH=(.*)$", re.M)


def search_dirs(verbose: str) -> dict[str, list[str]]:
    """The directories a ``gcc -v`` compile-and-link's output names: ``include`` (the
    ``#include <...>`` list), ``library`` (``LIBRARY_PATH``), ``programs`` (``COMPILER_PATH``),
    each normalised (``os.path.normpath``), in order, without repeats."""
    inc: list[str] = []
    inside = False
    for line in verbose.splitlines():
        if line.startswith(_SEARCH_START):
            inside = True
        elif line.startswith(_SEARCH_END):
            inside = False
        elif inside and line.startswith(" "):
            inc.append(line.strip())

    def split(rx: re.Pattern[str]) -> list[str]:
        m = rx.search(verbose)
        return [p for p in m.group(1).split(":") if p] if m else []

    out = {"include": inc, "library": split(_LIBRARY_PATH), "programs": split(_COMPILER_PATH)}
    return {k: list(dict.fromkeys(os.path.normpath(p) for p in v)) for k, v in out.items()}


def foreign_dirs(dirs: dict[str, list[str]], prefix: Path) -> list[str]:
    """``<kind> <dir>`` for each directory of :func:`search_dirs` outside ``prefix`` (empty: hermetic)."""
    root = os.path.normpath(prefix)
    return [f"{kind} {d}" for kind, ds in dirs.items() for d in ds if d != root and not d.startswith(root + os.sep)]


_PROBE = '#include <cstdio>\n#include <string>\nint main() { std::printf("%s\\n", std::to_string(1).c_str()); }\n'


def probe(c: PinnedCompiler, log: Path | None = None) -> dict[str, Any]:
    """Run the installed C++ wrapper: its version line, and the search directories of a small C++
    program compiled and linked with ``-v`` (the wrapper unsets GCC's search variables, so a
    caller's ``CPATH`` or ``LIBRARY_PATH`` reaches neither). Raises :class:`ToolkitError`: the
    compiler does not run here (naming the build host's C library), the probe does not build, or
    a directory lies outside the prefix."""
    cxx = c.wrapper("cxx")
    try:
        version = proc.run([cxx, "--version"], capture=True, echo=False, log=log, what=f"{c.task}: g++ --version")
    except ToolFailed as e:
        raise ToolkitError(
            f"{c.task}: the pinned compiler ({c.lock.name}) does not run on this build host ({_host_libc()}): "
            f"its programs need the glibc of the lock's libc6 or newer; last line: {str(e).splitlines()[-1]}"
        ) from None
    with tempfile.TemporaryDirectory(prefix="bg-cc-") as d:
        src = Path(d) / "probe.cpp"
        src.write_text(_PROBE, encoding="utf-8")
        try:
            out = proc.run(
                [cxx, "-v", "-O2", str(src), "-o", str(Path(d) / "probe")],
                cwd=d,
                capture=True,
                echo=False,
                log=log,
                what=f"{c.task}: g++ -v probe",
            )
        except ToolFailed as e:
            raise ToolkitError(
                f"{c.task}: the pinned compiler did not build a small C++ program; last line: {str(e).splitlines()[-1]}"
            ) from None
    dirs = search_dirs(out.output)
    bad = foreign_dirs(dirs, c.prefix)
    if bad:
        raise ToolkitError(f"{c.task}: the pinned compiler searches outside {c.prefix}: {'; '.join(bad[:4])}")
    return {"version": version.output.splitlines()[0].strip(), "search_dirs": dirs}


def _host_libc() -> str:
    """The build host's C library as its own loader reports it (``glibc 2.39``)."""
    try:
        return os.confstr("CS_GNU_LIBC_VERSION") or "an unknown C library"
    except (ValueError, OSError, AttributeError):
        return "an unknown C library"


@frozen
class CompilerPlan:
    """What ``toolkit:gcc-…`` does: install ``compiler`` for ``legs`` (their toolchains share it);
    ``host_problem``: why none of them can compile here (nothing is downloaded then)."""

    compiler: PinnedCompiler
    legs: tuple[str, ...]
    host_problem: str | None = None

    def key(self) -> dict[str, Any]:
        """The lock's digest, the target, the tools directory and the layout version."""
        c = self.compiler
        return {
            "compiler": "gcc",
            "lock": c.lock_digest,
            "target": c.target,
            "tools": c.tools,
            "layout": LAYOUT_VERSION,
        }

    def describe(self) -> dict[str, Any]:
        """The legs using it, where it installs, and its identity (lock, floors)."""
        c = self.compiler
        return {
            "legs": list(self.legs),
            "prefix": str(c.prefix),
            "wrappers": {r: str(c.wrapper(r)) for r, _ in c.wrappers},
            **c.identity(),
        }

    def doc(self) -> str:
        c = self.compiler
        return f"install the pinned GCC {c.version} for {c.target} ({c.lock.name}) for {', '.join(self.legs)}"


def plan(c: PinnedCompiler, legs: tuple[str, ...], host_problem: str | None) -> CompilerPlan:
    """The plan of the compiler task of ``c``."""
    return CompilerPlan(compiler=c, legs=legs, host_problem=host_problem)


def run(p: CompilerPlan, log: Path | None = None) -> list[Path | Present]:
    """Install (or check) the pinned compiler of ``p`` (module docstring); returns the receipt and
    the wrappers by presence."""
    from functools import partial

    from .debs import extract, load_lock

    c = p.compiler
    if p.host_problem:
        raise HostMismatch(f"{c.task}: {p.host_problem}")
    lock = load_lock(c.lock)
    if lock.digest() != c.lock_digest:  # the file changed under a running graph
        raise ToolkitError(f"{c.lock}: changed since the graph was loaded; run again")
    extract(lock, c.prefix, log=log, fixup=partial(lay_out, c))
    wanted = [c.prefix / "bin" / n for n in (*dict(c.wrappers).values(), *c.tool_wrappers())]
    if not all(w.is_file() for w in wanted):  # a wrapper deleted from a kept prefix: lay it out again
        lay_out(c, c.prefix)
    found = probe(c, log)
    receipt = {
        **c.identity(),
        "prefix": c.prefix.as_posix(),
        "layout": LAYOUT_VERSION,
        "driver": found["version"],
        "search_dirs": found["search_dirs"],
        "packages": [
            {"name": x.name, "version": x.version, "architecture": x.architecture, "sha256": x.sha256}
            for x in lock.packages
        ],
    }
    atomic_write_json(c.receipt, receipt)
    return [c.receipt, *(Present(c.wrapper(r)) for r, _ in c.wrappers)]


def read_receipt(c: PinnedCompiler) -> dict[str, Any] | None:
    """The receipt of an installed compiler, or None."""
    try:
        data = json.loads(c.receipt.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


__all__ = ["CompilerPlan", "foreign_dirs", "lay_out", "plan", "probe", "read_receipt", "run", "search_dirs"]
