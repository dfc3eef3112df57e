"""``bundlegraph codeobjects FILE [--expect gfx...]``: the AMD GPU code objects of a HIP library.

Lists the gfx processors in the clang offload bundles of an ELF or PE file (or of a bundle
file itself), with the number of bundles (compiled translation units) holding each, then
``gfx: gfx1030, gfx90a``. ``--expect`` takes processors or the fork's families (``gfx110X``,
expanded by :data:`bundlegraph.backends.hip.gfx.GFX_FAMILIES`) and prints one line per missing or
unexpected target. Exit 0 when the file has bundles and agrees with ``--expect``; 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from ..backends.hip.gfx import expand
from ..checks import NotParsable
from ..checks.bundle import mapped
from ..checks.offload import check_targets, inventory
from ..core.errors import BundleGraphError


def run(args: argparse.Namespace) -> int:
    path = Path(args.file)
    if not path.is_file():
        raise BundleGraphError(f"{path}: no such file")
    try:
        promised = expand(t for arg in args.expect or () for t in arg.replace(";", ",").split(",") if t)
    except ValueError as e:
        raise BundleGraphError(f"--expect: {e}") from None
    with mapped(path) as data:
        try:
            inv = inventory(data)
        except NotParsable as e:
            raise BundleGraphError(f"{path}: {e}") from None
    problems = check_targets(inv, promised) if args.expect and inv else []
    if args.json:
        out = {"file": str(path), "offload": inv.to_json() if inv else None, "expect": list(promised)}
        print(json.dumps(out | {"problems": problems}, indent=2))
        return 0 if inv and inv.bundles and not problems else 1
    if inv is None or not inv.bundles:
        print(f"{path.name}: no HIP offload bundle (.hip_fatbin / .hip_fat section)")
        return 1
    print(f"{path.name}: {len(inv.bundles)} offload bundles ({inv.compressed} compressed)")
    for t, n in sorted(inv.targets().items()):
        print(f"  {t:<10} {n:>5} bundles")
    print(f"gfx: {', '.join(sorted(inv.targets())) or 'none'}")
    for p in problems:
        print(f"{path.name}: gpu-code: {p} (expected {','.join(promised)})")
    return 1 if problems else 0


def register(sub: Any) -> None:
    p = sub.add_parser("codeobjects", help="list the AMD gfx code objects (HIP offload bundles) of a DLL or .so")
    p.add_argument("file")
    p.add_argument(
        "--expect",
        nargs="+",
        metavar="GFX",
        help="gfx processors or families (gfx1100, gfx110X) the file must hold, and no others",
    )
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=run)
