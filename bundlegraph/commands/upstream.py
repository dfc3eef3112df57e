"""``bundlegraph upstream`` and ``bundlegraph bump``: track upstream llama.cpp's builds
(:mod:`bundlegraph.release.upstream`).

- ``upstream [--min-age-hours H] [--json]``: the newest upstream ``bNNNN`` build of the release's
  ``source_repo`` at least H hours old, with its commit and age, and every release skipped and
  why. Exit 1 when there is none.
- ``bump [bNNNN] [--min-age-hours H] [--allow-older] [--only-if-mix]``: move the mix release's
  base to that build (default: the newest past the age floor), keeping the pull request pins: the
  base archive's sha256 is computed on download, every pull request is merged on top to check it
  still merges (one that does not is named and nothing is written), and ``release.toml`` gets the
  new base and the tag the pins give. Exit 1 when a pull request no longer merges. A named build
  must have a published release (not a draft, not deleted). The base never moves back: a named
  build older than the base is refused naming both (exit 2) unless ``--allow-older``; with no
  build named, a newest build older than (or equal to) the base is "nothing to bump" (exit 0: the
  schedule is not broken). ``--only-if-mix``: a release that is not a mix is "nothing to bump"
  (exit 0), for the scheduled workflow; without it, an error (exit 2). Whatever it did or did not
  do is one line, also written to ``$GITHUB_STEP_SUMMARY`` on CI.

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
    from ..release.github_release import GitHub
    from ..specs.loader import load_matrix

    return GitHub.connect(load_matrix(bundles).release.source_repo)


def _scan(args: argparse.Namespace) -> Any:
    from ..release.upstream import newest_build

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


def _said(line: str) -> int:
    """Print ``line``, put it in the step summary on CI, exit 0: a bump with nothing to do."""
    from ..pipeline.ci import append_summary

    print(line)
    append_summary([line])
    return 0


def run_bump(args: argparse.Namespace) -> int:
    from ..core import paths
    from ..release.upstream import BUILD_RE, UpstreamBuild, bump, check_not_older, published_build
    from ..schemas.records import MixPin
    from ..specs.loader import load_matrix

    f = Path(args.bundles) / "release.toml"
    rel = load_matrix(args.bundles).release
    if not isinstance(rel.source, MixPin):  # said before any request
        if args.only_if_mix:
            return _said(
                f"bump: {f}: not a mix release (its source is kind '{rel.source.kind}', release {rel.tag}): "
                f"nothing to bump"
            )
        raise BundleGraphError(
            f'{f}: bump moves a mix source\'s base ([source] kind = "mix"); '
            f"this release's source is kind '{rel.source.kind}'"
        )
    current = rel.source.base.tag

    if args.build:
        if not BUILD_RE.match(args.build):
            raise BundleGraphError(f"bump: {args.build!r} is not an upstream build tag (bNNNN)")
        check_not_older(f, current, args.build, args.allow_older)
        if args.build == current:
            return _said(f"bump: {f}: the base is already {current}: nothing to bump")
        gh = _github(args.bundles)
        with gh.c:
            found = published_build(gh, args.build)
            if found is None:
                raise BundleGraphError(
                    f"bump: {gh.repo} has no published release {args.build} (deleted, or a draft): not a build to "
                    f"release"
                )
            commit = gh.call("GET", f"/commits/{args.build}")["sha"]
        build = UpstreamBuild(args.build, found[0], commit, found[1])
    else:
        scan, repo = _scan(args)
        for s in scan.skipped:
            print(f"skipped {s}")
        if scan.build is None:
            raise BundleGraphError(f"bump: {repo} has no bNNNN build at least {args.min_age_hours:g} h old")
        build = scan.build
        floor = f"the newest upstream build at least {args.min_age_hours:g} h old is {build.tag}"
        if build.tag == current:
            return _said(f"bump: {f}: {floor}, the base already: nothing to bump")
        if build.number < int(current[1:]) and not args.allow_older:
            # a schedule never moves back: not an error (nothing is wrong), not a move
            return _said(
                f"bump: {f}: {floor}, older than the base {current}: the base is never moved back "
                f"(name a build with --allow-older to do so): nothing to bump"
            )
    log = paths.workdir() / "build" / "logs" / "bump.log"
    b = bump(Path(args.bundles), build, log, allow_older=args.allow_older)
    return _said(
        f"{b.file}: base {current} -> {b.base.tag} ({b.base.commit[:12]}, archive sha256 {b.sha256}); tag {b.tag}; "
        f"merged {b.merged[:12]}"
    )


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
    b.add_argument(
        "--allow-older", action="store_true", help="allow moving the base to an older build than release.toml's"
    )
    b.add_argument(
        "--only-if-mix",
        action="store_true",
        help="on a release that is not a mix, say so and exit 0 (the scheduled workflow); without it that is an error",
    )
    b.set_defaults(func=run_bump)
