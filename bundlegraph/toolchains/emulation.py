"""How this host runs a bundle's programs: natively, or through qemu-user.

A Linux bundle of this host's CPU runs natively. A Linux bundle of another CPU runs through
qemu-user (Debian ``qemu-user``: ``qemu-aarch64``, ``qemu-x86_64``), found on ``PATH`` and used
explicitly (binfmt_misc is neither needed nor relied on) with the target's sysroot: the C library
the bundle was linked against, the pinned cross compiler's (``<its prefix>/usr/aarch64-linux-gnu``,
Debian 12's ``libc6-arm64-cross``; the caller passes it), else Debian's system-wide cross C
library at ``/usr/aarch64-linux-gnu``, passed as ``qemu-aarch64 -L <sysroot>``; variables for the program
alone go through ``-E NAME=VALUE`` so they never reach qemu itself. A Windows bundle does not run
here. When a bundle cannot run, :func:`launcher_for` returns the reason instead (naming what is
missing and the Debian package that brings it); a smoke that cannot run is a skip, never a pass.

The target's dynamic loader (``ld.so``) is part of the launcher: run on a file with
``LD_TRACE_LOADED_OBJECTS=1`` (glibc's ``ldd``) it resolves every dependency of a library exactly
as the program's start would, and prints ``=> not found`` for each one missing.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from dataclasses import field
from pathlib import Path

from ..core.lightclass import frozen
from ..core.platforms import platform

QEMU = {"arm64": "qemu-aarch64", "x64": "qemu-x86_64"}
"""qemu-user's program per target CPU (Debian ``qemu-user``)."""
SYSROOT = {"arm64": Path("/usr/aarch64-linux-gnu"), "x64": Path("/usr/x86_64-linux-gnu")}
"""Debian's cross sysroots (``libc6-arm64-cross``, ``libc6-amd64-cross``)."""
LOADER = {"arm64": "lib/ld-linux-aarch64.so.1", "x64": "lib64/ld-linux-x86-64.so.2"}
"""glibc's dynamic loader per CPU, relative to ``/`` natively or to the sysroot under qemu."""
DEBIAN_CROSS = {"arm64": "g++-aarch64-linux-gnu", "x64": "g++-x86-64-linux-gnu"}


@frozen
class Launcher:
    """How to start a program of a bundle here. ``how``: ``native`` or ``qemu-user``;
    ``qemu``: the qemu-user program (qemu-user only); ``sysroot``: the target's root (``/``
    natively); ``loader``: the target's ``ld.so`` on this host."""

    how: str
    arch: str
    sysroot: Path
    loader: Path
    qemu: str | None = None
    extra_env: dict[str, str] = field(default_factory=dict)
    label: str = ""
    """How :meth:`describe` names the sysroot (``<toolkit:gcc-…>/usr/aarch64-linux-gnu``): the
    same on every machine, where the path is not."""

    def argv(self, program: Path | str, args: list[str], env: dict[str, str] | None = None) -> list[str]:
        """The command line that runs ``program args`` with ``env`` set for the program alone
        (natively the caller passes ``env`` to the process instead: see :meth:`process_env`)."""
        if self.qemu is None:
            return [str(program), *args]
        out = [self.qemu, "-L", self.sysroot.as_posix()]
        for k, v in sorted((env or {}).items()):
            out += ["-E", f"{k}={v}"]
        return out + [str(program), *args]

    def process_env(self, env: dict[str, str]) -> dict[str, str]:
        """The environment of the started process: this one's through the allow-list of
        :mod:`bundlegraph.core.buildenv` (a bundle's programs are build code), plus ``env``
        natively; under qemu ``env`` travels in :meth:`argv` and qemu gets the allow-listed one."""
        from ..core.buildenv import allowed_env

        base = allowed_env(os.environ)
        return dict(base, **env) if self.qemu is None else base

    def list_deps(self, library: Path, library_path: list[Path]) -> tuple[list[str], dict[str, str]]:
        """``(argv, env)`` that list every dependency of ``library`` as glibc's loader resolves
        it, searching ``library_path`` first: the loader run on the file with
        ``LD_TRACE_LOADED_OBJECTS=1`` (what ``ldd`` does). Each missing one is printed as
        ``<soname> => not found`` (``ld.so --list`` instead stops at the first missing one)."""
        env = {"LD_TRACE_LOADED_OBJECTS": "1", "LD_LIBRARY_PATH": ":".join(p.as_posix() for p in library_path)}
        return self.argv(self.loader, [library.as_posix()], env), self.process_env(env)

    def describe(self) -> str:
        """How the programs start, the same on every machine (no host paths): ``native`` or
        ``qemu-aarch64 -L /usr/aarch64-linux-gnu``."""
        return "native" if self.qemu is None else f"{Path(self.qemu).name} -L {self.label or self.sysroot.as_posix()}"


def launcher_for(
    bundle_os: str,
    bundle_arch: str,
    *,
    host: tuple[str, str] | None = None,
    which: Callable[[str], str | None] = shutil.which,
    sysroot: Path | None = None,
    label: str = "",
) -> Launcher | str:
    """The :class:`Launcher` for a ``bundle_os``/``bundle_arch`` bundle on this host (``host``:
    ``(os, arch)`` in spec terms, default this one), or why none can run it (one line naming
    the missing program or directory and its Debian package). ``sysroot``: the target C library
    qemu-user runs the programs with (default :data:`SYSROOT`), ``label`` its machine-independent
    name for :meth:`Launcher.describe`."""
    from .base import this_host

    h_os, h_arch = host or this_host()
    if bundle_os != h_os:
        return f"a {bundle_os} bundle does not run on a {h_os} host"
    if bundle_arch == h_arch:  # (a Windows bundle's libraries are not listed through a loader)
        return Launcher("native", bundle_arch, Path("/"), Path("/") / LOADER[bundle_arch])
    if platform(bundle_os).binary != "ELF":  # qemu-user emulates Linux (ELF) programs only
        return f"a {bundle_os} {bundle_arch} bundle runs only on a {bundle_os} {bundle_arch} host"
    prog = QEMU.get(bundle_arch)
    if prog is None:
        return f"no qemu-user program is known for {bundle_arch}"
    found = which(prog)
    if not found:
        return f"{prog} is not on PATH (Debian package qemu-user): the {bundle_arch} bundle cannot run here"
    root = sysroot or SYSROOT[bundle_arch]
    loader = root / LOADER[bundle_arch]
    if not loader.is_file():
        brings = (
            f"{label.split('>')[0].lstrip('<')} installs it"
            if label
            else f"Debian package {DEBIAN_CROSS[bundle_arch]} brings it"
        )
        return f"the {bundle_arch} sysroot has no {loader} ({brings})"
    return Launcher("qemu-user", bundle_arch, root, loader, qemu=found, label=label)


__all__ = ["LOADER", "QEMU", "SYSROOT", "Launcher", "launcher_for"]
