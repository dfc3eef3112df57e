"""Upload a release that passed the coverage gate to GitHub, so installers never see half of it.

Input: ``dist/`` after ``doit manifest publish``: ``release-assets.txt`` (the gate's list of files
to upload) and the SHA index (``llama-prebuilt-sha256.json``, every asset's sha256).

Order of calls (GitHub's REST API, ``/repos/{repo}/releases...``; the subset used is what
``tests/githubkit.py`` serves on 127.0.0.1):

1. Check locally, before any call: every listed file exists; its sha256 equals the index's (the
   index itself is the root of trust and is not in it); the index's ``release_tag`` is the tag
   being released and, on CI, ``GITHUB_REF`` is ``refs/tags/<that tag>`` (installers void an
   index whose ``release_tag`` is not the GitHub release's tag).
2. ``GET /releases/tags/{tag}``: a *published* release of that tag is never changed. When it
   already holds exactly these assets with these digests the upload is done (a rerun); anything
   else is refused.
3. Else find our draft (``GET /releases``, ``draft`` and ``tag_name``) or create one
   (``POST /releases`` with ``draft: true``). A draft is invisible to installers.
4. For each asset, in the order of ``release-assets.txt`` with the SHA index last: an asset of
   that name with the same ``digest`` (``sha256:<hex>``, computed by GitHub) is kept; one not
   fully uploaded (``state`` other than ``uploaded``) is deleted and uploaded again; one with
   other bytes is **refused** (never overwritten: ``gh release upload --clobber`` did that);
   missing ones are uploaded (``POST {upload_url}?name=...``, ``application/octet-stream``).
5. ``GET /releases/{id}/assets``: the listing must equal the local set, name for name and
   sha256 for sha256 (no missing, no extra asset).
6. ``PATCH /releases/{id}`` with ``draft: false``: the release appears, whole.

On a tag, the release workflow splits this in two around the attestation (issue 40, item 1:
draft -> upload -> attest -> compare -> publish): ``upload-release --draft-only`` stops after
step 5 (:func:`upload_release` with ``publish=False``); a job holding only ``id-token`` and
``attestations`` write attests every uploaded asset; then :func:`publish_release` compares the
draft with what was attested and with the release artifact and does step 6. A failed
attestation leaves a draft, never a public release.

The API base is ``BUNDLEGRAPH_GITHUB_API`` (default ``https://api.github.com``); the token is
``GITHUB_TOKEN`` (sent as a bearer token, never printed). URLs pass the download module's https
rule (loopback http for tests).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.download import Settings, check_url
from ..core.errors import BundleGraphError
from ..core.fsutil import sha256_file
from ..core.lightclass import mutable
from ..core.report import say
from ..pipeline.publish import ASSET_LIST
from ..schemas.asset_names import ATTESTATION_NAME
from ..schemas.manifest import INDEX_NAME, ShaIndex
from ..schemas.provenance import PROVENANCE_NAME
from .provenance_check import provenance_problems

if TYPE_CHECKING:
    import httpx

DEFAULT_API = "https://api.github.com"


class UploadRefused(BundleGraphError):
    """The release cannot be uploaded as it is; ``problems`` holds one line each."""

    def __init__(self, tag: str, problems: list[str]):
        self.problems = problems
        super().__init__(
            "\n".join([f"upload {tag}: refused, {len(problems)} problem(s):", *("  - " + p for p in problems)])
        )


@mutable
class UploadResult:
    """What :func:`upload_release` did: the release ``id`` and ``url``; ``uploaded``/``kept``
    asset names; ``already_published`` for a rerun on a complete published release."""

    id: int
    url: str
    uploaded: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    already_published: bool = False
    draft: bool = False
    """left a draft (``publish=False``): nothing is visible yet"""


def local_assets(dist: Path, tag: str, git_ref: str = "") -> dict[str, str]:
    """``{name: sha256}`` of the files to upload, in upload order (the SHA index last), after
    the local checks of step 1. Raises :class:`UploadRefused` listing every problem."""
    problems: list[str] = []
    listing = dist / ASSET_LIST
    if not listing.is_file():
        raise UploadRefused(
            tag, [f"{listing} is missing: run `doit manifest publish` first (the coverage gate writes it)"]
        )
    names = [n.strip() for n in listing.read_text(encoding="utf-8").splitlines() if n.strip()]
    if INDEX_NAME not in names:
        problems.append(f"{ASSET_LIST}: does not list the SHA index {INDEX_NAME}")
    try:
        index = ShaIndex.model_validate_json((dist / INDEX_NAME).read_bytes())
    except FileNotFoundError:
        raise UploadRefused(tag, [f"{dist / INDEX_NAME} is missing"]) from None
    except ValueError as e:
        raise UploadRefused(tag, [f"{INDEX_NAME} is not a valid SHA index: {str(e).splitlines()[0]}"]) from None
    if index.release_tag != tag:
        problems.append(
            f"{INDEX_NAME}: release_tag is '{index.release_tag}', the release being uploaded is "
            f"'{tag}' (installers void an index whose release_tag is not the release's tag)"
        )
    if git_ref and git_ref != f"refs/tags/{tag}":
        problems.append(f"GITHUB_REF is '{git_ref}', not refs/tags/{tag}: push the tag release.toml names")
    out: dict[str, str] = {}
    for n in [n for n in names if n != INDEX_NAME] + [INDEX_NAME]:
        p = dist / n
        if not p.is_file():
            problems.append(f"{n}: listed in {ASSET_LIST} but not in {dist}")
            continue
        sha = sha256_file(p)
        if n == PROVENANCE_NAME:  # not in the index (it names the index's digest): its subjects must be the index
            problems += provenance_problems(p.read_bytes(), (dist / INDEX_NAME).read_bytes())
        elif n != INDEX_NAME:
            entry = index.artifacts.get(n)
            if entry is None:
                problems.append(f"{n}: not in {INDEX_NAME}")
            elif entry.sha256 != sha:
                problems.append(f"{n}: sha256 {sha} differs from the index's {entry.sha256}")
        out[n] = sha
    if problems:
        raise UploadRefused(tag, problems)
    return out


class GitHub:
    """The few release endpoints used, over one ``httpx.Client``. Every non-2xx answer is a
    :class:`BundleGraphError` naming the call and GitHub's message."""

    def __init__(self, api: str, repo: str, client: httpx.Client, token: str | None):
        check_url(api)
        self.api, self.repo, self.c = api.rstrip("/"), repo, client
        self.h = {
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": "2022-11-28",
            "User-Agent": "bundlegraph",
        }
        if token:
            self.h["Authorization"] = f"Bearer {token}"

    def call(self, method: str, path_or_url: str, *, ok: tuple[int, ...] = (200,), **kw: Any) -> Any:
        url = path_or_url if "://" in path_or_url else f"{self.api}/repos/{self.repo}{path_or_url}"
        check_url(url)
        headers = {**self.h, **kw.pop("headers", {})}
        r = self.request(method, url, headers=headers, **kw)
        if r.status_code not in ok:
            try:
                msg = r.json().get("message", "")
            except ValueError:
                msg = r.text[:200]
            raise BundleGraphError(f"GitHub {method} {url.split('?')[0]}: HTTP {r.status_code} {msg}".rstrip())
        return r.json() if r.content else None

    @classmethod
    def connect(cls, repo: str, timeout: float = 60.0) -> GitHub:
        """A client of ``repo`` from the settings: the API base ``BUNDLEGRAPH_GITHUB_API`` (else
        :data:`DEFAULT_API`), the token ``GITHUB_TOKEN``, a fresh ``httpx.Client`` that reads no
        proxy environment. Close it with ``with gh.c:``."""
        import os

        import httpx

        from ..core import settings

        client = httpx.Client(timeout=timeout, trust_env=False)
        return cls(settings.get("GITHUB_API") or DEFAULT_API, repo, client, os.environ.get("GITHUB_TOKEN") or None)

    def request(self, method: str, url: str, **kw: Any) -> Any:
        """``httpx`` request; a connection or protocol failure is a :class:`DownloadError` naming
        the URL and the API base (exit 4), never a traceback."""
        import httpx

        from ..core.errors import DownloadError

        try:
            return self.c.request(method, url, **kw)
        except httpx.HTTPError as e:
            raise DownloadError(
                f"GitHub {method} {url.split('?')[0]}: {type(e).__name__}: {e or 'no answer'} (the API base is "
                f"{self.api}: set BUNDLEGRAPH_GITHUB_API, or check the network)"
            ) from None

    PER_PAGE = 100
    """GitHub's largest page (``per_page``) of a list endpoint."""

    def paged(self, path: str, key: str | None = None) -> list[dict[str, Any]]:
        """Every item of a list endpoint, page by page (``per_page=100&page=N``) until a page
        holds fewer than :data:`PER_PAGE`. ``key``: the endpoint answers an object holding the
        page's items under that key (``jobs`` of ``.../runs/{id}/jobs``), else a list. Raises
        :class:`BundleGraphError` when a call fails or a page is not of that shape."""
        out: list[dict[str, Any]] = []
        page = 1
        while True:
            got = self.call("GET", path, params={"per_page": self.PER_PAGE, "page": page})
            items = got.get(key) if key is not None and isinstance(got, dict) else got
            if not isinstance(items, list):
                raise BundleGraphError(
                    f"GitHub GET {self.api}/repos/{self.repo}{path} page {page}: expected a list"
                    + (f" under {key!r}" if key else "")
                    + f", got {type(items).__name__}"
                )
            out += items
            if len(items) < self.PER_PAGE:
                return out
            page += 1


def _digest(asset: dict[str, Any]) -> str | None:
    d = asset.get("digest") or ""
    return d.removeprefix("sha256:") if d.startswith("sha256:") else None


def _if_published(
    gh: GitHub, repo: str, tag: str, want: dict[str, str], step: str, against: str, *, ignore: str = ""
) -> UploadResult | None:
    """None while release ``tag`` of ``repo`` is not published (absent, or a draft); the result
    of a rerun when it is published with exactly ``want`` (``{name: "sha256:<hex>"}``), said on
    the log as ``step``; raises :class:`UploadRefused` when it is published with other assets
    (``against`` names what they were compared with): a published release is never changed.
    ``ignore``: an asset name left out of the comparison (``upload-release`` leaves the Sigstore
    bundle to ``publish-release``)."""
    published = gh.call("GET", f"/releases/tags/{tag}", ok=(200, 404))
    if not (published and "id" in published and not published.get("draft")):
        return None
    have = {a["name"]: _digest(a) for a in gh.paged(f"/releases/{published['id']}/assets") if a["name"] != ignore}
    if have != want:
        raise UploadRefused(
            tag,
            [
                f"release {tag} of {repo} is already published and differs{against} "
                f"({_diff(want, have)}); a published release is never changed"
            ],
        )
    say(f"{step}: already published with these {len(want)} assets; nothing to do")
    return UploadResult(published["id"], published.get("html_url", ""), kept=list(want), already_published=True)


def upload_release(
    dist: Path,
    *,
    repo: str,
    tag: str,
    git_ref: str = "",
    api: str | None = None,
    token: str | None = None,
    publish: bool = True,
) -> UploadResult:
    """Upload ``dist``'s release assets as release ``tag`` of ``repo`` (see the module docstring
    for the order of calls); ``publish=False`` leaves the checked draft (steps 1-5). Raises
    :class:`UploadRefused` (local checks, an asset with other bytes, a published release that
    differs, a listing that disagrees) or :class:`BundleGraphError` for an API error; a refused
    upload leaves at most a draft."""
    import httpx

    want = local_assets(dist, tag, git_ref)
    with httpx.Client(timeout=Settings.from_env().timeout(), follow_redirects=True) as c:
        gh = GitHub(api or DEFAULT_API, repo, c, token)
        done = _if_published(gh, repo, tag, want, f"upload {tag}", f" from {dist}", ignore=ATTESTATION_NAME)
        if done is not None:
            return done
        drafts = [r for r in gh.paged("/releases") if r.get("draft") and r.get("tag_name") == tag]
        if len(drafts) > 1:
            raise UploadRefused(tag, [f"{len(drafts)} draft releases of {repo} have tag {tag}; delete all but one"])
        rel = (
            drafts[0]
            if drafts
            else gh.call(
                "POST",
                "/releases",
                ok=(201,),
                json={"tag_name": tag, "name": tag, "body": "", "draft": True, "prerelease": False},
            )
        )
        result = UploadResult(rel["id"], rel.get("html_url", ""))
        existing = {a["name"]: a for a in gh.paged(f"/releases/{rel['id']}/assets")}
        changed = [
            f"{n}: the draft holds other bytes (sha256 {_digest(a)}) than {dist / n} ({want[n]}); "
            f"delete that asset or the draft if the new bytes are right"
            for n, a in existing.items()
            if n in want and a.get("state") == "uploaded" and _digest(a) != want[n]
        ]
        if changed:
            raise UploadRefused(tag, changed)
        upload = rel["upload_url"].split("{", 1)[0]
        for name, sha in want.items():
            a = existing.get(name)
            if a is not None and a.get("state") == "uploaded" and _digest(a) == sha:
                result.kept.append(name)
                continue
            if a is not None:  # a partial upload from an interrupted run
                gh.call("DELETE", f"/releases/assets/{a['id']}", ok=(204,))
            _upload_asset(gh, upload, dist / name, name, sha, tag)
            result.uploaded.append(name)
        # the Sigstore bundle of an earlier attest job (a rerun): publish-release replaces it
        have = {
            a["name"]: _digest(a) for a in gh.paged(f"/releases/{rel['id']}/assets") if a["name"] != ATTESTATION_NAME
        }
        if have != want:
            raise UploadRefused(
                tag, [f"the draft's assets do not equal the release ({_diff(want, have)}); it stays a draft"]
            )
        if not publish:
            result.draft = True
            say(
                f"upload {tag}: draft {rel['id']} holds the {len(want)} assets ({len(result.uploaded)} uploaded, "
                f"{len(result.kept)} already there); not published (publish-release does that once they are attested)"
            )
            return result
        result.url = _publish(gh, rel, tag) or result.url
        say(
            f"upload {tag}: published {result.url or rel['id']} with {len(want)} assets "
            f"({len(result.uploaded)} uploaded, {len(result.kept)} already there)"
        )
        return result


def _upload_asset(gh: GitHub, upload: str, p: Path, name: str, sha: str, tag: str) -> None:
    """``POST`` file ``p`` as asset ``name`` to the release's upload URL ``upload``; GitHub's
    computed digest must be ``sha``."""
    with open(p, "rb") as f:
        got = gh.call(
            "POST",
            upload,
            ok=(201,),
            params={"name": name},
            content=f,
            headers={"Content-Type": "application/octet-stream", "Content-Length": str(p.stat().st_size)},
        )
    if _digest(got) not in (None, sha):
        raise UploadRefused(tag, [f"{name}: GitHub computed sha256 {_digest(got)} for the upload, the file has {sha}"])
    say(f"upload {tag}: {name} ({p.stat().st_size} bytes)")


def _sigstore_asset(bundle: Path, signed: Mapping[str, str], tag: str) -> str:
    """The sha256 of the Sigstore bundle ``bundle`` (``actions/attest``'s ``bundle-path``), once its
    statement's subjects are exactly the ``signed`` subjects (``{name: sha256}``); raises
    :class:`UploadRefused` otherwise. Its signature is not checked here: ``verify-release`` checks
    it against the workflow identity, wherever the release is read."""
    from .authenticity import AuthenticityError, attested_subjects, unverified_statement

    try:
        raw = bundle.read_bytes()
        attested = attested_subjects(bundle.name, unverified_statement(bundle.name, raw))
    except OSError as e:
        raise UploadRefused(tag, [f"{bundle}: cannot read the Sigstore bundle ({e.strerror or e})"]) from None
    except AuthenticityError as e:
        raise UploadRefused(tag, [str(e)]) from None
    got = {n: d.get("sha256") for n, d in attested.items()}
    if got != signed:
        raise UploadRefused(
            tag,
            [f"{bundle.name}: its subjects differ from the attested subjects ({_diff(signed, got)}); it stays a draft"],
        )
    return sha256_file(bundle)


def _publish(gh: GitHub, rel: dict[str, Any], tag: str) -> str:
    """Step 6: ``PATCH`` the draft ``rel`` public; returns its page's URL."""
    done = gh.call("PATCH", f"/releases/{rel['id']}", json={"draft": False, "tag_name": tag})
    if done.get("draft"):
        raise BundleGraphError(f"GitHub PATCH /releases/{rel['id']}: the release is still a draft")
    return str(done.get("html_url") or "")


def read_subjects(path: Path) -> dict[str, str]:
    """``{name: sha256}`` of a ``sha256sum`` file (``<64 hex>  <name>`` per line, ``*`` before a
    binary-mode name): what ``actions/attest`` signed (``subject-checksums``). Raises
    :class:`BundleGraphError` naming the file and line of anything else, or a name given twice."""
    import re

    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise BundleGraphError(f"{path}: cannot read the attested subjects ({e})") from None
    out: dict[str, str] = {}
    for i, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        m = re.fullmatch(r"([0-9a-f]{64}) [ *](\S.*)", line.rstrip("\r"))
        if m is None:
            raise BundleGraphError(f"{path}:{i}: expected '<sha256>  <name>' (sha256sum's format), got {line[:80]!r}")
        if m.group(2) in out:
            raise BundleGraphError(f"{path}:{i}: {m.group(2)} is listed twice")
        out[m.group(2)] = m.group(1)
    if not out:
        raise BundleGraphError(f"{path}: names no subject")
    return out


def publish_release(
    dist: Path,
    subjects: Path,
    *,
    repo: str,
    tag: str,
    git_ref: str = "",
    api: str | None = None,
    token: str | None = None,
    sigstore_bundle: Path | None = None,
) -> UploadResult:
    """Publish the draft ``upload-release --draft-only`` left, once it is attested: the attested
    ``subjects`` (:func:`read_subjects`) must be exactly the release's assets in ``dist`` (the
    local checks of :func:`local_assets`: every asset of the SHA index, the index, the
    provenance; nothing more, nothing less), and the draft's listing exactly those names and
    digests; then ``PATCH draft: false``. ``sigstore_bundle``: the attestation's Sigstore bundle,
    whose statement must name exactly those subjects; it is uploaded to the draft as
    :data:`~bundlegraph.schemas.asset_names.ATTESTATION_NAME` (what ``verify-release`` authenticates
    the release with) and belongs to the listing. A rerun on a published release with these assets
    does nothing. Raises :class:`UploadRefused` naming every difference (the release stays a draft)."""
    import httpx

    want = local_assets(dist, tag, git_ref)
    signed = read_subjects(subjects)
    extra = {ATTESTATION_NAME: _sigstore_asset(sigstore_bundle, signed, tag)} if sigstore_bundle else {}
    if signed != want:
        raise UploadRefused(
            tag,
            [
                f"the attested subjects ({subjects.name}) differ from the release's assets ({_diff(want, signed)}); "
                "it stays a draft"
            ],
        )
    with httpx.Client(timeout=Settings.from_env().timeout(), follow_redirects=True) as c:
        gh = GitHub(api or DEFAULT_API, repo, c, token)
        done = _if_published(gh, repo, tag, want | extra, f"publish {tag}", " from the attested subjects")
        if done is not None:
            return done
        drafts = [r for r in gh.paged("/releases") if r.get("draft") and r.get("tag_name") == tag]
        if len(drafts) != 1:
            raise UploadRefused(
                tag,
                [
                    f"{len(drafts)} draft releases of {repo} have tag {tag}, expected the one upload-release --draft-only left"
                ],
            )
        rel = drafts[0]
        listing = {a["name"]: a for a in gh.paged(f"/releases/{rel['id']}/assets")}
        for name, sha in extra.items():
            prior = listing.get(name)
            if prior is not None and (prior.get("state") != "uploaded" or _digest(prior) != sha):
                # an earlier run's bundle (or a partial upload): this attestation of the same
                # subjects replaces it; the assets themselves are never replaced
                gh.call("DELETE", f"/releases/assets/{prior['id']}", ok=(204,))
                prior = None
            if prior is None:
                _upload_asset(gh, rel["upload_url"].split("{", 1)[0], Path(str(sigstore_bundle)), name, sha, tag)
        have = {a["name"]: _digest(a) for a in gh.paged(f"/releases/{rel['id']}/assets")}
        want = want | extra
        if have != want:
            raise UploadRefused(
                tag, [f"the draft's assets are not what was attested ({_diff(want, have)}); it stays a draft"]
            )
        result = UploadResult(rel["id"], rel.get("html_url", ""), kept=list(want))
        result.url = _publish(gh, rel, tag) or result.url
        say(f"publish {tag}: published {result.url or rel['id']}: its {len(want)} assets are the attested subjects")
        return result


def _diff(want: Mapping[str, str], have: Mapping[str, str | None]) -> str:
    missing = sorted(set(want) - set(have))
    extra = sorted(set(have) - set(want))
    other = sorted(n for n in set(want) & set(have) if have[n] != want[n])
    parts = [
        f"missing {', '.join(missing)}" if missing else "",
        f"extra {', '.join(extra)}" if extra else "",
        f"other bytes {', '.join(other)}" if other else "",
    ]
    return "; ".join(p for p in parts if p) or "equal"


__all__ = [
    "GitHub",
    "UploadRefused",
    "UploadResult",
    "local_assets",
    "publish_release",
    "read_subjects",
    "upload_release",
]
