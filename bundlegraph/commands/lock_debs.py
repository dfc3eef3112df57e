"""``bundlegraph lock-debs LOCK [...] [--update]``: re-pin Debian .deb lock files
(:mod:`bundlegraph.toolkit.debs`: the pinned compilers' under ``bundlegraph/toolchains/machines/locks/``,
the Vulkan SDK's and CUDA 12.4's under ``bundles/locks/``) from this Debian host's apt.

Every row keeps its package name, architecture and suite. Without ``--update`` each row keeps its
version too and gains what apt's index says of that version and the lock lacks (``size``, the pool
``path`` that ``BUNDLEGRAPH_DEBIAN_ARCHIVE`` downloads from); a version whose sha256 in apt's index
is not the pinned one is refused, naming the package (a pin's bytes never change silently). With
``--update`` each row moves to apt's candidate version, and the lines printed say what moved.
A maintainer command on a machine with the network: run it, review the diff, commit.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..core.errors import BundleGraphError


def repin(lock_path: Path, update: bool) -> list[str]:
    """Rewrite ``lock_path`` as the module docstring says; returns one line per changed row.
    Raises :class:`BundleGraphError` (nothing written) when a pinned version's sha256 moved."""
    from dataclasses import replace

    from ..toolkit import debs

    lock = debs.load_lock(lock_path)
    text = lock_path.read_text(encoding="utf-8")
    header = "\n".join(line[2:] if line.startswith("# ") else line[1:] for line in _header_lines(text))
    rows: list[debs.DebPackage] = []
    changed: list[str] = []
    problems: list[str] = []
    archs = tuple(sorted({p.architecture for p in lock.packages}))
    apts = {suite: debs.apt_for(suite, architectures=archs) for suite in dict.fromkeys(p.suite for p in lock.packages)}
    for apt in apts.values():
        debs.update_lists(apt)
    for p in lock.packages:
        apt = apts[p.suite]
        if update:
            (new,) = debs.show(apt, [p.name], p.architecture)
            new = replace(new, suite=p.suite)
        else:
            new = _same_version(apt, p)
            if new.sha256 != p.sha256:
                problems.append(
                    f"{lock_path}: {p.name} {p.version}: apt's index says sha256 {new.sha256}, the lock pins {p.sha256}"
                )
                continue
        if new != p:
            changed.append(
                f"{p.name}: {p.version} -> {new.version}" if new.version != p.version else f"{p.name}: +path"
            )
        rows.append(new)
    if problems:
        raise BundleGraphError("\n".join(problems))
    lock_path.write_text(debs.dump_lock(rows, header), encoding="utf-8")
    return changed


def _same_version(apt: Any, p: Any) -> Any:
    """The row apt's index holds for exactly ``p``'s version (every version apt knows is asked)."""
    from ..core import proc
    from ..toolkit.debs import DebPackage

    argv = ["apt-cache", *apt.options, "show", f"{p.name}:{p.architecture}={p.version}"]
    out = proc.run(argv, capture=True, echo=False, what=f"apt-cache show {p.name}={p.version}").output
    f = dict(line.split(": ", 1) for line in out.split("\n\n")[0].splitlines() if ": " in line and line[:1] != " ")
    return DebPackage(
        name=p.name,
        version=p.version,
        architecture=p.architecture,
        suite=p.suite,
        sha256=f["SHA256"],
        size=int(f["Size"]),
        path=f.get("Filename", ""),
    )


def _header_lines(text: str) -> list[str]:
    out = []
    for line in text.splitlines():
        if not line.startswith("#"):
            break
        out.append(line)
    return out


def run(args: argparse.Namespace) -> int:
    for f in args.lock:
        for line in repin(Path(f), args.update) or ["unchanged"]:
            print(f"{f}: {line}")
    return 0


def register(sub: Any) -> None:
    p = sub.add_parser("lock-debs", help="re-pin Debian .deb lock files (sizes, pool paths; --update: versions)")
    p.add_argument("lock", nargs="+", help="a debs lock file (the compilers', Vulkan's, CUDA 12.4's)")
    p.add_argument("--update", action="store_true", help="move every package to apt's candidate version")
    p.set_defaults(func=run)
