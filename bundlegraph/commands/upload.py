"""``bundlegraph upload-release``: put a release that passed the coverage gate on GitHub, whole
or not at all (:mod:`bundlegraph.github_release`: a draft first, every asset checked against the
SHA index, changed bytes refused, published last).

``upload-release [--dist DIR] [--repo OWNER/REPO] [--tag TAG]``: ``--dist`` defaults to ``dist/``
of the work directory; ``--repo`` to ``GITHUB_REPOSITORY``; ``--tag`` to release.toml's ``tag``.
On CI, ``GITHUB_REF`` must be ``refs/tags/<tag>``. The token is ``GITHUB_TOKEN``; the API base
``BUNDLEGRAPH_GITHUB_API``. Exit 0 when the release is published (or already was, identical).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from ..core import paths, settings
from ..core.errors import BundleGraphError
from ..core.report import say


def run(args: argparse.Namespace) -> int:
    from ..github_release import upload_release
    from ..schemas.loader import load_matrix

    repo = args.repo or os.environ.get("GITHUB_REPOSITORY")
    if not repo:
        raise BundleGraphError("upload-release: no repository: pass --repo OWNER/REPO or set GITHUB_REPOSITORY")
    tag = args.tag or load_matrix(args.bundles).release.tag
    dist = Path(args.dist) if args.dist else paths.dist_dir()
    r = upload_release(
        dist,
        repo=repo,
        tag=tag,
        git_ref=os.environ.get("GITHUB_REF", ""),
        api=settings.get("GITHUB_API"),
        token=os.environ.get("GITHUB_TOKEN") or None,
    )
    say(
        f"release {tag}: {'already published' if r.already_published else 'published'} "
        f"(id {r.id}; {len(r.uploaded)} uploaded, {len(r.kept)} kept) {r.url}".rstrip()
    )
    return 0


def register(sub: Any) -> None:
    p = sub.add_parser("upload-release", help="upload dist/ as the GitHub release (draft, check, publish)")
    p.add_argument("--dist", help="the directory holding release-assets.txt and the SHA index (default: dist/)")
    p.add_argument("--repo", help="OWNER/REPO (default: $GITHUB_REPOSITORY)")
    p.add_argument("--tag", help="the release tag (default: release.toml's tag)")
    p.set_defaults(func=run)
