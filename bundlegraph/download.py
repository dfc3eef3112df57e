"""The one ``download()``: fetch a URL into the content-addressed cache, verified.

A file enters ``<cache>/blobs/sha256/<hex>`` only after its sha256 (and size, when known)
match the pin; a mismatch is deleted and reported naming the URL, expected and actual sha256
and size. Nothing unverified is ever returned. Only ``https`` URLs are fetched, except
loopback hosts (tests) or ``allow_insecure=True`` / ``BUNDLEGRAPH_ALLOW_HTTP=1``.
"""

from __future__ import annotations

import hashlib
import ipaddress
import os
import tempfile
from pathlib import Path
from urllib.parse import urlsplit

import httpx

from . import paths
from .errors import DownloadError, HashMismatch
from .fsutil import CHUNK, sha256_file

TIMEOUT = httpx.Timeout(connect=15.0, read=60.0, write=60.0, pool=15.0)


def _is_loopback(host: str) -> bool:
    if host in ("localhost",):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_url(url: str, *, allow_insecure: bool = False) -> None:
    """Refuse anything but https (loopback http allowed for tests)."""
    parts = urlsplit(url)
    if parts.scheme == "https":
        return
    if parts.scheme == "http" and (
        _is_loopback(parts.hostname or "") or allow_insecure or os.environ.get("BUNDLEGRAPH_ALLOW_HTTP") == "1"
    ):
        return
    raise DownloadError(
        f"{url}: refused: only https URLs are fetched (http only for loopback hosts, or with "
        f"BUNDLEGRAPH_ALLOW_HTTP=1)"
    )


def download(
    url: str,
    sha256: str,
    size: int | None = None,
    *,
    allow_insecure: bool = False,
    client: httpx.Client | None = None,
) -> Path:
    """Return the cache path of ``url``'s content, downloading it if not cached.

    ``sha256``: expected hex digest (required: hashes fail closed); ``size``: expected
    bytes, checked when given. Raises :class:`DownloadError` (refused URL, HTTP error,
    network failure) or :class:`HashMismatch`.
    """
    sha256 = sha256.lower()
    dest = paths.blob_path(sha256)
    if dest.is_file():
        return dest
    check_url(url, allow_insecure=allow_insecure)
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{sha256[:16]}.", suffix=".part", dir=dest.parent)
    own = client is None
    c = client or httpx.Client(timeout=TIMEOUT, follow_redirects=True)
    try:
        h = hashlib.sha256()
        n = 0
        with os.fdopen(fd, "wb") as f:
            try:
                with c.stream("GET", url) as r:
                    if r.status_code != 200:
                        raise DownloadError(f"{url}: HTTP {r.status_code}")
                    for chunk in r.iter_bytes(CHUNK):
                        f.write(chunk)
                        h.update(chunk)
                        n += len(chunk)
            except httpx.HTTPError as e:
                raise DownloadError(f"{url}: {type(e).__name__}: {e}") from e
        actual = h.hexdigest()
        if actual != sha256 or (size is not None and n != size):
            raise HashMismatch(
                f"{url}: content does not match its pin: expected sha256 {sha256}"
                f"{f' size {size}' if size is not None else ''}, got sha256 {actual} size {n}"
            )
        os.replace(tmp, dest)
        return dest
    finally:
        if own:
            c.close()
        if os.path.exists(tmp):
            os.unlink(tmp)


def adopt(file: str | os.PathLike, sha256: str, *, what: str) -> Path:
    """Move a file fetched by another client (pip, npm) into the blob cache after checking
    its sha256; raise :class:`HashMismatch` naming ``what`` otherwise (the file is deleted)."""
    actual = sha256_file(file)
    if actual != sha256.lower():
        os.unlink(file)
        raise HashMismatch(f"{what}: expected sha256 {sha256.lower()}, got {actual}")
    dest = paths.blob_path(actual)
    dest.parent.mkdir(parents=True, exist_ok=True)
    if dest.exists():
        os.unlink(file)
    else:
        os.replace(file, dest)
    return dest
