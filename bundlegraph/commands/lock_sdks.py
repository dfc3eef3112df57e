"""``bundlegraph lock [--mirror URL]``: fetch and pin, in one command, every SDK file the specs
name that only a first download can pin (:mod:`bundlegraph.toolkit.sdkpins`): LunarG's Vulkan SDK
installer of each ``lunarg`` leg (its spec's ``[vulkan.sdk] sha256``) and the TheRock tarball of
each ROCm leg (a row of its lock). A maintainer command on a machine with the network: run it,
review the diff, commit. A pin whose bytes changed is refused (one line each) and nothing is
written; a pin that holds stays as it is. ``--mirror URL`` downloads every file from
``URL/<file name>`` instead (a copy of the publishers' files; the pins still name their homes).
"""

from __future__ import annotations

import argparse
from typing import Any


def run(args: argparse.Namespace) -> int:
    from ..specs.loader import load_matrix
    from ..toolkit.sdkpins import pin_all, wanted

    matrix = load_matrix(args.bundles)
    files = wanted(matrix, matrix.root)
    for line in pin_all(files, args.mirror) or ["no SDK file to pin"]:
        print(line)
    return 0


def register(sub: Any) -> None:
    p = sub.add_parser(
        "lock", help="fetch and pin every SDK file the specs name (LunarG's installer, TheRock tarballs)"
    )
    p.add_argument("--mirror", metavar="URL", help="download each file from URL/<file name> (pins keep their homes)")
    p.set_defaults(func=run)
