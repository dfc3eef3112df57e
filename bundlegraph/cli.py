"""The bundlegraph command: everything that is not a graph task.

Subcommands live in :mod:`bundlegraph.commands`, one module each, listed in ``COMMANDS``;
each module has ``register(subparsers)`` which adds its parser and sets ``func`` (a callable
taking the parsed args and returning an exit status).
"""

from __future__ import annotations

import argparse
import importlib
import sys

from .errors import BundleGraphError

COMMANDS = [
    "bundlegraph.commands.plan",
    "bundlegraph.commands.matrix",
    "bundlegraph.commands.schema",
    "bundlegraph.commands.verify",
    "bundlegraph.commands.fatbin",
    "bundlegraph.commands.explain",
    "bundlegraph.commands.lock_wheels",
]


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="bundlegraph", description=__doc__.splitlines()[0])
    p.add_argument("--bundles", default="bundles", help="the bundles directory (default: ./bundles)")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for mod in COMMANDS:
        importlib.import_module(mod).register(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the exit status (2 for bad input, 1 for failed checks)."""
    args = build_parser().parse_args(argv)
    import os
    from pathlib import Path

    # same work directory as doit: the directory holding bundles/ (unless set explicitly)
    os.environ.setdefault("BUNDLEGRAPH_WORKDIR", str(Path(args.bundles).resolve().parent))
    try:
        return int(args.func(args) or 0)
    except BundleGraphError as e:
        print(f"bundlegraph: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
