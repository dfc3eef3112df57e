"""Prove a release's source archive is the commit it names (issue 40, item 4): the git tree id of
the archive's files is computed and compared with ``git rev-parse <commit>^{tree}`` of the commit
fetched from the source repository (for a mix release: the base and every pinned pull request
head fetched and merged as the release merged them, :func:`bundlegraph.pipeline.mix.fetch_and_merge`).
A substituted tree under the same commit id is refused, naming the files that differ.

The archive's tree id is computed from the tar's members alone, as git would hash a checkout of
them (no checkout, so no exec bit or symlink lost on Windows, and no ``.gitignore`` that would
hide a planted file from ``git add``): a blob is ``<hash>("blob <size>\\0" + bytes)``, a tree is
``<hash>("tree <size>\\0" + entries)`` with entries ``<mode> <name>\\0<raw id>`` sorted by name,
a directory's name compared as if it ended in ``/``; modes ``100644``, ``100755`` (any exec bit),
``120000`` (a symlink, its target as the blob) and ``40000`` (a directory). Source: git's
documentation, "gitformat-index"/"git-hash-object", and ``git/tree.c``'s ``base_name_compare``.
Empty directories are not in a git tree and are ignored. The object format (``sha1`` or
``sha256``) is the fetched repository's (``git rev-parse --show-object-format``).
"""

from __future__ import annotations

import hashlib
import tarfile
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, cast

from ..core import gitmeta, proc
from ..core.errors import BundleGraphError, DownloadError, HashMismatch
from ..core.lightclass import frozen

if TYPE_CHECKING:  # the schemas are imported where used
    from ..schemas.records import Release

GITHUB = "https://github.com/{repo}.git"
"""Where a ``source_repo`` (owner/name) is fetched from, unless ``BUNDLEGRAPH_SOURCE_URL`` says
another URL (a mirror, or the tests' local git server)."""

Listing = dict[str, tuple[str, str]]
"""``{path: (mode, object id)}`` of every file of a tree (``git ls-tree -r`` without the type)."""


@frozen
class SourceProof:
    """What :func:`prove` found: ``commit`` (the commit fetched, or the merge of the pins), its
    ``tree`` id, ``url`` it was fetched from, and ``files`` (how many files the tree has)."""

    commit: str
    tree: str
    url: str
    files: int


def _hasher(fmt: str) -> Callable[[bytes], hashlib._Hash]:
    if fmt not in ("sha1", "sha256"):
        raise BundleGraphError(f"--rebuild: git object format {fmt!r}: expected sha1 or sha256")
    return getattr(hashlib, fmt)  # type: ignore[no-any-return]


def _obj(kind: str, body: bytes, fmt: str) -> bytes:
    return _hasher(fmt)(kind.encode() + b" " + str(len(body)).encode() + b"\0" + body).digest()


def archive_listing(archive: Path, fmt: str = "sha1") -> tuple[str, Listing]:
    """``(tree id, listing)`` of the files of ``archive`` (a tar, gzip'd or not, everything under
    one top-level directory, which is stripped), hashed as git objects of format ``fmt``. Raises
    :class:`BundleGraphError` naming the archive for one that is unreadable, has members outside
    one top-level directory, or holds a ``.git`` entry or a device file."""
    files: dict[str, tuple[str, bytes]] = {}
    tops: set[str] = set()
    try:
        with tarfile.open(archive) as tf:
            for m in tf:
                parts = PurePosixPath(m.name).parts
                if not parts or parts[0] in ("/", "..") or ".." in parts:
                    raise BundleGraphError(f"--rebuild: {archive.name}: member {m.name!r} is outside the archive")
                tops.add(parts[0])
                rel = "/".join(parts[1:])
                if ".git" in parts[1:]:
                    raise BundleGraphError(
                        f"--rebuild: {archive.name}: holds git metadata ({m.name}); a source archive has none"
                    )
                if m.isdir() or not rel:
                    continue
                if m.issym():
                    files[rel] = ("120000", _obj("blob", m.linkname.encode(), fmt))
                elif m.isfile() or m.islnk():
                    f = tf.extractfile(m)
                    data = f.read() if f is not None else b""
                    files[rel] = ("100755" if m.mode & 0o111 else "100644", _obj("blob", data, fmt))
                else:
                    raise BundleGraphError(
                        f"--rebuild: {archive.name}: member {m.name!r} is not a file, link or directory"
                    )
    except (OSError, tarfile.TarError, EOFError) as e:
        raise BundleGraphError(f"--rebuild: {archive.name}: not a readable tar archive ({e})") from None
    if len(tops) > 1:
        raise BundleGraphError(f"--rebuild: {archive.name}: expected one top-level directory, found {sorted(tops)}")
    return _tree_id(files, fmt), {p: (mode, oid.hex()) for p, (mode, oid) in files.items()}


def _tree_id(files: dict[str, tuple[str, bytes]], fmt: str) -> str:
    """The id of the tree holding ``files`` (path -> (mode, raw blob id))."""
    root: dict[str, object] = {}
    for path, entry in files.items():
        *dirs, name = path.split("/")
        node = root
        for d in dirs:
            nxt = node.setdefault(d, {})
            if not isinstance(nxt, dict):
                raise BundleGraphError(f"--rebuild: the source archive has both a file and a directory {d!r}")
            node = nxt
        if isinstance(node.get(name), dict):
            raise BundleGraphError(f"--rebuild: the source archive has both a file and a directory {path!r}")
        node[name] = entry

    def write(node: dict[str, object]) -> bytes:
        rows: list[tuple[bytes, bytes, bytes, bytes]] = []
        for name, v in node.items():
            if isinstance(v, dict):
                rows.append((name.encode() + b"/", b"40000", name.encode(), write(v)))
            else:
                mode, oid = cast("tuple[str, bytes]", v)
                rows.append((name.encode(), mode.encode(), name.encode(), oid))
        body = b"".join(m + b" " + n + b"\0" + oid for _key, m, n, oid in sorted(rows))
        return _obj("tree", body, fmt)

    return write(root).hex()


def _git(repo: Path, *args: str, log: Path, check: bool = True) -> proc.Completed:
    return gitmeta.git(repo, *args, log=log, what="--rebuild", check=check)


def commit_listing(repo: Path, commit: str, log: Path, subdirectory: str | None = None) -> tuple[str, Listing]:
    """``(tree id, listing)`` of ``commit`` in ``repo`` (``git rev-parse <commit>^{tree}``, ``git
    ls-tree -r -z``), or of its directory ``subdirectory`` (``<commit>:<subdirectory>``)."""
    spec = f"{commit}:{subdirectory.strip('/')}" if subdirectory else f"{commit}^{{tree}}"
    tree = _git(repo, "rev-parse", "--verify", spec, log=log).output.strip()
    out = _git(repo, "ls-tree", "-r", "-z", "--full-tree", tree, log=log).output
    listing: Listing = {}
    for row in out.split("\0"):
        if row:
            meta, path = row.split("\t", 1)
            mode, _kind, oid = meta.split()
            listing[path] = (mode, oid)
    return tree, listing


def differing(a: Listing, b: Listing) -> list[str]:
    """Paths whose mode or content differ, or that only one of ``a`` and ``b`` has (what ``git
    diff --name-only`` between the two trees says)."""
    return sorted(p for p in a.keys() | b.keys() if a.get(p) != b.get(p))


def fetch_commit(repo: Path, url: str, commit: str, log: Path) -> None:
    """``git fetch --depth 1 <url> <commit>`` into a new repository ``repo``. Raises
    :class:`~bundlegraph.core.errors.DownloadError` (exit 4, README "Exit codes": a download that
    failed) naming the URL, the commit and git's last line when it cannot be fetched: the URL
    unreachable, or the repository without that commit."""

    repo.mkdir(parents=True, exist_ok=True)
    _git(repo, "init", "-q", log=log)
    r = _git(repo, "fetch", "-q", "--depth", "1", "--no-tags", url, commit, log=log, check=False)
    if r.returncode != 0:
        last = (r.output.strip().splitlines() or ["no output"])[-1]
        raise DownloadError(
            f"--rebuild: commit {commit} cannot be fetched from {url} ({last}): the release's source commit must "
            f"be in its source repository (set BUNDLEGRAPH_SOURCE_URL to fetch from a mirror)"
        )


def source_url(release: Release) -> str:
    """Where the release's source commit is fetched from: ``BUNDLEGRAPH_SOURCE_URL`` when set
    (a mirror); else a mix pin's ``url`` (the loader holds a GitHub one to ``source_repo``, and the
    provenance records the spec file that states it); else ``source_repo`` on GitHub
    (:data:`GITHUB`), whatever URL a git pin fetched from."""
    from ..core import settings
    from ..schemas.records import MixPin

    override = settings.get("SOURCE_URL")
    if override:
        return str(override)
    if isinstance(release.source, MixPin):
        return release.source.url
    return GITHUB.format(repo=release.source_repo)


def prove(archive: Path, release: Release, commit: str, work: Path) -> SourceProof:
    """Fetch the commit ``commit`` the release names into ``work/proof.git`` (a mix: merge its
    pins there, and the merge must be ``commit``) and compare its tree with ``archive``'s. Returns
    the :class:`SourceProof`; raises :class:`HashMismatch` naming the differing files (at most 20,
    then a count) when the trees differ, :class:`BundleGraphError` when the commit cannot be
    fetched or the pins merge to another commit."""
    from ..pipeline.mix import fetch_and_merge
    from ..schemas.records import GitPin, MixPin

    repo, log = work / "proof.git", work / "proof.log"
    if repo.exists():
        import shutil

        shutil.rmtree(repo)
    repo.mkdir(parents=True)
    url = source_url(release)
    pin = release.source
    if isinstance(pin, MixPin):
        if url != pin.url:
            pin = pin.replace(url=url)
        merged, _sha = fetch_and_merge(pin, repo, log)
        if merged != commit:
            raise BundleGraphError(
                f"--rebuild: the base {pin.base.tag} and the pinned pull requests merge to commit {merged}, but the "
                f"release names source commit {commit}"
            )
    else:
        fetch_commit(repo, url, commit, log)
    fmt = _git(repo, "rev-parse", "--show-object-format", log=log).output.strip() or "sha1"
    # a git or mix pin's subdirectory is inside the repository: the archive is that directory
    # (a tarball's or sdist's subdirectory is inside the archive it downloads, and is the commit's tree)
    sub = pin.subdirectory if isinstance(pin, MixPin | GitPin) and pin.subdirectory else None
    want, theirs = commit_listing(repo, commit, log, sub)
    got, ours = archive_listing(archive, fmt)
    if got != want:
        diff = differing(theirs, ours)
        shown = ", ".join(diff[:20]) + (f" and {len(diff) - 20} more" if len(diff) > 20 else "")
        raise HashMismatch(
            f"--rebuild: {archive.name}: its tree {got} is not the tree {want} of commit {commit} ({url}); "
            f"files that differ: {shown or '(none by name: modes or layout)'}"
        )
    return SourceProof(commit=commit, tree=want, url=url, files=len(theirs))


__all__ = [
    "GITHUB",
    "SourceProof",
    "archive_listing",
    "commit_listing",
    "differing",
    "fetch_commit",
    "prove",
    "source_url",
]
