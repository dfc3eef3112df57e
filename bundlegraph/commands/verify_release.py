"""``bundlegraph verify-release [DIST] [--repo R --tag T] [--no-authenticate] [--trusted-root FILE]
[--attestations] [--rebuild LEG] [--json]``: check a
whole release (:mod:`bundlegraph.release.verify_release`): from a ``dist/`` directory (default: the work
directory's), or with ``--repo`` and ``--tag`` the published GitHub release, read through the
releases API (``BUNDLEGRAPH_GITHUB_API``, token ``GITHUB_TOKEN``). It reads no spec file (it
runs in an empty folder); only ``--rebuild`` needs the release's specs (``--bundles``). Exit 0 when every check that
ran passed and none was left out; 1 with every mismatch named (check, asset, field, both
values); 2 for usage; 4 when ``--rebuild`` cannot fetch the release's source commit (a download
that failed: :func:`bundlegraph.release.source_proof.fetch_commit`). A check that could not run (``--attestations`` without ``gh``,
``authenticity`` without ``--repo``) is said so and makes the exit 1: a check not run is never reported as passed.
``authenticity`` runs by default (:mod:`bundlegraph.release.authenticity`: the release's Sigstore bundle, signed by ``--repo``'s
``release.yml`` at the tag, attests every file); only ``--no-authenticate`` leaves it out, and then the last line
says "not authenticated". ``--rebuild LEG`` adds the
``rebuild`` check (:mod:`bundlegraph.release.rebuild`): the leg built again from the release's own source
archive gives the published bytes.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from ..core.errors import BundleGraphError


def run(args: argparse.Namespace) -> int:
    from ..core import paths
    from ..release.github_release import GitHub
    from ..release.reading import ApiSource, DistSource
    from ..release.verify_release import verify

    if args.tag and not args.repo and not args.release:
        raise BundleGraphError("verify-release: a published release needs both --repo and --tag")
    # the releases API: the published release (--repo/--tag) and the upstream digests of paired assets
    gh = GitHub.connect(args.repo or "-/-", timeout=120.0)
    with tempfile.TemporaryDirectory(prefix="bundlegraph-verify-release-") as scratch, gh.c:
        src: Any
        if args.repo and args.tag and not args.release:
            src = ApiSource(gh, args.tag, Path(scratch))
        else:
            d = Path(args.release) if args.release else paths.dist_dir()
            if not d.is_dir():
                raise BundleGraphError(
                    f"verify-release: {d} is not a directory: name a dist/ holding a release (`doit manifest` writes "
                    f"the work directory's), or a published one with --repo OWNER/REPO --tag TAG"
                )
            src = DistSource(d)
        checks = verify(
            src,
            tag=args.tag,
            repo=args.repo,
            attestations=args.attestations,
            gh=gh,
            authenticate=not args.no_authenticate,
            trusted_root=Path(args.trusted_root) if args.trusted_root else None,
        )
        if args.rebuild:
            checks.append(_rebuild_check(src, args))
    waived = {"attestations"} if not args.attestations else set()
    if args.no_authenticate:
        waived.add("authenticity")
    ok = all(c.status in ("passed", "not applicable") or c.name in waived for c in checks)
    if args.json:
        print(
            json.dumps(
                {
                    "release": src.where,
                    "ok": ok,
                    "checks": [
                        {"check": c.name, "status": c.status, "problems": c.problems, "why": c.why} for c in checks
                    ],
                },
                indent=2,
            )
        )
    else:
        print(f"release {src.where}")
        for c in checks:
            print(f"  {c.name}: {c.status}" + (f" ({c.why})" if c.why else ""))
            for p in c.problems:
                print(f"    {p}")
        print("verify-release: " + _verdict(ok, checks, args), file=sys.stdout if ok else sys.stderr)
    return 0 if ok else 1


def _verdict(ok: bool, checks: list[Any], args: argparse.Namespace) -> str:
    """The last line: every check passed; passed but not authenticated (``--no-authenticate``);
    or refused, naming the checks that failed and those that were not run."""
    if not ok:
        failed = [c.name for c in checks if c.status == "failed"]
        unrun = [
            c.name for c in checks if c.status == "not run" and not (c.name == "attestations" and not args.attestations)
        ]
        unrun = [n for n in unrun if not (n == "authenticity" and args.no_authenticate)]
        parts = [f"failed: {', '.join(failed)}" if failed else "", f"not checked: {', '.join(unrun)}" if unrun else ""]
        return "refused (" + "; ".join(p for p in parts if p) + ")"
    if args.no_authenticate:
        return "every check that ran passed, but not authenticated (--no-authenticate): nothing proves who built it"
    return "every check passed"


def _rebuild_check(src: Any, args: argparse.Namespace) -> Any:
    """The ``rebuild`` check: :func:`bundlegraph.release.rebuild.rebuild` of ``--rebuild LEG``."""
    from ..release.reading import Check, DistSource
    from ..release.rebuild import rebuild

    c = Check("rebuild")
    if not isinstance(src, DistSource):
        raise BundleGraphError(
            "verify-release --rebuild: name a dist directory (a published release: download it first)"
        )
    r = rebuild(src.d, Path(args.bundles), args.rebuild, Path(args.rebuild_dir) if args.rebuild_dir else None)
    if r.identical:
        print(f"verify-release --rebuild {r.leg}: {r.bundle} rebuilt byte-identical (sha256 {r.rebuilt})")
    else:
        c.fail(
            f"{r.bundle}: rebuilt sha256 {r.rebuilt}, the release has {r.published}; differing members: "
            + (", ".join(r.differing[:20]) or "(none by name: the archives differ in their framing)")
            + f"; the rebuild is kept in {r.directory}"
        )
    return c


def run_checksums(args: argparse.Namespace) -> int:
    from ..core import paths
    from ..core.fsutil import atomic_write_bytes
    from ..release.verify_release import checksums_text
    from ..schemas.asset_names import INDEX_NAME

    d = Path(args.release) if args.release else paths.dist_dir()
    idx = d / INDEX_NAME
    if not d.is_dir():
        raise BundleGraphError(f"checksums: {d} is not a directory (name a dist/ holding a release)")
    if not idx.is_file():
        raise BundleGraphError(
            f"checksums: {idx} is missing: {d} holds no release (`doit manifest` writes the work directory's dist/)"
        )
    text = checksums_text(idx.read_bytes())
    if args.out:
        atomic_write_bytes(Path(args.out), text.encode())
        print(f"wrote {args.out} ({text.count(chr(10))} subjects)")
    else:
        print(text, end="")
    return 0


def register(sub: Any) -> None:
    c = sub.add_parser("checksums", help="the SHA index as sha256sum lines (actions/attest's subject-checksums)")
    c.add_argument("release", nargs="?", help="a dist directory (default: the work directory's dist/)")
    c.add_argument("--out", help="write to this file (default: print)")
    c.set_defaults(func=run_checksums)
    p = sub.add_parser("verify-release", help="check a whole release: hashes, agreement, provenance, smokes")
    p.add_argument("release", nargs="?", help="a dist directory (default: the work directory's dist/)")
    p.add_argument("--repo", help="OWNER/REPO of a published release (with --tag: read through the API)")
    p.add_argument("--tag", help="the release's tag")
    p.add_argument(
        "--no-authenticate",
        action="store_true",
        help="leave out the authenticity check (the release's Sigstore bundle); the output says 'not authenticated'",
    )
    p.add_argument(
        "--trusted-root",
        metavar="FILE",
        help="a Sigstore trusted_root.json to verify against instead of the pinned one (after a key rotation)",
    )
    p.add_argument("--attestations", action="store_true", help="also run gh attestation verify for each asset")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument(
        "--rebuild",
        metavar="LEG",
        help="also rebuild LEG from the release's own source archive (with --bundles: the release's spec files) "
        "and compare the bundle's bytes",
    )
    p.add_argument("--rebuild-dir", metavar="DIR", help="where to rebuild (default: a temporary directory)")
    p.set_defaults(func=run)
