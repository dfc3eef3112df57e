"""Lay extracted component trees out the way a toolkit for the target is expected to look.

Inputs are component roots after extraction (a redist archive without its
``<component>-<platform>-<version>-archive/`` folder; a wheel's ``nvidia/cu<major>/`` folder),
each holding some of ``bin/ include/ lib/ nvvm/`` (wheels: also ``cccl/lib/cmake``).

Linux (NVIDIA's standard toolkit form, what nvcc's ``-target-dir`` expects)::

    bin/ nvvm/                                  host tools
    targets/<dir>/include, targets/<dir>/lib    per platform (x86_64-linux, sbsa-linux)
    include -> targets/<host dir>/include       the host target also as include/ and lib64/
    lib64   -> targets/<host dir>/lib
    libX.so -> libX.so.13                        unversioned links where only versioned exist

Headers are architecture-neutral: every component's headers land in its own platform's
``include`` and fill the other targets' ``include`` (hard links), so ``-target-dir`` finds them.

Windows (CUDA 13 form)::

    bin/ (host tools) nvvm/ include/ lib/<x64|arm64>/*.lib bin/<x64|arm64>/*.dll

Links are symlinks on POSIX hosts, copies on Windows hosts (no symlinks there).
"""

from __future__ import annotations

import filecmp
import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

from ..core.errors import ToolkitError
from ..toolchains.cuda import is_windows, target_dir

IS_WINDOWS_HOST = os.name == "nt"
_ARCH_DIRS = {"x64", "arm64", "Win32", "x86"}


def _dest(rel: PurePosixPath, role: str, platform: str, component: str) -> PurePosixPath | None:
    """Where one file of a component lands in the prefix (None: not installed)."""
    parts = rel.parts
    top = parts[0]
    rest = PurePosixPath(*parts[1:]) if len(parts) > 1 else None
    if top.endswith(".dist-info") or (rest is None and top in ("bin", "lib", "include", "nvvm")):
        return None
    if is_windows(platform):
        arch = target_dir(platform)
        if top in ("include", "nvvm"):
            return rel
        if top in ("bin", "lib"):
            if role == "host":
                return rel
            assert rest is not None
            if rest.parts[0] in _ARCH_DIRS:
                rest = PurePosixPath(*rest.parts[1:]) if len(rest.parts) > 1 else None
            return PurePosixPath(top, arch, rest) if rest else None
        return PurePosixPath("share", component, rel)
    tdir = PurePosixPath("targets", target_dir(platform))
    if top in ("bin", "nvvm"):
        return rel if role == "host" else tdir / rel
    if top == "include":
        return tdir / rel
    if top in ("lib", "lib64"):
        return tdir / "lib" / rest if rest is not None else None
    if top == "cccl" and len(parts) > 2 and parts[1] == "lib":  # wheel: cccl/lib/cmake/...
        return tdir / "lib" / PurePosixPath(*parts[2:])
    return PurePosixPath("share", component, rel)


def _files(root: Path) -> Iterator[Path]:
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        d = Path(dirpath)
        for n in sorted(filenames) + sorted(x for x in dirnames if (d / x).is_symlink()):
            yield d / n


def _same(a: Path, b: Path) -> bool:
    if a.is_symlink() or b.is_symlink():
        return a.is_symlink() and b.is_symlink() and os.readlink(a) == os.readlink(b)
    return filecmp.cmp(a, b, shallow=False)


def place(root: Path, prefix: Path, *, component: str, role: str, platform: str, owners: dict[str, str]) -> list[str]:
    """Move ``root``'s files into ``prefix``. ``owners`` maps prefix-relative paths placed so
    far to ``component@platform`` and is updated. An identical file placed twice is kept once;
    a different one is a :class:`ToolkitError` naming both components. Returns the paths."""
    out = []
    me = f"{component}@{platform}"
    for src in _files(root):
        rel = PurePosixPath(src.relative_to(root).as_posix())
        dest_rel = _dest(rel, role, platform, component)
        if dest_rel is None:
            continue
        dest = prefix / dest_rel
        key = dest_rel.as_posix()
        if dest.exists() or dest.is_symlink():
            if _same(src, dest):
                continue
            raise ToolkitError(
                f"{key}: provided by both {owners.get(key, '?')} and {me} with different "
                f"content; the component set is inconsistent"
            )
        dest.parent.mkdir(parents=True, exist_ok=True)
        os.replace(src, dest)
        owners[key] = me
        out.append(key)
    return out


def _link_or_copy(src: Path, dest: Path) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    if src.is_symlink() and not IS_WINDOWS_HOST:
        os.symlink(os.readlink(src), dest)
        return
    try:
        os.link(src, dest)
    except OSError:
        shutil.copy2(src, dest)


def fill_headers(prefix: Path, platforms: list[str]) -> None:
    """Give every Linux target's ``include`` the headers any other target has (hard links)."""
    dirs = [prefix / "targets" / target_dir(p) / "include" for p in platforms if not is_windows(p)]
    for d in dirs:
        if not d.is_dir():
            continue
        for src in _files(d):
            rel = src.relative_to(d)
            for other in dirs:
                if other != d and not (other / rel).exists() and not (other / rel).is_symlink():
                    _link_or_copy(src, other / rel)


_VERSIONED = re.compile(r"^(lib[^/]+?\.so)((?:\.\d+)+)$")


def unversioned_links(lib_dir: Path) -> None:
    """``libX.so`` -> the highest ``libX.so.N[.M]`` in ``lib_dir`` and ``lib_dir/stubs`` where
    no ``libX.so`` exists (CMake's find_library looks for the unversioned name)."""
    for d in (lib_dir, lib_dir / "stubs"):
        if not d.is_dir():
            continue
        best: dict[str, tuple[tuple[int, ...], str]] = {}
        for f in d.iterdir():
            m = _VERSIONED.match(f.name)
            if m:
                ver = tuple(int(x) for x in m.group(2).split(".")[1:])
                if m.group(1) not in best or ver > best[m.group(1)][0]:
                    best[m.group(1)] = (ver, f.name)
        for base, (_, name) in sorted(best.items()):
            link = d / base
            if link.exists() or link.is_symlink():
                continue
            if IS_WINDOWS_HOST:
                shutil.copy2(d / name, link)
            else:
                os.symlink(name, link)


def host_aliases(prefix: Path, host_platform: str) -> None:
    """Linux: ``include`` -> ``targets/<host>/include`` and ``lib64`` -> ``targets/<host>/lib``."""
    if is_windows(host_platform):
        return
    base = PurePosixPath("targets", target_dir(host_platform))
    for alias, real in (("include", base / "include"), ("lib64", base / "lib")):
        link = prefix / alias
        (prefix / real).mkdir(parents=True, exist_ok=True)
        if link.exists() or link.is_symlink():
            continue
        if IS_WINDOWS_HOST:
            shutil.copytree(prefix / real, link, symlinks=False)
        else:
            os.symlink(real.as_posix(), link)


# NVIDIA's standard Linux nvcc.profile (as installed by the runfile/redist toolkits): include and
# library paths go through $(_TARGET_DIR_), which ``-target-dir <dir>`` sets to targets/<dir>.
STANDARD_PROFILE_LINUX = """\
TOP              = $(_HERE_)/..

CICC_PATH        = $(TOP)/nvvm/bin
NVVMIR_LIBRARY_DIR = $(TOP)/nvvm/libdevice

LD_LIBRARY_PATH += $(TOP)/lib64:
PATH            += $(CICC_PATH):$(_HERE_):

INCLUDES        +=  "-I$(TOP)/$(_TARGET_DIR_)/include" $(_SPACE_)
SYSTEM_INCLUDES +=  "-isystem" "$(TOP)/$(_TARGET_DIR_)/include/cccl" $(_SPACE_)

LIBRARIES        =+ $(_SPACE_) "-L$(TOP)/$(_TARGET_DIR_)/lib$(_TARGET_SIZE_)/stubs" "-L$(TOP)/$(_TARGET_DIR_)/lib$(_TARGET_SIZE_)"

CUDAFE_FLAGS    +=
PTXAS_FLAGS     +=
"""


def install_profile(prefix: Path, cuda_major: int = 13) -> Path:
    """Replace ``bin/nvcc.profile`` with the standard Linux form (wheels ship one that knows
    only ``$(TOP)/include`` and ``$(TOP)/lib``, so a cross build would search the host's libs).
    Before CUDA 13 the form has no ``include/cccl`` line: CCCL sat directly under ``include/``,
    and CMake turns every ``-isystem`` nvcc reports into ``CUDA::cudart``'s include directories,
    refusing one that does not exist."""
    p = prefix / "bin" / "nvcc.profile"
    p.parent.mkdir(parents=True, exist_ok=True)
    text = STANDARD_PROFILE_LINUX
    if cuda_major < 13:
        text = "".join(line for line in text.splitlines(keepends=True) if "include/cccl" not in line)
    p.write_text(text, encoding="utf-8", newline="\n")
    return p
