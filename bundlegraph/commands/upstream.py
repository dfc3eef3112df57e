"""``bundlegraph upstream`` and ``bundlegraph bump``: track upstream llama.cpp's builds
(:mod:`bundlegraph.upstream`).

- ``upstream [--min-age-hours H] [--json]``: the newest upstream ``bNNNN`` build of the release's
  ``source_repo`` at least H hours old, with its commit and age, and every release skipped and
  why. Exit 1 when there is none.
- ``bump [bNNNN] [--min-age-hours H]``: move the mix release's base to that build (default: the
  newest past the age floor), keeping the pull request pins: the base archive's sha256 is
  computed on download, every pull request is merged on top to check it still merges (one that
  does not is named and nothing is written), and ``release.toml`` gets the new base and the tag
  the pins give. Exit 1 when a pull request no longer merges.

The API is ``BUNDLEGRAPH_GITHUB_API`` (default GitHub's), the token ``GITHUB_TOKEN`` if set.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import sys
from pathlib import Path
from typing import Any

from ..core.errors import BundleGraphError


def _github(bundles: str) -> Any:
    from ..github_release import GitHub
    from ..schemas.loader import load_matrix

    return GitHub.connect(load_matrix(bundles).release.source_repo)


def _scan(args: argparse.Namespace) -> Any:
    from ..upstream import newest_build

    gh = _github(args.bundles)
    with gh.c:
        return newest_build(gh, _dt.datetime.now(_dt.UTC), args.min_age_hours), gh.repo


def run_upstream(args: argparse.Namespace) -> int:
    scan, repo = _scan(args)
    now = _dt.datetime.now(_dt.UTC)
    b = scan.build
    if args.json:
        print(
            json.dumps(
                {
                    "repo": repo,
                    "build": None
                    if b is None
                    else {
                        "tag": b.tag,
                        "commit": b.commit,
                        "published_at": b.published_at.isoformat(),
                        "age_hours": round(b.age_hours(now), 1),
                        "via": b.via,
                    },
                    "skipped": scan.skipped,
                },
                indent=2,
            )
        )
    else:
        for s in scan.skipped:
            print(f"skipped {s}")
        if b is not None:
            via = f" (via {b.via})" if b.via else ""
            print(
                f"{repo}: newest build {b.tag}{via}, commit {b.commit}, published "
                f"{b.published_at.isoformat()} ({b.age_hours(now):.1f} h ago)"
            )
    if b is None:
        print(f"{repo}: no bNNNN build at least {args.min_age_hours:g} h old", file=sys.stderr)
        return 1
    return 0


def run_bump(args: argparse.Namespace) -> int:
    from ..core import paths
    from ..schemas.loader import load_matrix
    from ..schemas.records import MixPin
    from ..upstream import BUILD_RE, UpstreamBuild, bump

    rel = load_matrix(args.bundles).release
    if not isinstance(rel.source, MixPin):  # said before any request
        raise BundleGraphError(
            f'{Path(args.bundles) / "release.toml"}: bump moves a mix source\'s base ([source] kind = "mix"); '
            f"this release's source is kind '{rel.source.kind}'"
        )

    if args.build:
        if not BUILD_RE.match(args.build):
            raise BundleGraphError(f"bump: {args.build!r} is not an upstream build tag (bNNNN)")
        gh = _github(args.bundles)
        with gh.c:
            commit = gh.call("GET", f"/commits/{args.build}")["sha"]
        build = UpstreamBuild(args.build, int(args.build[1:]), commit, _dt.datetime.now(_dt.UTC))
    else:
        scan, repo = _scan(args)
        if scan.build is None:
            raise BundleGraphError(f"bump: {repo} has no bNNNN build at least {args.min_age_hours:g} h old")
        build = scan.build
    log = paths.workdir() / "build" / "logs" / "bump.log"
    b = bump(Path(args.bundles), build, log)
    print(
        f"{b.file}: base {b.base.tag} ({b.base.commit[:12]}, archive sha256 {b.sha256}); tag {b.tag}; "
        f"merged {b.merged[:12]}"
    )
    return 0


def register(sub: Any) -> None:
    p = sub.add_parser(
        "upstream",
        help="the newest upstream bNNNN build (prereleases included, v* pointers followed; network: GitHub's API)",
    )
    p.add_argument("--min-age-hours", type=float, default=0.0, help="skip builds younger than this (default 0)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run_upstream)
    b = sub.add_parser(
        "bump",
        help="move a mix release's base to an upstream build, keeping its pull request pins (network: GitHub's API "
        "and git; rewrites bundles/release.toml)",
    )
    b.add_argument("build", nargs="?", help="the build tag (default: the newest past --min-age-hours)")
    b.add_argument("--min-age-hours", type=float, default=0.0, help="with no build named: the age floor")
    b.set_defaults(func=run_bump)
