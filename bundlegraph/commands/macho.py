"""``bundlegraph macho PATH [--arch A] [--minos 13.3] [--developer-id]``: the Mach-O files of a macOS bundle.

``PATH`` is a file, a directory or a bundle archive (``.tar.gz``/``.zip``, read in place). Prints
one line per Mach-O file (architectures, file type, minimum macOS, signature kind) and then one
line per problem :func:`bundlegraph.checks.macho.check_bundle` finds: a missing architecture, a
minimum macOS above ``--minos``, an arm64 file without a code signature (or, with
``--developer-id``, one not signed with a Developer ID Application certificate), and libraries
loaded through ``@rpath``/``@loader_path`` that the bundle does not hold (not for a single file,
checked alone). Exit 0 when there is at
least one Mach-O file and no problem; 1 otherwise.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..checks.bundle import mapped, read_bundle
from ..checks.macho import check_bundle, parse_version, version_text
from ..core.errors import BundleGraphError


def run(args: argparse.Namespace) -> int:
    path = Path(args.path)
    try:
        floor = parse_version(args.minos) if args.minos else None
    except ValueError as e:
        raise BundleGraphError(f"--minos: {e}") from None
    opts = {"arch": args.arch, "minos_floor": floor, "developer_id": args.developer_id}
    if path.is_file() and not path.name.endswith((".tar.gz", ".tgz", ".tar", ".zip", ".tar.xz")):
        with mapped(path) as data:
            infos, fails = check_bundle([(path.name, bytes(data))], **opts)
        fails = [f for f in fails if f.check != "imports"]  # one file alone: its libraries are not there to find
    else:
        _listing, files = read_bundle(path)
        infos, fails = check_bundle(((p, bytes(d)) for p, d in files), **opts)
    for name, info in sorted(infos.items()):
        for s in info.slices:
            sig = s.signature.kind if s.signature else "unsigned"
            print(f"{name}: {s.arch} {s.filetype}, minos {version_text(s.minos)}, sdk {version_text(s.sdk)}, {sig}")
    for f in fails:
        print(f.line())
    if not infos:
        print(f"{path}: no Mach-O file")
    return 0 if infos and not fails else 1


def register(sub: Any) -> None:
    p = sub.add_parser(
        "macho", help="check the Mach-O files of a macOS bundle (arch, minimum macOS, @rpath, signature)"
    )
    p.add_argument("path", help="a Mach-O file, a directory or a .tar.gz/.zip bundle")
    p.add_argument("--arch", choices=("arm64", "x64"), help="the architecture every file must hold")
    p.add_argument("--minos", metavar="VERSION", help="the floor on each file's minimum macOS (the fork's: 13.3)")
    p.add_argument("--developer-id", action="store_true", help="require a Developer ID Application signature")
    p.set_defaults(func=run)
