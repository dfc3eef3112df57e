"""``bundlegraph verify-release``: the check a consumer or a downstream mirror runs on a whole
release, from a ``dist/`` directory or, by repository and tag, from GitHub through the same API
code ``upload-release`` uses (:class:`bundlegraph.github_release.GitHub`).

Checks (each passed, failed with every mismatch named, or not run with why):

1. ``index``: the SHA index parses as the installer parses it (schema_version 1, component
   ``llama.cpp``, a release_tag, 64-hex sha256 per asset; :mod:`bundlegraph.schemas.installer`),
   and its release_tag is the release's tag when one is given.
2. ``assets``: every asset the index names is in the release and its bytes have the index's
   sha256 (a paired upstream asset, kind ``runtime``, is upstream's to publish: checked when it
   is there); every file of the release is named by the index (or is the index, the
   provenance, or the asset list).
3. ``agreement``: the manifest, the index and each bundle's info JSON agree on the tag, the
   source commit, the install kind and the supported SMs.
4. ``provenance``: ``llama-prebuilt-provenance.json`` is an in-toto Statement v1 with a SLSA
   provenance v1 predicate whose subjects are exactly the index's assets and the index.
5. ``smoke``: every bundle of the manifest has a passed smoke, or its leg's spec (when the
   release's ``bundles/`` is at hand) says why it was waived.
6. ``attestations`` (``--attestations``): ``gh attestation verify`` for each asset, signed by the
   release workflow at the tag. Without ``gh`` on PATH it is not run, and said so.
"""

from __future__ import annotations

import json
import re
from dataclasses import field
from pathlib import Path
from typing import Any

from .core.errors import BundleGraphError
from .core.fsutil import sha256_file
from .core.lightclass import mutable
from .provenance import PREDICATE_TYPE, PROVENANCE_NAME, STATEMENT_TYPE
from .schemas.asset_names import INDEX_NAME, MANIFEST_NAME

SIDE_FILES = (INDEX_NAME, PROVENANCE_NAME, "release-assets.txt", "llama-prebuilt-checksums.txt")
"""Files of a release the index does not name (it cannot name itself or what names it)."""


@mutable
class Check:
    """One check's verdict: ``status`` ``passed``/``failed``/``not run``/``not applicable``
    (nothing to check); ``problems`` (failed) or ``why`` (not run, not applicable)."""

    name: str
    status: str = "passed"
    problems: list[str] = field(default_factory=list)
    why: str = ""

    def fail(self, problem: str) -> None:
        self.status = "failed"
        self.problems.append(problem)


class Source:
    """A release's files: :meth:`names` and :meth:`path` (a local path, downloaded if need be)."""

    where: str

    def names(self) -> list[str]:
        raise NotImplementedError

    def path(self, name: str) -> Path | None:
        raise NotImplementedError


class DistSource(Source):
    """A ``dist/`` directory."""

    def __init__(self, d: Path):
        self.d = d
        self.where = str(d)

    def names(self) -> list[str]:
        return sorted(p.name for p in self.d.iterdir() if p.is_file() and not p.name.endswith(".smoke.json"))

    def path(self, name: str) -> Path | None:
        p = self.d / name
        return p if p.is_file() else None


class ApiSource(Source):
    """A published GitHub release, read through the API (``GET /repos/{repo}/releases/tags/{tag}``)
    and its assets' download URLs; each asset is downloaded once into a scratch directory."""

    def __init__(self, gh: Any, tag: str, scratch: Path):
        self.gh, self.tag, self.scratch = gh, tag, scratch
        self.where = f"{gh.repo}@{tag}"
        rel = gh.call("GET", f"/releases/tags/{tag}")
        self.assets = {a["name"]: a for a in rel.get("assets", [])}

    def names(self) -> list[str]:
        return sorted(self.assets)

    def path(self, name: str) -> Path | None:
        a = self.assets.get(name)
        if a is None:
            return None
        p = self.scratch / name
        if not p.is_file():
            import httpx

            from .core.errors import DownloadError

            try:
                with self.gh.c.stream("GET", a["browser_download_url"], follow_redirects=True) as r:
                    if r.status_code != 200:
                        raise DownloadError(f"{name}: download answered HTTP {r.status_code}")
                    with open(p, "wb") as f:
                        for chunk in r.iter_bytes():
                            f.write(chunk)
            except httpx.HTTPError as e:
                raise DownloadError(f"{name}: {a['browser_download_url']}: {type(e).__name__}: {e}") from None
        return p


def verify(
    src: Source,
    *,
    tag: str | None = None,
    repo: str | None = None,
    specs: Any = None,
    attestations: bool = False,
    info_name: str | None = None,
    gh: Any = None,
) -> list[Check]:
    """Run the checks of the module docstring on ``src``. ``specs``: the release's validated
    matrix when at hand (waived smokes, the info file's name); ``info_name``: the bundles' info
    file (default: ``specs``' ``info_file``, else ``BUNDLE_INFO.json``); ``gh``: a
    :class:`~bundlegraph.github_release.GitHub` client for the upstream digests (None: that
    check is not run). Raises nothing for what it finds
    (it is in the checks); :class:`BundleGraphError` only when the release cannot be read."""
    checks = [Check(n) for n in ("index", "assets", "agreement", "provenance", "smoke", "upstream", "attestations")]
    idx_c, assets_c, agree_c, prov_c, smoke_c, up_c, att_c = checks
    names = src.names()
    ip = src.path(INDEX_NAME)
    if ip is None:
        idx_c.fail(f"{INDEX_NAME}: not in the release (is {src.where} a release? `doit manifest` writes one)")
        for c in checks[1:]:
            c.status, c.why = "not run", f"no {INDEX_NAME}"
        return checks
    index_bytes = ip.read_bytes()
    index = _index_problems(index_bytes, tag, idx_c)
    if index is None:
        for c in checks[1:]:
            c.status, c.why = "not run", f"{INDEX_NAME} does not parse"
        return checks
    arts: dict[str, Any] = index["artifacts"]
    if not any(isinstance(e, dict) and e.get("kind") == "bundle" for e in arts.values()):
        assets_c.fail(f"{INDEX_NAME}: lists no bundle: a release without bundles installs nothing")  # issue 41
    for n in sorted(arts):
        p = src.path(n)
        if p is None and arts[n].get("kind") == "runtime":
            continue  # a paired upstream asset: published by upstream, hashed here, never uploaded again
        if p is None:
            assets_c.fail(f"{n}: in {INDEX_NAME} but not in the release")
            continue
        got = sha256_file(p)
        if got != arts[n]["sha256"]:
            assets_c.fail(f"{n}: sha256 {got}, {INDEX_NAME} says {arts[n]['sha256']}")
    for n in names:
        if n not in arts and n not in SIDE_FILES:
            assets_c.fail(f"{n}: in the release but not in {INDEX_NAME}")
    info = info_name or (specs.release.info_file if specs is not None else "BUNDLE_INFO.json")
    _agreement(src, index, arts, agree_c, info)
    _provenance(src, index_bytes, prov_c)
    _smoke(src, specs, smoke_c)
    _upstream(index, arts, gh, up_c)
    if not attestations:
        att_c.status, att_c.why = "not run", "not asked for (--attestations)"
    else:
        _attestations(src, arts, repo, index.get("release_tag"), att_c, str(index.get("source_repo") or ""))
    return checks


def _index_problems(raw: bytes, tag: str | None, c: Check) -> dict[str, Any] | None:
    """The index as JSON when it parses as the installer parses it, else None (``c`` says why)."""
    try:
        data = json.loads(raw)
    except ValueError as e:
        c.fail(f"{INDEX_NAME}: not JSON ({e})")
        return None
    if not isinstance(data, dict):
        c.fail(f"{INDEX_NAME}: not a JSON object")
        return None
    if data.get("schema_version", 1) != 1:
        c.fail(f"{INDEX_NAME}: schema_version {data.get('schema_version')!r}, the installer reads 1")
    if data.get("component") != "llama.cpp":
        c.fail(f"{INDEX_NAME}: component {data.get('component')!r}, the installer wants 'llama.cpp'")
    if not isinstance(data.get("release_tag"), str) or not data.get("release_tag"):
        c.fail(f"{INDEX_NAME}: no release_tag")
    elif tag and data["release_tag"] != tag:
        c.fail(f"{INDEX_NAME}: release_tag {data['release_tag']!r}, the release is {tag!r}")
    arts = data.get("artifacts")
    if not isinstance(arts, dict) or not arts:
        c.fail(f"{INDEX_NAME}: no artifacts")
        return None
    for n, entry in arts.items():
        if not isinstance(entry, dict) or not re.fullmatch(r"[0-9a-f]{64}", str(entry.get("sha256", ""))):
            got = entry.get("sha256") if isinstance(entry, dict) else entry
            c.fail(f"{INDEX_NAME}: {n}: sha256 {got!r} is not 64 hex")
    return data if c.status == "passed" else None


def _agreement(src: Source, index: dict[str, Any], arts: dict[str, Any], c: Check, info_name: str) -> None:
    from .archive import read_member

    mp = src.path(MANIFEST_NAME)
    if mp is None:
        c.fail(f"{MANIFEST_NAME}: not in the release")
        return
    manifest = json.loads(mp.read_bytes())
    for key in ("release_tag", "source_commit", "upstream_tag", "source_repo"):
        if manifest.get(key) != index.get(key):
            c.fail(f"{MANIFEST_NAME}: {key} {manifest.get(key)!r}, {INDEX_NAME} says {index.get(key)!r}")
    for a in manifest.get("artifacts", []):
        name = a["asset_name"]
        if name not in arts:
            c.fail(f"{name}: in {MANIFEST_NAME} but not in {INDEX_NAME}")
            continue
        p = src.path(name)
        raw = read_member(p, info_name) if p is not None else None  # unvalidated: compared field by field
        info = json.loads(raw) if raw is not None else None
        if info is None:
            c.fail(f"{name}: no {info_name} inside")
            continue
        pairs = (
            ("release_tag", info.get("release_tag"), index.get("release_tag")),
            ("source_commit", info.get("source_commit"), index.get("source_commit")),
            ("install_kind", info.get("install_kind"), a.get("install_kind")),
            ("supported_sms", info.get("supported_sms"), a.get("supported_sms")),
        )
        for field_, inside, outside in pairs:
            if inside != outside:
                where = INDEX_NAME if field_ in ("release_tag", "source_commit") else MANIFEST_NAME
                c.fail(f"{name}: {field_} is {inside!r} in its {info_name}, {outside!r} in {where}")


def _provenance(src: Source, index_bytes: bytes, c: Check) -> None:
    from .github_release import provenance_problems

    pp = src.path(PROVENANCE_NAME)
    if pp is None:
        c.fail(f"{PROVENANCE_NAME}: not in the release")
        return
    try:
        st = json.loads(pp.read_bytes())
    except ValueError as e:
        c.fail(f"{PROVENANCE_NAME}: not JSON ({e})")
        return
    if st.get("_type") != STATEMENT_TYPE or st.get("predicateType") != PREDICATE_TYPE:
        c.fail(f"{PROVENANCE_NAME}: not an in-toto Statement v1 with a SLSA provenance v1 predicate")
    for p in provenance_problems(pp.read_bytes(), index_bytes):
        c.fail(p)


def _smoke(src: Source, specs: Any, c: Check) -> None:
    mp = src.path(MANIFEST_NAME)
    if mp is None:
        c.status, c.why = "not run", f"no {MANIFEST_NAME}"
        return
    waived: set[str] = set()
    if specs is not None:
        rel = specs.release
        waived = {s.bundle_name(rel.tag, rel.bundle_prefix) for s in specs.legs.values() if s.smoke is not None}
    for a in json.loads(mp.read_bytes()).get("artifacts", []):
        smoke = a.get("smoke")
        if (isinstance(smoke, str) and smoke.startswith("passed")) or a["asset_name"] in waived:
            continue
        c.fail(
            f"{a['asset_name']}: smoke {smoke!r}"
            + ("" if specs is not None else " (no bundles/ at hand to tell a waived smoke)")
        )


def _upstream(index: dict[str, Any], arts: dict[str, Any], gh: Any, c: Check) -> None:
    """Each paired upstream asset (kind ``runtime``): the index's sha256 equals the ``digest``
    GitHub's releases API reports for that asset of the upstream release. With none in the
    index, ``not applicable``: nothing was checked, so never ``passed`` (issue 40, item 5)."""
    paired = {n: e for n, e in arts.items() if e.get("kind") == "runtime"}
    if not paired:
        c.status, c.why = "not applicable", "the release pairs no upstream asset"
        return
    if gh is None:
        c.status, c.why = "not run", "no GitHub API at hand (verify a published release with --repo/--tag)"
        return
    repo = index.get("source_repo")
    for n, e in sorted(paired.items()):
        tag = e.get("upstream_tag")
        try:
            rel = gh.call("GET", f"{gh.api}/repos/{repo}/releases/tags/{tag}")
        except BundleGraphError as err:
            c.fail(f"{n}: upstream release {repo}@{tag} not readable: {err}")
            continue
        a = next((x for x in rel.get("assets", []) if x.get("name") == n), None)
        digest = str((a or {}).get("digest") or "")
        if a is None:
            c.fail(f"{n}: not an asset of upstream release {repo}@{tag}")
        elif not digest.startswith("sha256:"):
            c.fail(f"{n}: upstream release {repo}@{tag} reports no sha256 digest for it")
        elif digest.removeprefix("sha256:") != e["sha256"]:
            c.fail(
                f"{n}: {INDEX_NAME} says sha256 {e['sha256']}, upstream's API reports "
                f"{digest.removeprefix('sha256:')} ({repo}@{tag})"
            )


def _attestations(
    src: Source, arts: dict[str, Any], repo: str | None, tag: str | None, c: Check, index_repo: str = ""
) -> None:
    """``gh attestation verify`` of every asset at hand: ours against this repository's
    ``release.yml`` at the tag; a paired upstream asset against upstream's repository (the index's
    ``source_repo``)."""
    from .core import proc

    gh = proc.which("gh")
    if gh is None:
        c.status, c.why = "not run", "gh is not on PATH (GitHub CLI: `gh attestation verify`)"
        return
    if not repo or not tag:
        c.status, c.why = "not run", "needs --repo and the release's tag"
        return
    for n in sorted(arts):
        p = src.path(n)
        if p is None:
            continue
        argv = [gh, "attestation", "verify", str(p), "--repo"]
        if arts[n].get("kind") == "runtime":  # a paired upstream asset: upstream attested it, not us
            argv.append(index_repo)
            whose = f"upstream's ({index_repo})"
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
    from .provenance import subjects

    return "".join(
        f"{s['digest']['sha256']}  {s['name']}\n" for s in subjects(INDEX_NAME, index_bytes, json.loads(index_bytes))
    )


__all__ = ["ApiSource", "Check", "DistSource", "checksums_text", "verify"]
