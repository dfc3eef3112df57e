"""``bundlegraph fatbin FILE``: the CUDA fatbin inventory of a PE or ELF file.

Prints, per SM, how many SASS (machine code) and PTX entries the file embeds, then the SM
lists (``SASS: 86, 89, 120, 121`` / ``PTX: 75, 80, 90``). Exit 1 when the file has no fatbin.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from ..checks.bundle import mapped
from ..checks.inspect import inspect_file
from ..core.errors import BundleGraphError


def run(args: argparse.Namespace) -> int:
    path = Path(args.file)
    if not path.is_file():
        raise BundleGraphError(f"{path}: no such file")
    with mapped(path) as data:
        r = inspect_file(path.name, data)
    if r.format is None:
        raise BundleGraphError(f"{path}: neither a PE (.dll/.exe/.node/.pyd) nor an ELF file")
    for f in r.failures:
        print(f.line())
    inv = r.fatbin
    if args.json:
        print(
            json.dumps(
                {"file": str(path), "format": r.format, "machine": r.machine, "fatbin": inv.to_json() if inv else None},
                indent=2,
            )
        )
        return 0 if inv else 1
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
        print(f"  PTX   compute_{sm:<4} {n:>5} entries")
    print(f"SASS: {', '.join(str(s) for s in sorted(inv.sass)) or 'none'}")
    print(f"PTX: {', '.join(str(s) for s in sorted(inv.ptx)) or 'none'}")
    return 0


def register(sub: Any) -> None:
    p = sub.add_parser("fatbin", help="list the CUDA fatbin entries (SASS/PTX per SM) of a DLL or .so")
    p.add_argument("file")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=run)
