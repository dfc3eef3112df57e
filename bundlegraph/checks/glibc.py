"""glibc / libstdc++ floors: the newest symbol versions a Linux bundle needs from the host.

A file needs ``GLIBC_2.34`` when it references a glibc symbol first versioned in 2.34 (its
verneed entry for ``libc.so.6`` etc. names that version; LSB Core, "Symbol Versioning"). The
bundle runs on a host only if the host's glibc is at least the highest such version, so each
leg declares floors (``[linux] glibc_floor``, ``glibcxx_floor``) and this module reports every
file and symbol that needs more. Debian 12's cross toolchain links against glibc 2.36.

Version names: ``GLIBC_x.y[.z]`` (from ``libc.so.6``, ``libm.so.6``, ``ld-linux-*``, ...),
``GLIBCXX_x.y.z`` (``libstdc++.so.6``); ``GLIBC_PRIVATE`` and ``CXXABI_*`` are not floors.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..core.lightclass import frozen
from . import Failure

if TYPE_CHECKING:  # only a type here: the floors parse without the ELF reader
    from .elf import ELFInfo

_RE = re.compile(r"^(GLIBC|GLIBCXX)_(\d+(?:\.\d+)*)$")


def parse_version(text: str) -> tuple[int, ...]:
    """``"2.36"`` -> ``(2, 36)``; ``"3.4.30"`` -> ``(3, 4, 30)``. Raises ValueError."""
    parts = text.split(".")
    if not all(p.isdigit() for p in parts):
        raise ValueError(f"{text!r} is not a dotted version")
    return tuple(int(p) for p in parts)


@frozen
class Need:
    """The highest version of one family a file needs: ``family`` (``GLIBC``/``GLIBCXX``),
    ``version`` (``"2.34"``), ``library`` (``libc.so.6``) and one ``symbol`` needing it."""

    family: str
    version: str
    library: str
    symbol: str | None


def highest_needs(info: ELFInfo) -> dict[str, Need]:
    """Family -> the highest version ``info`` needs (families it needs nothing from are absent)."""
    best: dict[str, Need] = {}
    for lib, versions in info.verneed.items():
        for v in versions:
            m = _RE.match(v)
            if not m:
                continue
            fam, num = m.group(1), m.group(2)
            cur = best.get(fam)
            if cur is None or parse_version(num) > parse_version(cur.version):
                best[fam] = Need(fam, num, lib, info.verneed_symbols.get((lib, v)))
    return best


def check_floors(
    files: Mapping[str, ELFInfo], *, glibc: str | None, glibcxx: str | None
) -> tuple[list[Failure], dict[str, Any]]:
    """Compare every file's needs with the floors (``"2.36"``, ``"3.4.30"``; None = no limit).

    Returns ``(failures, finding)``: a failure per file and family above its floor, naming the
    version, library and symbol; the finding holds the bundle's highest need per family
    (``{"GLIBC": {"version": "2.34", "file": ..., "symbol": ...}}``)."""
    floors = {"GLIBC": glibc, "GLIBCXX": glibcxx}
    out: list[Failure] = []
    top: dict[str, tuple[str, str, Need]] = {}
    for path, info in sorted(files.items()):
        for fam, need in highest_needs(info).items():
            t = top.get(fam)
            if t is None or parse_version(need.version) > parse_version(t[0]):
                top[fam] = (need.version, path, need)
            floor = floors.get(fam)
            if floor and parse_version(need.version) > parse_version(floor):
                sym = f" (symbol {need.symbol})" if need.symbol else ""
                why = f"needs {fam}_{need.version} from {need.library}{sym}, above the leg's floor {fam}_{floor}"
                out.append(Failure(path, "glibc", why))
    finding = {fam: {"version": v, "file": p, "symbol": n.symbol} for fam, (v, p, n) in sorted(top.items())}
    return out, finding
