"""``bundlegraph upload-release`` and ``publish-release``: put a release that passed the coverage
gate on GitHub, whole or not at all (:mod:`bundlegraph.release.github_release`: a draft first, every
asset checked against the SHA index, changed bytes refused, published last).

``upload-release [--dist DIR] [--repo OWNER/REPO] [--tag TAG] [--draft-only]``: ``--dist``
defaults to ``dist/`` of the work directory; ``--repo`` to ``GITHUB_REPOSITORY``; ``--tag`` to
release.toml's ``tag``. On CI, ``GITHUB_REF`` must be ``refs/tags/<tag>``. The token is
``GITHUB_TOKEN``; the API base ``BUNDLEGRAPH_GITHUB_API``. Exit 0 when the release is published
(or already was, identical); with ``--draft-only``, when the draft holds every asset.

``publish-release --subjects FILE [--dist DIR] [--repo R] [--tag T]``: publish that draft once
``FILE`` (``sha256sum`` lines: what ``actions/attest`` signed) is exactly the release's assets and
the draft holds exactly them. Otherwise exit 2, every difference named, and it stays a draft.

``check-tag [--ref REF]``: the same tag rule, hours earlier: the release workflow's plan job runs
it before any compile starts. ``REF`` (default ``GITHUB_REF``) ``refs/tags/T`` with T other than
release.toml's ``tag`` is refused in one line naming both (exit 2); so is any ref that is not a
tag (a ``workflow_dispatch`` on a branch, exit 2): a release run reads the compiler cache and the
cost records every signed release trusts, so it runs only for the tag release.toml names (issue
51); exit 2 without a ref.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from ..core import paths, settings
from ..core.errors import BundleGraphError
from ..core.report import say


def _where(args: argparse.Namespace, command: str) -> tuple[str, str, Path]:
    """``(repo, tag, dist)`` from the options and the environment (module docstring)."""
    from ..specs.loader import load_matrix

    repo = args.repo or os.environ.get("GITHUB_REPOSITORY")
    if not repo:
        raise BundleGraphError(f"{command}: no repository: pass --repo OWNER/REPO or set GITHUB_REPOSITORY")
    tag = args.tag or load_matrix(args.bundles).release.tag
    return repo, tag, Path(args.dist) if args.dist else paths.dist_dir()


def run(args: argparse.Namespace) -> int:
    from ..release.github_release import upload_release

    repo, tag, dist = _where(args, "upload-release")
    r = upload_release(
        dist,
        repo=repo,
        tag=tag,
        git_ref=os.environ.get("GITHUB_REF", ""),
        api=settings.get("GITHUB_API"),
        token=os.environ.get("GITHUB_TOKEN") or None,
        publish=not args.draft_only,
    )
    state = "already published" if r.already_published else "a draft, not published" if r.draft else "published"
    say(f"release {tag}: {state} (id {r.id}; {len(r.uploaded)} uploaded, {len(r.kept)} kept) {r.url}".rstrip())
    return 0


def run_publish(args: argparse.Namespace) -> int:
    from ..release.github_release import publish_release

    repo, tag, dist = _where(args, "publish-release")
    r = publish_release(
        dist,
        Path(args.subjects),
        repo=repo,
        tag=tag,
        git_ref=os.environ.get("GITHUB_REF", ""),
        api=settings.get("GITHUB_API"),
        token=os.environ.get("GITHUB_TOKEN") or None,
        sigstore_bundle=Path(args.sigstore_bundle) if args.sigstore_bundle else None,
    )
    say(f"release {tag}: {'already published' if r.already_published else 'published'} (id {r.id}) {r.url}".rstrip())
    return 0


def run_check_tag(args: argparse.Namespace) -> int:
    from ..specs.loader import load_matrix

    ref = args.ref if args.ref is not None else os.environ.get("GITHUB_REF", "")
    if not ref:
        raise BundleGraphError("check-tag: no ref: pass --ref refs/tags/TAG or set GITHUB_REF")
    f = Path(args.bundles) / "release.toml"
    tag = load_matrix(args.bundles).release.tag
    if not ref.startswith("refs/tags/"):
        raise BundleGraphError(
            f"check-tag: {ref} is not a tag: a release runs only for {f}'s tag {tag}, refused before any "
            f"compile (push the tag refs/tags/{tag}, or run the workflow from it)"
        )
    pushed = ref.removeprefix("refs/tags/")
    if pushed != tag:
        raise BundleGraphError(
            f"check-tag: the run's tag is {pushed}, but {f} has tag {tag}: refused before any compile "
            f"(push the tag release.toml names, or fix release.toml at that tag)"
        )
    say(f"check-tag: {ref} is {f}'s tag")
    return 0


def register(sub: Any) -> None:
    p = sub.add_parser("upload-release", help="upload dist/ as the GitHub release (draft, check, publish)")
    p.add_argument("--dist", help="the directory holding release-assets.txt and the SHA index (default: dist/)")
    p.add_argument("--repo", help="OWNER/REPO (default: $GITHUB_REPOSITORY)")
    p.add_argument("--tag", help="the release tag (default: release.toml's tag)")
    p.add_argument(
        "--draft-only", action="store_true", help="leave the checked draft unpublished (publish-release publishes it)"
    )
    p.set_defaults(func=run)
    c = sub.add_parser(
        "check-tag",
        help="refuse a run that is not for release.toml's tag, a branch too (the plan job, before compiling)",
    )
    c.add_argument("--ref", help="the git ref of the run (default: $GITHUB_REF)")
    c.set_defaults(func=run_check_tag)
    q = sub.add_parser("publish-release", help="publish the draft once its assets are exactly the attested subjects")
    q.add_argument("--subjects", required=True, help="sha256sum lines of what actions/attest signed")
    q.add_argument("--dist", help="the release's files: release-assets.txt, the SHA index (default: dist/)")
    q.add_argument(
        "--sigstore-bundle",
        metavar="FILE",
        help="the attestation's Sigstore bundle (actions/attest's bundle-path): uploaded as "
        "llama-prebuilt-attestation.sigstore.json, what verify-release authenticates with",
    )
    q.add_argument("--repo", help="OWNER/REPO (default: $GITHUB_REPOSITORY)")
    q.add_argument("--tag", help="the release tag (default: release.toml's tag)")
    q.set_defaults(func=run_publish)
