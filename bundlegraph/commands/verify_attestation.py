"""``bundlegraph verify-attestation BUNDLE FILE... --repo OWNER/REPO --tag TAG [--workflow NAME]
[--trusted-root FILE]``: the authenticity check of ``verify-release`` (:mod:`bundlegraph.release.authenticity`)
on any Sigstore bundle and the files it should attest: the bundle is signed by
``https://github.com/<repo>/.github/workflows/<workflow>@refs/tags/<tag>`` (issuer GitHub Actions)
under the pinned Sigstore trust root, offline, and its subjects are exactly the files, each with
its sha256. Exit 0 when it holds; 1 with one line naming the bundle or the file and what was
expected; 2 for usage (a file that cannot be read)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ..core.errors import BundleGraphError


def run(args: argparse.Namespace) -> int:
    from ..core.fsutil import sha256_file
    from ..release.authenticity import (
        GITHUB_ISSUER,
        AuthenticityError,
        attested_subjects,
        subject_problems,
        verify_bundle,
        workflow_identity,
    )

    bundle = Path(args.bundle)
    paths = [Path(f) for f in args.files]
    for f in (bundle, *paths):
        if not f.is_file():
            raise BundleGraphError(f"verify-attestation: {f}: no such file")
    if len({p.name for p in paths}) != len(paths):
        raise BundleGraphError("verify-attestation: two files of one name (subjects are named by file name)")
    identity = workflow_identity(args.repo, args.tag, args.workflow)
    try:
        statement = verify_bundle(
            bundle.name,
            bundle.read_bytes(),
            identity=identity,
            trusted_root=Path(args.trusted_root) if args.trusted_root else None,
        )
        attested = attested_subjects(bundle.name, statement)
    except AuthenticityError as e:
        print(f"verify-attestation: {e}", file=sys.stderr)
        return 1
    files = {p.name: sha256_file(p) for p in paths}
    problems = subject_problems(bundle.name, attested, files)
    root = args.trusted_root or "the pinned Sigstore trust root"
    print(f"verify-attestation {bundle.name}")
    print(f"  signer: {identity} (issuer {GITHUB_ISSUER}), verified against {root}, offline")
    for n in sorted(files):
        if not any(line.startswith(f"{n}: ") for line in problems):
            print(f"  {n}: sha256 {files[n]}, attested")
    for line in problems:
        print(f"verify-attestation: {line}", file=sys.stderr)
    print(
        "verify-attestation: " + ("passed" if not problems else "refused"), file=sys.stderr if problems else sys.stdout
    )
    return 1 if problems else 0


def register(sub: Any) -> None:
    p = sub.add_parser(
        "verify-attestation",
        help="verify a Sigstore bundle's signer (a GitHub workflow at a tag) and that it attests these files",
    )
    p.add_argument("bundle", help="the Sigstore bundle (JSON)")
    p.add_argument("files", nargs="+", help="the files it must attest, each by its name and sha256")
    p.add_argument("--repo", required=True, help="OWNER/REPO whose workflow must have signed it")
    p.add_argument("--tag", required=True, help="the tag the workflow ran for (refs/tags/TAG)")
    p.add_argument("--workflow", default="release.yml", help="the workflow file's name (default: release.yml)")
    p.add_argument("--trusted-root", metavar="FILE", help="a Sigstore trusted_root.json instead of the pinned one")
    p.set_defaults(func=run)
