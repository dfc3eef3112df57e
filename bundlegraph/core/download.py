"""The one ``download()``: fetch a URL into the content-addressed cache, verified.

A file enters ``<cache>/blobs/sha256/<hex>`` only after its sha256 (and size, when known) match
the pin. Nothing unverified is ever returned.

- **Timeouts**: connect and read timeouts (seconds) from :class:`Settings` (env
  ``BUNDLEGRAPH_CONNECT_TIMEOUT`` / ``BUNDLEGRAPH_READ_TIMEOUT``; defaults 15 / 60).
- **Retries**: network errors (connect/read timeouts, resets, a body cut short), HTTP 5xx and
  429 are retried ``retries`` times (env ``BUNDLEGRAPH_RETRIES``, default 4) with exponential
  backoff (``backoff`` seconds doubled each time, env ``BUNDLEGRAPH_BACKOFF``, default 1; a
  ``Retry-After`` header is honoured up to 30 s). Any other 4xx fails at once.
- **Resume**: bytes already received stay in ``<cache>/partial/<hex>.part`` and the next attempt
  (or the next run) asks for the rest with ``Range: bytes=<n>-``; a server answering 200 instead
  of 206 restarts the file.
- **Verification**: a finished file whose sha256 or size differs (an HTML error page, a 92-byte
  body, a truncated file) is deleted and fetched once more from scratch; a second mismatch raises
  :class:`HashMismatch` naming the URL, the expected and the actual sha256 and size.
- **Only https**, except loopback hosts (tests), ``allow_insecure=True`` or
  ``BUNDLEGRAPH_ALLOW_HTTP=1``.
- **Parallel**: :func:`download_many` runs a few downloads at once (``jobs``, env
  ``BUNDLEGRAPH_DOWNLOAD_JOBS``, default 3; build parallelism is ``BUNDLEGRAPH_JOBS``) with one progress display (:mod:`bundlegraph.core.progress`).
- **Locks**: one inter-process lock per hash, so two runs never write the same blob.
"""

from __future__ import annotations

import ipaddress
import os
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlsplit

from . import paths
from .errors import DownloadError, HashMismatch
from .fsutil import locked, sha256_file
from .lightclass import frozen
from .progress import Reporter, reporter

if TYPE_CHECKING:  # httpx is imported where it is used: planning a graph needs no HTTP client
    import httpx


@frozen
class Settings:
    """Network behaviour: ``connect_timeout``/``read_timeout`` (s), ``retries`` (extra attempts
    after the first), ``backoff`` (s, doubled per retry), ``jobs`` (parallel downloads)."""

    connect_timeout: float = 15.0
    read_timeout: float = 60.0
    retries: int = 4
    backoff: float = 1.0
    jobs: int = 3

    @classmethod
    def from_env(cls) -> Settings:
        from . import settings

        return cls(
            connect_timeout=settings.get("CONNECT_TIMEOUT"),
            read_timeout=settings.get("READ_TIMEOUT"),
            retries=settings.get("RETRIES"),
            backoff=settings.get("BACKOFF"),
            jobs=settings.get("DOWNLOAD_JOBS"),
        )

    def timeout(self) -> httpx.Timeout:
        import httpx

        return httpx.Timeout(
            connect=self.connect_timeout, read=self.read_timeout, write=self.read_timeout, pool=self.connect_timeout
        )


class Retryable(Exception):
    """An attempt failed in a way worth retrying (network, 5xx, 429)."""

    def __init__(self, msg: str, wait: float | None = None):
        super().__init__(msg)
        self.wait = wait


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_url(url: str, *, allow_insecure: bool = False) -> None:
    """Refuse anything but https (loopback http allowed for tests)."""
    from . import settings

    parts = urlsplit(url)
    if parts.scheme == "https":
        return
    if parts.scheme == "http" and (_is_loopback(parts.hostname or "") or allow_insecure or settings.get("ALLOW_HTTP")):
        return
    raise DownloadError(
        f"{url}: refused: only https URLs are fetched (http only for loopback hosts, or with BUNDLEGRAPH_ALLOW_HTTP=1)"
    )


def _partial_dir() -> Path:
    d = paths.cache_root() / "partial"
    d.mkdir(parents=True, exist_ok=True)
    return d


def retry_after(r: httpx.Response) -> float | None:
    """Seconds a 429/503 response asks to wait (``Retry-After``, at most 30), or None."""
    v = r.headers.get("retry-after", "")
    return min(float(v), 30.0) if v.strip().isdigit() else None


def _attempt(
    c: httpx.Client, url: str, part: Path, size: int | None, rep: Reporter, task: Any, allow_insecure: bool
) -> None:
    import httpx

    have = part.stat().st_size if part.exists() else 0
    if size is not None and have > size:
        part.unlink()
        have = 0
    if size is not None and have == size:
        return
    headers = {"Accept-Encoding": "identity"}  # byte offsets for Range; stored bytes = served bytes
    if have:
        headers["Range"] = f"bytes={have}-"
    try:
        with c.stream("GET", url, headers=headers) as r:
            check_url(str(r.url), allow_insecure=allow_insecure)
            if r.status_code == 416 and have:
                part.unlink()  # the server cannot resume: start again
                raise Retryable(f"HTTP 416 for a resume from byte {have}", 0)
            if r.status_code == 429 or r.status_code >= 500:
                raise Retryable(f"HTTP {r.status_code}", retry_after(r))
            if r.status_code not in (200, 206):
                raise DownloadError(
                    f"{url}: HTTP {r.status_code} {r.reason_phrase}; not retried (only network errors, 5xx and 429 are)"
                )
            if r.status_code == 206 and not r.headers.get("content-range", "").startswith(f"bytes {have}-"):
                part.unlink(missing_ok=True)
                raise Retryable(f"unexpected Content-Range {r.headers.get('content-range')!r}", 0)
            mode = "ab" if r.status_code == 206 else "wb"
            rep.update(task, completed=have if mode == "ab" else 0)
            with open(part, mode) as f:
                for chunk in r.iter_raw():  # unbuffered: bytes received before a drop are kept
                    f.write(chunk)
                    rep.advance(task, len(chunk))
    except httpx.TransportError as e:
        raise Retryable(f"{type(e).__name__}: {e or 'no detail'}") from e


T = TypeVar("T")


def with_retries(url: str, once: Callable[[], T], s: Settings, note: Callable[[str], None] | None = None) -> T:
    """The one retry loop: call ``once`` up to ``s.retries + 1`` times. A :class:`Retryable`
    (network error, HTTP 5xx or 429, a resume the server refused) waits its ``Retry-After`` or
    ``s.backoff`` doubled per attempt (at most 30 s), tells ``note``, and tries again; any other
    error propagates at once. Raises :class:`DownloadError` naming ``url`` and the last reason
    when every attempt failed."""
    last = ""
    for attempt in range(s.retries + 1):
        try:
            return once()
        except Retryable as e:
            last = str(e)
            if attempt == s.retries:
                break
            delay = e.wait if e.wait is not None else min(s.backoff * (2**attempt), 30.0)
            if note is not None:
                note(f"{url}: {last}; retry {attempt + 1}/{s.retries} in {delay:.1f}s")
            time.sleep(delay)
    raise DownloadError(f"{url}: failed after {s.retries + 1} attempt(s): {last}")


def download(
    url: str,
    sha256: str,
    size: int | None = None,
    *,
    allow_insecure: bool = False,
    client: httpx.Client | None = None,
    settings: Settings | None = None,
    progress: Reporter | None = None,
) -> Path:
    """Return the cache path of ``url``'s content, downloading it if not cached.

    ``sha256``: expected hex digest (required: hashes fail closed); ``size``: expected bytes,
    checked when given. Raises :class:`DownloadError` (refused URL, HTTP 4xx, retries exhausted)
    or :class:`HashMismatch` (after one fresh retry). On failure the blob cache is unchanged.
    """
    import httpx

    sha256 = sha256.lower()
    dest = paths.blob_path(sha256)
    if dest.is_file():
        return dest
    check_url(url, allow_insecure=allow_insecure)
    s = settings or Settings.from_env()
    part = _partial_dir() / f"{sha256}.part"
    own = client is None
    c = client or httpx.Client(timeout=s.timeout(), follow_redirects=True)
    rep = progress or reporter()
    name = url.rsplit("/", 1)[-1] or url
    try:
        with locked(_partial_dir() / f"{sha256}.lock", what=f"download of {name}"):
            if dest.is_file():
                return dest
            task = rep.start(name, size)
            ok = False
            try:
                for round_ in (1, 2):
                    with_retries(url, lambda: _attempt(c, url, part, size, rep, task, allow_insecure), s, rep.note)
                    n = part.stat().st_size
                    actual = sha256_file(part)
                    if actual == sha256 and (size is None or n == size):
                        dest.parent.mkdir(parents=True, exist_ok=True)
                        os.replace(part, dest)
                        ok = True
                        return dest
                    part.unlink()
                    if round_ == 1:
                        rep.note(f"{url}: sha256 {actual} size {n} does not match the pin; deleted, fetching once more")
                raise HashMismatch(
                    f"{url}: content does not match its pin: expected sha256 {sha256}"
                    f"{f' size {size}' if size is not None else ''}, got sha256 {actual} size {n} "
                    f"(twice; the file was deleted)"
                )
            finally:
                rep.finish(task, ok)
    finally:
        if own:
            c.close()
        if progress is None:
            rep.close()


def download_many(
    items: Sequence[tuple[str, str, int | None]], *, allow_insecure: bool = False, settings: Settings | None = None
) -> list[Path]:
    """Download ``(url, sha256, size)`` items, ``settings.jobs`` at a time, with one progress
    display. Returns the cache paths in the order given. The first failure stops new downloads,
    waits for running ones and is raised (other failures are appended to its message)."""
    import httpx

    s = settings or Settings.from_env()
    for url, _, _ in items:
        check_url(url, allow_insecure=allow_insecure)
    rep = reporter()
    try:
        with (
            httpx.Client(timeout=s.timeout(), follow_redirects=True) as c,
            ThreadPoolExecutor(max_workers=s.jobs) as pool,
        ):
            futs = [
                pool.submit(download, u, h, n, allow_insecure=allow_insecure, client=c, settings=s, progress=rep)
                for u, h, n in items
            ]
            _done, pending = wait(futs, return_when=FIRST_EXCEPTION)
            errors = [f.exception() for f in futs if f.done() and f.exception() is not None]
            if errors:
                for f in pending:
                    f.cancel()
                wait(futs)
                errors = [f.exception() for f in futs if not f.cancelled() and f.exception() is not None]
                first = errors[0]
                if len(errors) > 1 and isinstance(first, DownloadError | HashMismatch):
                    raise type(first)("\n".join(str(e) for e in errors)) from first
                assert isinstance(first, BaseException)
                raise first
            return [f.result() for f in futs]
    finally:
        rep.close()


def fetch_small(url: str, *, allow_insecure: bool = False, headers: dict[str, str] | None = None) -> bytes:
    """GET a small unpinned document (a redist manifest, a release listing; at most 64 MiB) with
    the same timeouts and retries; ``headers`` are sent as given. Raises :class:`DownloadError`."""
    import httpx

    check_url(url, allow_insecure=allow_insecure)
    s = Settings.from_env()
    max_bytes = 64 << 20

    def once() -> bytes:
        try:
            r = c.get(url, headers=headers)
        except httpx.TransportError as e:
            raise Retryable(f"{type(e).__name__}: {e}") from e
        if r.status_code == 200:
            if len(r.content) > max_bytes:
                raise DownloadError(f"{url}: {len(r.content)} bytes, more than the {max_bytes} allowed")
            return r.content
        if r.status_code == 429 or r.status_code >= 500:
            raise Retryable(f"HTTP {r.status_code}", retry_after(r))
        raise DownloadError(f"{url}: HTTP {r.status_code} {r.reason_phrase}")

    with httpx.Client(timeout=s.timeout(), follow_redirects=True) as c:
        return with_retries(url, once, s)


def download_unpinned(url: str, *, allow_insecure: bool = False) -> tuple[Path, str, int]:
    """Download ``url`` whose sha256 is not known yet (a maintainer pinning it: ``bundlegraph
    lock``) into the blob cache, with the same timeouts, retries and resume as :func:`download`;
    returns ``(blob path, sha256, size)``. The caller writes the pin; every later use goes through
    :func:`download` with it. Raises :class:`DownloadError`."""
    import hashlib

    import httpx

    check_url(url, allow_insecure=allow_insecure)
    s = Settings.from_env()
    tag = hashlib.sha256(url.encode()).hexdigest()
    part = _partial_dir() / f"unpinned-{tag}.part"
    rep = reporter()
    name = url.rsplit("/", 1)[-1] or url
    try:
        with (
            locked(_partial_dir() / f"unpinned-{tag}.lock", what=f"download of {name}"),
            httpx.Client(timeout=s.timeout(), follow_redirects=True) as c,
        ):
            part.unlink(missing_ok=True)  # no resume across runs: the bytes being pinned come from one fetch
            task = rep.start(name, None)
            ok = False
            try:
                with_retries(url, lambda: _attempt(c, url, part, None, rep, task, allow_insecure), s, rep.note)
                actual, n = sha256_file(part), part.stat().st_size
                dest = paths.blob_path(actual)
                dest.parent.mkdir(parents=True, exist_ok=True)
                os.replace(part, dest)
                ok = True
                return dest, actual, n
            finally:
                rep.finish(task, ok)
    finally:
        rep.close()


def adopt(file: str | os.PathLike[str], sha256: str, *, what: str) -> Path:
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
