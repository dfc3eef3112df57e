"""``bundlegraph verify-release``: the check a consumer or a downstream mirror runs on a whole
release, from a ``dist/`` directory or, by repository and tag, from GitHub through the same API
code ``upload-release`` uses (:class:`bundlegraph.release.github_release.GitHub`). It stands alone: it
reads no spec file, only the release's own files, each validated through its typed schema
(:mod:`bundlegraph.schemas.manifest`): the SHA index (the file the release workflow attests; it
holds the manifest's sha256) says which legs the release promises, which smokes are waived and
why, and the bundles' info file name.

Checks (each passed, failed with every mismatch named, or not run with why):

1. ``index``: the SHA index validates (schema_version 1, component ``llama.cpp``, 64-hex
   sha256s, 40-hex commits: what the installer reads too), lists assets, and its release_tag is
   the release's tag when one is given.
2. ``promised``: every leg the index promises has its bundle in the index and the manifest, as
   that leg (its info file says so), with its paired runtime assets hashed: a leg removed from
   a consistently edited release is named.
3. ``assets``: every asset the index names is in the release and its bytes have the index's
   sha256 (a paired upstream asset, kind ``runtime``, is upstream's to publish: checked when it
   is there); every file of the release is named by the index (or is the index, the
   provenance, or the asset list); the manifest and the source archive of the index's commit are
   listed.
4. ``agreement``: the manifest, the index and each bundle's info JSON agree on the tag, the
   source, the install kind, the SMs, os, arch, toolkit version and rank.
5. ``provenance``: ``llama-prebuilt-provenance.json`` field by field against the release
   (:mod:`bundlegraph.release.provenance_check`): subjects, tag, legs, source commit and archive digest,
   pull requests, runtime files, paired assets, build parameters the info files state.
6. ``smoke``: every bundle of the manifest passed its smoke, or its entry says ``waived: <why>``
   with the reason the index's promise records.
7. ``upstream``: each paired upstream asset's sha256 is what upstream's releases API reports.
8. ``authenticity`` (by default): the release's Sigstore bundle (:data:`ATTESTATION_NAME`) is
   signed by ``--repo``'s ``release.yml`` at the tag (certificate identity and GitHub's issuer,
   against the pinned Sigstore trust root, offline: :mod:`bundlegraph.release.authenticity`), and the
   subjects it attests are exactly the release's files with their sha256. Without ``--repo``
   (whose workflow must have signed it) it is not run and said so, which is never a pass;
   ``authenticate=False`` (``--no-authenticate``) leaves it out, said as "not authenticated".
9. ``attestations`` (``--attestations``): ``gh attestation verify`` for each asset, the index
   and the provenance, signed by the release workflow at the tag. Without ``gh`` on PATH it is
   not run, and said so.

Bad input (a file that is not JSON, a missing or wrong-typed key, a truncated bundle) is a
failed check naming the file and key, never a traceback.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.errors import BundleGraphError
from ..core.fsutil import sha256_file
from ..schemas.asset_names import ATTESTATION_NAME, INDEX_NAME, MANIFEST_NAME, source_archive_name
from ..schemas.provenance import PROVENANCE_NAME
from .reading import LOCAL_FILES, Check, Source

if TYPE_CHECKING:  # pydantic is imported where a release is read
    from ..schemas.manifest import BundleInfo, Manifest, ShaIndex

SIDE_FILES = (INDEX_NAME, PROVENANCE_NAME, ATTESTATION_NAME, *LOCAL_FILES)
"""Files of a release the index does not name (it cannot name itself or what names it)."""

CHECKS = (
    "index",
    "promised",
    "assets",
    "agreement",
    "provenance",
    "smoke",
    "upstream",
    "authenticity",
    "attestations",
)
"""The checks, in the order they are reported."""

DEFAULT_INFO = "BUNDLE_INFO.json"
"""The bundles' info file of an index that does not name it (written before ``info_file`` was)."""


def verify(
    src: Source,
    *,
    tag: str | None = None,
    repo: str | None = None,
    attestations: bool = False,
    gh: Any = None,
    authenticate: bool = True,
    trusted_root: Path | None = None,
) -> list[Check]:
    """Run the checks of the module docstring on ``src``; everything judged comes from the
    release's own files (no spec file is read), and who built it from ``repo``'s workflow
    identity (``trusted_root``: another Sigstore trust root than the pinned one). ``gh``: a
    :class:`~bundlegraph.release.github_release.GitHub` client for the upstream digests (None: that
    check is not run). Raises nothing for what it finds (it is in the checks);
    :class:`BundleGraphError` only when the release cannot be read (a download that fails)."""
    from ..schemas.manifest import Manifest, ShaIndex

    checks = [Check(n) for n in CHECKS]
    idx_c, prom_c, assets_c, agree_c, prov_c, smoke_c, up_c, auth_c, att_c = checks
    ip = src.path(INDEX_NAME)
    if ip is None:
        idx_c.fail(f"{INDEX_NAME}: not in the release (is {src.where} a release? `doit manifest` writes one)")
        return _rest_not_run(checks, f"no {INDEX_NAME}")
    index_bytes = ip.read_bytes()
    index = parse_record(INDEX_NAME, index_bytes, ShaIndex, idx_c)
    if index is not None:
        if not index.artifacts:
            idx_c.fail(f"{INDEX_NAME}: artifacts: empty (a release lists its assets)")
        if tag and index.release_tag != tag:
            idx_c.fail(f"{INDEX_NAME}: release_tag: {index.release_tag!r}, the release is {tag!r}")
    if index is None or idx_c.status != "passed":
        return _rest_not_run(checks, f"{INDEX_NAME} is not a valid SHA index")
    _assets(src, index, assets_c)
    if not index.of_kind("bundle"):  # issue 41: an empty release installs nothing
        assets_c.fail(f"{INDEX_NAME}: lists no bundle: a release without bundles installs nothing")
    mp = src.path(MANIFEST_NAME)
    manifest = parse_record(MANIFEST_NAME, mp.read_bytes(), Manifest, agree_c) if mp is not None else None
    if mp is None:
        agree_c.fail(f"{MANIFEST_NAME}: not in the release")
    infos = _agreement(src, index, manifest, agree_c) if manifest is not None else None
    _promised(index, manifest, infos or {}, prom_c)
    _provenance(src, index, index_bytes, infos, prov_c)
    _smoke(index, manifest, smoke_c)
    _upstream(index, gh, up_c)
    if not authenticate:
        auth_c.status, auth_c.why = "not run", "not authenticated (--no-authenticate)"
    else:
        from .authenticity import check_release

        check_release(src, index, repo, tag or index.release_tag, trusted_root, auth_c)
    if not attestations:
        att_c.status, att_c.why = "not run", "not asked for (--attestations)"
    else:
        _attestations(src, index, repo, att_c)
    return checks


def _rest_not_run(checks: list[Check], why: str) -> list[Check]:
    for c in checks[1:]:
        c.status, c.why = "not run", why
    return checks


def parse_record(name: str, raw: bytes, model: Any, c: Check, *, where: str = "") -> Any:
    """``raw`` validated as ``model`` (a pydantic model of :mod:`bundlegraph.schemas.manifest`),
    or None with one problem per error in ``c``: ``<where><name>: <key.path>: <message>`` (``not
    JSON`` for bytes that do not parse)."""
    from pydantic import ValidationError

    head = f"{where}{name}"
    try:
        return model.model_validate_json(raw)
    except ValidationError as e:
        for err in e.errors(include_url=False):
            if err["type"] == "json_invalid":
                c.fail(f"{head}: not JSON ({err['msg']})")
                continue
            key = ".".join(str(p) for p in err["loc"]) or "(the document)"
            c.fail(f"{head}: {key}: {err['msg']}" + (f", got {err['input']!r}" if _short(err["input"]) else ""))
    return None


def _short(v: Any) -> bool:
    return isinstance(v, (str, int, float, bool)) and len(str(v)) <= 80


def _assets(src: Source, index: ShaIndex, c: Check) -> None:
    """Every asset of the index is there with its sha256, nothing else is, and the assets every
    release has are listed: the manifest and the source archive of the index's commit."""
    arts = index.artifacts
    for n in sorted(arts):
        p = src.path(n)
        if p is None and arts[n].kind == "runtime":
            continue  # a paired upstream asset: published by upstream, hashed here, never uploaded again
        if p is None:
            c.fail(f"{n}: in {INDEX_NAME} but not in the release")
            continue
        got = sha256_file(p)
        if got != arts[n].sha256:
            c.fail(f"{n}: sha256 {got}, {INDEX_NAME} says {arts[n].sha256}")
    for n in src.names():
        if n not in arts and n not in SIDE_FILES:
            c.fail(f"{n}: in the release but not in {INDEX_NAME}")
    archive = source_archive_name(index.source_commit)
    for name, kind in ((MANIFEST_NAME, "manifest"), (archive, "upstream-source")):
        e = arts.get(name)
        if e is None or e.kind != kind:
            c.fail(f"{name}: {INDEX_NAME} lists no {kind} of that name (every release has one)")


def _agreement(src: Source, index: ShaIndex, manifest: Manifest, c: Check) -> dict[str, BundleInfo] | None:
    """The manifest, the index and each bundle's info JSON agree; returns the info of every
    bundle (asset name -> :class:`~bundlegraph.schemas.manifest.BundleInfo`), None when one could
    not be read (``c`` says which and why)."""
    from ..pipeline.bundle.archive import read_member
    from ..schemas.manifest import BundleInfo

    info_name = index.info_file or DEFAULT_INFO
    for key in ("release_tag", "source_commit", "upstream_tag", "source_repo", "source_ref_kind", "ggml_tree"):
        if getattr(manifest, key) != getattr(index, key):
            c.fail(f"{MANIFEST_NAME}: {key}: {getattr(manifest, key)!r}, {INDEX_NAME} says {getattr(index, key)!r}")
    if manifest.merged_prs != index.merged_prs:
        c.fail(f"{MANIFEST_NAME}: merged_prs: differ from {INDEX_NAME}'s")
    in_manifest = {a.asset_name for a in manifest.artifacts}
    for n in sorted(index.of_kind("bundle")):
        if n not in in_manifest:
            c.fail(f"{n}: a bundle in {INDEX_NAME} but not in {MANIFEST_NAME}")
    infos: dict[str, BundleInfo] = {}
    complete = True
    for a in manifest.artifacts:
        name = a.asset_name
        e = index.artifacts.get(name)
        if e is None or e.kind != "bundle":
            c.fail(f"{name}: in {MANIFEST_NAME} but not a bundle in {INDEX_NAME}")
            continue
        p = src.path(name)
        if p is None:
            complete = False
            continue  # the assets check names it
        try:
            raw = read_member(p, info_name)
        except BundleGraphError as err:
            c.fail(f"{name}: {err}".replace(f"{p}: ", "", 1))
            raw = None
        else:
            if raw is None:
                c.fail(f"{name}: no {info_name} inside")
        info = parse_record(info_name, raw, BundleInfo, c, where=f"{name}: ") if raw is not None else None
        if info is None:
            complete = False
            continue
        infos[name] = info
        pairs = (
            ("asset_name", info.asset_name, name, "its file name"),
            ("release_tag", info.release_tag, index.release_tag, INDEX_NAME),
            ("source_commit", info.source_commit, index.source_commit, INDEX_NAME),
            ("source_repo", info.source_repo, index.source_repo, INDEX_NAME),
            ("install_kind", info.install_kind, a.install_kind, MANIFEST_NAME),
            ("supported_sms", info.supported_sms, a.supported_sms, MANIFEST_NAME),
            ("os", info.os, a.os, MANIFEST_NAME),
            ("arch", info.arch, a.arch, MANIFEST_NAME),
            ("toolkit_version", info.toolkit_version, a.toolkit_version, MANIFEST_NAME),
            ("rank", info.bundle_rank, a.rank, MANIFEST_NAME),
        )
        for field_, inside, outside, where in pairs:
            if inside != outside:
                c.fail(f"{name}: {field_} is {inside!r} in its {info_name}, {outside!r} in {where}")
    return infos if complete else None


def _promised(index: ShaIndex, manifest: Manifest | None, infos: dict[str, BundleInfo], c: Check) -> None:
    """Every leg the index promises has its bundle in the index, the manifest and (by its info
    JSON) as that leg, and its paired assets hashed in the index."""
    if index.promised is None:
        c.status, c.why = "not run", f"{INDEX_NAME} records no promised legs (written before they were recorded)"
        return
    if not index.promised:
        c.fail(f"{INDEX_NAME}: promised: empty (a release promises at least one leg)")
    in_manifest = {a.asset_name for a in manifest.artifacts} if manifest is not None else None
    for p in index.promised:
        e = index.artifacts.get(p.asset_name)
        if e is None or e.kind != "bundle":
            c.fail(f"{p.leg}: promised, but its bundle {p.asset_name} is not in {INDEX_NAME}")
            continue
        if in_manifest is not None and p.asset_name not in in_manifest:
            c.fail(f"{p.leg}: promised, but its bundle {p.asset_name} is not in {MANIFEST_NAME}")
        info = infos.get(p.asset_name)
        if info is not None and info.leg != p.leg:
            c.fail(f"{p.leg}: promised as {p.asset_name}, whose info file says leg {info.leg!r}")
        for pa in p.paired_assets:
            pe = index.artifacts.get(pa)
            if pe is None or pe.kind != "runtime":
                c.fail(f"{p.leg}: its paired runtime asset {pa} is not hashed in {INDEX_NAME}")


def _provenance(
    src: Source, index: ShaIndex, index_bytes: bytes, infos: dict[str, BundleInfo] | None, c: Check
) -> None:
    from .provenance_check import statement_problems

    pp = src.path(PROVENANCE_NAME)
    if pp is None:
        c.fail(f"{PROVENANCE_NAME}: not in the release")
        return
    for p in statement_problems(pp.read_bytes(), index, index_bytes, infos):
        c.fail(p)


def _smoke(index: ShaIndex, manifest: Manifest | None, c: Check) -> None:
    """Each bundle of the manifest passed its smoke, or says ``waived: <why>`` with the very
    reason the index's promise of it records."""
    from ..schemas.manifest import WAIVED

    if manifest is None:
        c.status, c.why = "not run", f"no valid {MANIFEST_NAME}"
        return
    waived = {p.asset_name: p.smoke_waived for p in index.promised or [] if p.smoke_waived}
    for a in manifest.artifacts:
        smoke = a.smoke or ""
        if smoke.startswith("passed"):
            continue
        if smoke.startswith(WAIVED):
            why = smoke.removeprefix(WAIVED)
            if waived.get(a.asset_name) == why:
                continue
            c.fail(
                f"{a.asset_name}: smoke {smoke!r} in {MANIFEST_NAME}, but {INDEX_NAME}'s promised "
                + (f"waives it with {waived[a.asset_name]!r}" if a.asset_name in waived else "does not waive it")
            )
            continue
        c.fail(f"{a.asset_name}: smoke {a.smoke!r}: neither passed nor waived in {MANIFEST_NAME}")


def _upstream(index: ShaIndex, gh: Any, c: Check) -> None:
    """Each paired upstream asset (kind ``runtime``): the index's sha256 equals the ``digest``
    GitHub's releases API reports for that asset of the upstream release. With none in the
    index, ``not applicable``: nothing was checked, so never ``passed`` (issue 40, item 5)."""
    paired = index.of_kind("runtime")
    if not paired:
        c.status, c.why = "not applicable", "the release pairs no upstream asset"
        return
    if gh is None:
        c.status, c.why = "not run", "no GitHub API at hand (verify a published release with --repo/--tag)"
        return
    repo = index.source_repo
    for n, e in sorted(paired.items()):
        tag = e.upstream_tag
        try:
            rel = gh.call("GET", f"{gh.api}/repos/{repo}/releases/tags/{tag}")
        except BundleGraphError as err:
            c.fail(f"{n}: upstream release {repo}@{tag} not readable: {err}")
            continue
        assets = rel.get("assets") if isinstance(rel, dict) else None
        a = next((x for x in assets or [] if isinstance(x, dict) and x.get("name") == n), None)
        digest = str((a or {}).get("digest") or "")
        if a is None:
            c.fail(f"{n}: not an asset of upstream release {repo}@{tag}")
        elif not digest.startswith("sha256:"):
            c.fail(f"{n}: upstream release {repo}@{tag} reports no sha256 digest for it")
        elif digest.removeprefix("sha256:") != e.sha256:
            c.fail(
                f"{n}: {INDEX_NAME} says sha256 {e.sha256}, upstream's API reports "
                f"{digest.removeprefix('sha256:')} ({repo}@{tag})"
            )


def _attestations(src: Source, index: ShaIndex, repo: str | None, c: Check) -> None:
    """``gh attestation verify`` of every asset at hand and of the index and the provenance
    (the statement's claims are worth what its signature is): ours against this repository's
    ``release.yml`` at the index's tag; a paired upstream asset against upstream's repository
    (the index's ``source_repo``)."""
    from ..core import proc

    gh = proc.which("gh")
    if gh is None:
        c.status, c.why = "not run", "gh is not on PATH (GitHub CLI: `gh attestation verify`)"
        return
    tag = index.release_tag
    if not repo:
        c.status, c.why = "not run", "needs --repo (whose release workflow signed it)"
        return
    kinds = {n: e.kind for n, e in index.artifacts.items()} | {INDEX_NAME: "index", PROVENANCE_NAME: "provenance"}
    for n in sorted(kinds):
        p = src.path(n)
        if p is None:
            if kinds[n] in ("index", "provenance"):
                c.fail(f"{n}: not in the release, so not attested")
            continue
        argv = [gh, "attestation", "verify", str(p), "--repo"]
        if kinds[n] == "runtime":  # a paired upstream asset: upstream attested it, not us
            argv.append(index.source_repo)
            whose = f"upstream's ({index.source_repo})"
        else:
            ref = f"refs/tags/{tag}"
            argv += [repo, "--signer-workflow", f"{repo}/.github/workflows/release.yml", "--source-ref", ref]
            whose = f"this release's ({repo}, release.yml at {ref})"
        r = proc.run(argv, capture=True, check=False, echo=False, what=f"gh attestation verify {n}")
        if r.returncode != 0:
            last = (r.output.strip().splitlines() or ["(no output)"])[-1]
            c.fail(f"{n}: {whose} attestation does not verify: {last}")


def checksums_text(index_bytes: bytes) -> str:
    """``<sha256>  <name>`` per subject of the provenance (every asset of the index and the
    index itself; ``sha256sum``'s format: what ``actions/attest``'s ``subject-checksums``
    reads), so GitHub signs exactly what the statement names."""
    from ..schemas.provenance import subjects

    return "".join(
        f"{s['digest']['sha256']}  {s['name']}\n" for s in subjects(INDEX_NAME, index_bytes, json.loads(index_bytes))
    )


__all__ = ["checksums_text", "verify"]
