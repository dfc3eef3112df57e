"""``bundlegraph fatbin FILE``: the CUDA fatbin inventory of a PE or ELF file.

Prints, per SM, how many SASS (machine code) and PTX entries the file embeds, then the SM
lists (``SASS: 86, 89, 120, 121`` / ``PTX: 75, 80, 90``), each PTX SM with its PTX ISA (``8.4``:
the oldest driver that JIT-compiles it, :mod:`bundlegraph.checks.ptxisa`). Exit 1 when the file has
no fatbin.

``--archs 50-virtual,61-virtual`` (a leg's ``cuda.archs``, CMake forms, comma-separated) also
checks the inventory against them with :func:`~bundlegraph.checks.fatbin.check_archs`, as
``verify``'s ``gpu-code`` row does: every promised arch present (SASS for ``86``/``86-real``, PTX
for ``-virtual``) and nothing unpromised (SASS for a PTX-only arch, any other SM). It prints
``archs 50-virtual,61-virtual: ok`` or one ``archs ...: <problem>`` line each and exits 1 on a
problem. A legacy bundle (``50-virtual;61-virtual``) passes only with PTX 50 and 61 and no SASS.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from ..checks.bundle import mapped
from ..checks.inspect import inspect_file
from ..core.errors import BundleGraphError


def _archs(text: str) -> list[Any]:
    """``--archs`` parsed (:func:`~bundlegraph.schemas.archs.parse_arch`); a bad one is one line
    naming the option and the arch."""
    from ..schemas.archs import parse_arch

    out = []
    for a in (x.strip() for x in text.replace(";", ",").split(",")):
        if not a:
            continue
        try:
            out.append(parse_arch(a))
        except ValueError as e:
            raise BundleGraphError(f"--archs: {e}") from None
    if not out:
        raise BundleGraphError("--archs: expected one or more CUDA archs in CMake form (50-virtual,61-virtual)")
    return out


def run(args: argparse.Namespace) -> int:
    path = Path(args.file)
    archs = _archs(args.archs) if args.archs is not None else None
    if not path.is_file():
        raise BundleGraphError(f"{path}: no such file")
    with mapped(path) as data:
        r = inspect_file(path.name, data)
    if r.format is None:
        raise BundleGraphError(f"{path}: neither a PE (.dll/.exe/.node/.pyd) nor an ELF file")
    for f in r.failures:
        print(f.line())
    inv = r.fatbin
    problems = None
    if archs is not None:
        from ..checks.fatbin import check_archs

        problems = check_archs(inv, archs)
    if args.json:
        doc = {"file": str(path), "format": r.format, "machine": r.machine, "fatbin": inv.to_json() if inv else None}
        if archs is not None:
            doc["archs"] = {"promised": [a.cmake for a in archs], "problems": problems}
        print(json.dumps(doc, indent=2))
        return 0 if inv and not problems else 1
    if inv is None:
        print(f"{path.name}: {r.format.upper()} {r.machine}: no CUDA fatbin section")
        return 1
    entries = sum(inv.sass.values()) + sum(inv.ptx.values())
    print(
        f"{path.name}: {r.format.upper()} {r.machine}, {inv.containers} fatbin containers, "
        f"{entries} entries ({inv.compressed} compressed)"
    )
    for sm, n in sorted(inv.sass.items()):
        print(f"  SASS  sm_{sm:<4} {n:>5} entries")
    for sm, n in sorted(inv.ptx.items()):
        isa = ", ".join(f"{a}.{b}" for a, b in sorted(inv.ptx_isa.get(sm, ())))
        print(f"  PTX   compute_{sm:<4} {n:>5} entries (PTX ISA {isa})")
    print(f"SASS: {', '.join(str(s) for s in sorted(inv.sass)) or 'none'}")
    print(f"PTX: {', '.join(str(s) for s in sorted(inv.ptx)) or 'none'}")
    if archs is not None:
        promised = ",".join(a.cmake for a in archs)
        for problem in problems or ["ok"]:
            print(f"archs {promised}: {problem}")
        return 1 if problems else 0
    return 0


def register(sub: Any) -> None:
    p = sub.add_parser("fatbin", help="list the CUDA fatbin entries (SASS/PTX per SM) of a DLL or .so")
    p.add_argument("file")
    p.add_argument("--json", action="store_true")
    p.add_argument(
        "--archs",
        metavar="ARCHS",
        help="check against these CUDA archs (CMake forms, comma-separated, e.g. 50-virtual,61-virtual); exit 1 on a problem",
    )
    p.set_defaults(func=run)
