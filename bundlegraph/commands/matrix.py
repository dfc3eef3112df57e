"""``bundlegraph matrix``: pure JSON for a GitHub Actions matrix (``fromJSON``).

Output: ``{"include": [{"id", "os", "arch", "profile", "runner", "compile_runner", "role",
"merge_base"}, ...]}`` — one object per leg kept by the filters. ``compile_runner`` is null unless
the leg compiles on another runner than ``runner`` (its spec's ``compile_runner``): CI then runs
``build:<id>`` there, uploads ``build/<id>/cmake/bin`` as artifact ``built-<id>``, and the leg's
job on ``runner`` imports it with ``built=DIR``. ``role`` is ``"backend"`` for a leg whose spec has
``[merge] base = ...`` (its GPU backend is merged into that leg's bundle, so its job needs the
base's bundle: ``merge_base`` names it) and ``"base"`` for every other leg (built from its own
build alone; ``merge_base`` is null). CI splits its jobs on ``role``, never on profile names.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from ..pipeline.base import select
from ..schemas.loader import load_matrix
from . import add_filter_args, filters_from


def matrix_rows(args: argparse.Namespace) -> list[dict]:
    m = load_matrix(args.bundles)
    rows = []
    for leg in select(m, filters_from(args)):
        spec = m.legs[leg]
        base = spec.merge.base if spec.merge else None
        rows.append({"id": leg, "os": spec.os, "arch": spec.arch, "profile": spec.profile.name,
                     "runner": spec.runner, "compile_runner": spec.compile_runner, "role": "backend" if base else "base", "merge_base": base})
    return rows


def run(args: argparse.Namespace) -> int:
    print(json.dumps({"include": matrix_rows(args)}, indent=None if args.compact else 2))
    return 0


def register(sub: Any) -> None:
    p = sub.add_parser("matrix", help="print the leg matrix as JSON for a CI matrix")
    add_filter_args(p)
    p.add_argument("--compact", action="store_true", help="one line (for $GITHUB_OUTPUT)")
    p.set_defaults(func=run)
