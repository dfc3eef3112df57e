"""``bundlegraph`` subcommands, one module each (see :mod:`bundlegraph.cli`)."""

from __future__ import annotations

import argparse

from ..pipeline.base import Filters


def add_filter_args(p: argparse.ArgumentParser) -> None:
    """``--only-profile`` / ``--only-leg`` (same meaning as doit's only_profile= / only_leg=)."""
    p.add_argument("--only-profile", metavar="P", help="keep legs of this profile")
    p.add_argument("--only-leg", metavar="L", help="keep this leg only")


def filters_from(args: argparse.Namespace) -> Filters:
    return Filters.from_env(only_profile=getattr(args, "only_profile", None), only_leg=getattr(args, "only_leg", None))
