"""Hashes of paired runtime assets (e.g. upstream's ``cudart-llama-bin-win-cuda-13.4-arm64.zip``)
for the SHA index, in this order (first that applies):

1. a local file of that name in ``dist/`` or the artifacts directory: its sha256 (when the
   spec also pins a sha256, the two must agree — hashes fail closed);
2. the spec's pinned ``sha256``;
3. the base tag's release on GitHub (``GET {api}/repos/{repo}/releases/tags/{tag}``, the REST
   API's release object): the asset's bytes (its ``browser_download_url``, or the spec's ``url``)
   are downloaded and hashed here, on the machine that writes the index, and, when the API
   publishes a ``digest`` (``"sha256:<hex>"``), must be those bytes (:class:`HashMismatch`
   otherwise: the index never copies the API's word without the bytes).

Every file hashed (local or downloaded) is then checked against upstream's own attestation with
``gh attestation verify FILE --repo REPO`` where the GitHub CLI is on PATH
(:func:`attest_upstream`); where it is not, :attr:`AssetHash.attested` says so (the provenance
records it, and it is printed), never as verified.

``api`` is ``BUNDLEGRAPH_GITHUB_API`` (default ``https://api.github.com``); a ``GITHUB_TOKEN``
in the environment is sent to it as a bearer token (authenticated requests: GitHub's rate limit
for anonymous ones is 60 an hour) and never printed, nor sent to the download URLs. URLs pass
the same https rule as :func:`bundlegraph.core.download.download` (loopback http for tests).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.download import Settings, check_url, fetch_small
from ..core.errors import DownloadError, HashMismatch
from ..core.fsutil import CHUNK, sha256_file
from ..core.lightclass import frozen
from ..schemas.records import PairedAsset

if TYPE_CHECKING:  # imported where used (planning needs no HTTP client)
    import httpx

DEFAULT_API = "https://api.github.com"


@frozen
class AssetHash:
    """``sha256`` of ``name`` and ``how`` it was obtained (``local:<path>``, ``pinned``,
    ``downloaded:<url> = published digest`` (the bytes hashed here equal the API's digest),
    ``downloaded:<url>`` (the API publishes no digest)); ``size`` in bytes when known."""

    name: str
    sha256: str
    how: str
    size: int | None = None
    attested: str = ""
    """Whether upstream's attestation of the bytes was verified (:func:`attest_upstream`):
    ``gh attestation verify --repo <repo>`` when it was, else why not."""


def attest_upstream(path: Path, repo: str, digest_checked: bool = False) -> str:
    """Verify upstream's attestation of the file at ``path`` with the GitHub CLI: ``gh
    attestation verify PATH --repo REPO`` (llama.cpp attests every build release with
    ``actions/attest``). Returns what was verified, or why nothing was: ``gh`` is not on PATH
    (the input is then trusted by its hash alone, and the provenance says so). Raises
    :class:`HashMismatch` naming the file and gh's verdict when gh refuses it; when
    ``digest_checked`` (the bytes equal the upstream release's published digest), gh finding no
    attestation at all is recorded as not verified instead (a release older than upstream's
    attestations)."""
    from ..core import proc
    from ..core.report import say

    gh = proc.which("gh")
    if gh is None:
        why = "not verified: gh (GitHub CLI) is not on PATH; trusted by its sha256"
        say(f"{path.name}: upstream's attestation {why}")
        return why
    r = proc.run(
        [gh, "attestation", "verify", str(path), "--repo", repo],
        capture=True,
        check=False,
        echo=False,
        what=f"gh attestation verify {path.name}",
    )
    if r.returncode != 0:
        last = (r.output.strip().splitlines() or ["(no output)"])[-1]
        # upstream attests its builds since ~2026-08-19 only (FINDINGS.md): an older paired release
        # has none. That is tolerated only for bytes proven to be the API's published digest; any
        # other file without an attestation (a swapped local copy looks just so) is refused
        if digest_checked and "no attestations found" in r.output.lower():
            why = f"not verified: {repo} published no attestation of these bytes (gh: {last.strip()}); they are its published digest"
            say(f"{path.name}: upstream's attestation {why}")
            return why
        raise HashMismatch(
            f"{path.name}: upstream's attestation does not verify (gh attestation verify --repo {repo}): {last}"
        )
    return f"gh attestation verify --repo {repo}"


def find_local(name: str, dirs: list[Path]) -> Path | None:
    """The first file called ``name`` directly in, or (for artifact downloads) below, ``dirs``."""
    for d in dirs:
        if (d / name).is_file():
            return d / name
        hits = sorted(p for p in d.rglob(name) if p.is_file()) if d.is_dir() else []
        if hits:
            return hits[0]
    return None


def _headers() -> dict[str, str]:
    h = {"Accept": "application/vnd.github+json", "User-Agent": "bundlegraph"}
    tok = os.environ.get("GITHUB_TOKEN")
    if tok:
        h["Authorization"] = f"Bearer {tok}"
    return h


def stream_sha256(url: str, client: httpx.Client, dest: Path | None = None) -> tuple[str, int]:
    """sha256 and size of the body of ``url``, streamed in 1 MiB chunks (written to ``dest``
    when given, else not stored), with the download module's retries
    (:func:`bundlegraph.core.download.with_retries`)."""
    import httpx

    from ..core.download import Retryable, retry_after, with_retries

    check_url(url)

    def once() -> tuple[str, int]:
        h, n = hashlib.sha256(), 0
        out = open(dest, "wb") if dest is not None else None  # closed in finally, also on a retry
        try:
            with client.stream("GET", url) as r:
                if r.status_code == 429 or r.status_code >= 500:
                    raise Retryable(f"HTTP {r.status_code}", retry_after(r))
                if r.status_code != 200:
                    raise DownloadError(f"{url}: HTTP {r.status_code}")
                for chunk in r.iter_bytes(CHUNK):
                    h.update(chunk)
                    n += len(chunk)
                    if out is not None:
                        out.write(chunk)
        except httpx.TransportError as e:
            raise Retryable(f"{type(e).__name__}: {e}") from e
        except httpx.HTTPError as e:
            raise DownloadError(f"{url}: {type(e).__name__}: {e}") from e
        finally:
            if out is not None:
                out.close()
        return h.hexdigest(), n

    return with_retries(url, once, Settings.from_env())


def release_assets(repo: str, tag: str, api: str | None = None) -> dict[str, dict[str, Any]]:
    """The assets of release ``tag`` of ``repo``, by name (GitHub REST release object)."""
    from ..core import settings

    api = (api or settings.get("GITHUB_API") or DEFAULT_API).rstrip("/")
    url = f"{api}/repos/{repo}/releases/tags/{tag}"
    try:
        body = fetch_small(url, headers=_headers())  # the one download path: timeouts, retries
    except DownloadError as e:
        raise DownloadError(f"{e}; cannot list the assets of {repo} {tag}") from None
    try:
        return {a["name"]: a for a in json.loads(body).get("assets", [])}
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        raise DownloadError(f"{url}: not a release object ({e})") from None


def hash_paired(
    asset: PairedAsset, *, repo: str, tag: str, local_dirs: list[Path], client: httpx.Client | None = None
) -> AssetHash:
    """The sha256 of paired ``asset`` (see the module docstring). Raises
    :class:`HashMismatch` when a local file disagrees with the pin or a streamed body with the
    published digest, :class:`DownloadError` when the release or the asset cannot be found."""
    import httpx

    local = find_local(asset.name, local_dirs)
    if local is not None:
        got = sha256_file(local)
        if asset.sha256 and got != asset.sha256:
            raise HashMismatch(f"{asset.name}: local file {local} has sha256 {got}, the spec pins {asset.sha256}")
        return AssetHash(asset.name, got, f"local:{local}", local.stat().st_size, attest_upstream(local, repo))
    if asset.sha256:
        return AssetHash(asset.name, asset.sha256, "pinned", attested="not verified: the spec pins its sha256")
    try:
        listed = release_assets(repo, tag)
    except DownloadError as e:
        looked = ", ".join(str(d) for d in local_dirs) or "no local directory"
        raise DownloadError(
            f"{asset.name}: paired runtime asset not found locally ({looked}) and not "
            f"fetchable from {repo} release {tag}: {e}"
        ) from None
    meta = listed.get(asset.name)
    if meta is None and not asset.url:
        raise DownloadError(
            f"{asset.name}: not an asset of {repo} release {tag} (assets: {', '.join(sorted(listed)) or 'none'})"
        )
    digest = str((meta or {}).get("digest") or "")
    published = digest[7:].lower() if digest.startswith("sha256:") and len(digest) == 71 else None
    url = asset.url or str((meta or {}).get("browser_download_url") or "")
    if not url:
        raise DownloadError(
            f"{asset.name}: {repo} release {tag} lists it without a browser_download_url and the spec gives no url: "
            f"its bytes cannot be fetched and hashed here"
        )
    import tempfile

    # the bytes are fetched and hashed here: the index states what this machine hashed, never the API's word alone
    with tempfile.TemporaryDirectory(prefix="bundlegraph-paired-") as d:
        part = Path(d) / asset.name
        if client is not None:
            sha, n = stream_sha256(url, client, part)
        else:
            with httpx.Client(timeout=Settings.from_env().timeout(), follow_redirects=True) as c:
                sha, n = stream_sha256(url, c, part)
        if published is not None and sha != published:
            raise HashMismatch(
                f"{asset.name}: the bytes downloaded from {url} have sha256 {sha}, {repo} release {tag}'s published "
                f"digest is sha256:{published}; the index is not written from bytes upstream did not publish"
            )
        attested = attest_upstream(part, repo, digest_checked=published is not None)
    how = f"downloaded:{url}" + (" = published digest" if published is not None else " (no published digest)")
    return AssetHash(asset.name, sha, how, n, attested)
