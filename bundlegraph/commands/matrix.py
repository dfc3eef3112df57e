"""``bundlegraph matrix``: pure JSON for a GitHub Actions matrix (``fromJSON``).

Output: ``{"include": [{"id", "os", "arch", "profile", "runner"}, ...]}`` — one object per leg
kept by the filters.
"""

from __future__ import annotations

import json

from ..graph import select
from ..schemas.loader import load_matrix
from . import add_filter_args, filters_from


def matrix_rows(args) -> list[dict]:
    m = load_matrix(args.bundles)
    return [
        {"id": l, "os": m.legs[l].os, "arch": m.legs[l].arch, "profile": m.legs[l].profile.name,
         "runner": m.legs[l].runner}
        for l in select(m, filters_from(args))
    ]


def run(args) -> int:
    print(json.dumps({"include": matrix_rows(args)}, indent=None if args.compact else 2))
    return 0


def register(sub) -> None:
    p = sub.add_parser("matrix", help="print the leg matrix as JSON for a CI matrix")
    add_filter_args(p)
    p.add_argument("--compact", action="store_true", help="one line (for $GITHUB_OUTPUT)")
    p.set_defaults(func=run)
