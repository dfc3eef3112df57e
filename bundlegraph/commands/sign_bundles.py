"""``bundlegraph sign-bundles DIR --out OUT``: sign the bundles packaged with
``BUNDLEGRAPH_SIGN=later`` (:mod:`bundlegraph.release.signbundles`). The release workflow's ``sign`` job runs
it: the one job holding the signing secret, running this project's code at the tag and the signer,
nothing of llama.cpp. Exit 0 when every pending bundle is signed and verified; 2, 3 or 4 as
:mod:`bundlegraph.core.errors` says (a missing base, a signer that changed more than the signature,
a failed verify, a signer that failed), nothing left in ``OUT`` for the failing bundle.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any


def run(args: argparse.Namespace) -> int:
    from ..release.signbundles import sign_bundles

    sign_bundles(Path(args.dir), Path(args.out), Path(args.bundles), os.environ)
    return 0


def register(sub: Any) -> None:
    p = sub.add_parser(
        "sign-bundles",
        help="sign the bundles packaged with BUNDLEGRAPH_SIGN=later (the release's sign job; runs no build code)",
    )
    p.add_argument("dir", help="a directory of bundles (any depth: download-artifact's bundle-<leg>/ folders)")
    p.add_argument("--out", required=True, help="where the signed bundles and everything else of DIR go")
    p.set_defaults(func=run)
