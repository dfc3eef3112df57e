"""Debian packages as a source of files: a lock file of ``.deb`` packages pinned by sha256,
fetched with ``apt-get download`` into the blob cache and extracted with ``dpkg-deb -x`` into a
prefix. Nothing is installed into the system and no package script runs.

Lock file (TOML; unknown keys are errors)::

    version = 1
    [[package]]
    name = "nvidia-cuda-toolkit"          # Debian binary package name
    version = "12.4.131~12.4.1-2"         # exact Debian version (with its epoch, if any)
    architecture = "amd64"                # Debian architecture (or "all")
    suite = "trixie"                      # Debian suite (codename) it comes from
    sha256 = "cd5fe85a..."                # of the .deb file, 64 lowercase hex digits
    size = 87240108                       # optional: bytes of the .deb
    path = "pool/non-free/n/..."          # optional: its file in the archive (the Packages index's Filename)

Where the packages come from (never a host name written here): a suite the machine's apt knows
(a ``deb`` entry of its sources, as ``apt-get indextargets`` lists them) is fetched with the
machine's apt as configured. Any other suite (Debian 13 "trixie" on a Debian 12 host) gets a
private apt configuration under ``<cache>/apt/<suite>-<6 hex>/``: a sources list with the same
archive URI as the machine's own Debian entry (the ``deb`` entry whose suite is the host's
``VERSION_CODENAME`` from ``/etc/os-release``), the suite asked for and the components
``main contrib non-free``, checked with the machine's trusted keys; its own package lists, an
empty dpkg status and no preferences, so nothing of the machine's state is read or written.
``apt-get update`` runs on it once per :func:`fetch` that has something to download.

On a host without a Debian apt source (GitHub's Ubuntu runners, macOS) set
``BUNDLEGRAPH_DEBIAN_ARCHIVE`` to a Debian archive's URL: every package with a ``path`` is then
downloaded from ``<archive>/<path>`` (:func:`bundlegraph.core.download.download`, checked against
the lock's sha256 and size like any download), and apt is not used at all. Without it, such a host
is refused in one line naming the variable.

Shapes: :func:`load_lock` -> :class:`DebLock`; :func:`fetch` -> one verified blob path per
package (lock order); :func:`extract` -> the prefix, holding the merged ``data.tar`` trees of
every package and a receipt ``bundlegraph-debs.json``. Errors: :class:`ToolkitError` (a bad lock,
no Debian source, apt failing to find a version, a missing tool), :class:`HashMismatch` (a
downloaded .deb whose sha256 or size differs: the file is deleted, nothing is extracted).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from dataclasses import fields
from pathlib import Path
from typing import Any

from ..core import paths, proc, settings
from ..core.errors import HashMismatch, ToolFailed, ToolkitError, ToolMissing
from ..core.fsutil import atomic_dir, atomic_write_bytes, locked, parsed_once, read_json_object, sha256_file
from ..core.lightclass import frozen
from .lockread import SHA256, is_size, read_toml, row_shape

RECEIPT = "bundlegraph-debs.json"
"""The receipt :func:`extract` writes into a prefix: ``{"lock": <digest>, "packages": [...]}``."""

COMPONENTS = ("main", "contrib", "non-free")
"""Archive areas of a private sources list (Debian's areas; CUDA lives in ``non-free``)."""

# Debian policy 5.6.1 (package names), 5.6.12 (versions), dpkg-architecture names.
_NAME = re.compile(r"^[a-z0-9][a-z0-9+.-]+$")
_VERSION = re.compile(r"^([0-9]+:)?[0-9][A-Za-z0-9.+~:-]*$")
_ARCH = re.compile(r"^[a-z0-9-]+$")
_SUITE = re.compile(r"^[a-z0-9][a-z0-9.-]*$")
_REQUIRED = ("name", "version", "architecture", "suite", "sha256")
_POOL = re.compile(r"^pool/[A-Za-z0-9+._~%/-]+\.deb$")


@frozen
class DebPackage:
    """One locked package (fields as in the module docstring; ``size`` in bytes, 0: not pinned)."""

    name: str
    version: str
    architecture: str
    suite: str
    sha256: str
    size: int = 0
    path: str = ""
    """The .deb's file in the archive (``pool/main/g/gcc-12/...deb``, the Packages index's
    ``Filename``): what :func:`fetch` downloads with ``BUNDLEGRAPH_DEBIAN_ARCHIVE``; empty: apt only."""

    @property
    def spec(self) -> str:
        """``name:arch=version``, what ``apt-get download`` is asked for."""
        return f"{self.name}:{self.architecture}={self.version}"

    @property
    def filename(self) -> str:
        """The file name apt gives the .deb: ``name_version_arch.deb`` with the epoch's colon
        written ``%3a`` (apt's URI quoting of the pool file name)."""
        return f"{self.name}_{self.version.replace(':', '%3a')}_{self.architecture}.deb"


@frozen
class DebLock:
    """A whole lock file: where it was read from and its packages in file order."""

    path: Path
    packages: tuple[DebPackage, ...]

    def digest(self) -> str:
        """sha256 hex of the locked packages (name, version, architecture, suite, sha256 each,
        in file order): what identifies an extracted prefix."""
        rows = [[p.name, p.version, p.architecture, p.suite, p.sha256] for p in self.packages]
        return hashlib.sha256(json.dumps(rows).encode()).hexdigest()

    def total_size(self) -> int:
        """Sum of the pinned sizes in bytes (packages without ``size`` count 0)."""
        return sum(p.size for p in self.packages)


def _row_problems(i: int, row: object) -> list[str]:
    where = f"package.{i}"
    out = row_shape(where, row, [f.name for f in fields(DebPackage)])
    if not isinstance(row, dict):
        return out
    checks = {"name": _NAME, "version": _VERSION, "architecture": _ARCH, "suite": _SUITE, "sha256": SHA256}
    what = {
        "name": "a Debian package name",
        "version": "a Debian version",
        "architecture": "a Debian architecture (amd64, arm64, all, ...)",
        "suite": "a Debian suite name (bookworm, trixie, ...)",
        "sha256": "64 lowercase hex digits",
    }
    for k in _REQUIRED:
        v = row.get(k)
        if v is None:
            out.append(f"{where}.{k}: required key is missing ({what[k]})")
        elif not isinstance(v, str) or not checks[k].match(v):
            out.append(f"{where}.{k}: expected {what[k]}, got {v!r}")
    size = row.get("size", 1)
    if not is_size(size):
        out.append(f"{where}.size: expected a positive whole number of bytes, got {size!r}")
    path = row.get("path", "pool/x.deb")
    if not isinstance(path, str) or not _POOL.match(path):
        out.append(f"{where}.path: expected the archive's pool path of the .deb (pool/.../name.deb), got {path!r}")
    return out


def lock_problems(data: object) -> list[str]:
    """Every problem of a debs lock file's parsed TOML, one ``key.path: message`` each (empty:
    valid). Unknown keys, a missing or malformed field and a package named twice are problems."""
    if not isinstance(data, dict):
        return ["(top level): expected a table"]
    out = [f"{k}: unknown key; allowed: version, package" for k in data if k not in ("version", "package")]
    v = data.get("version", 1)
    if v != 1 or isinstance(v, bool):
        out.append(f"version: expected 1 (the only lock format), got {v!r}")
    rows = data.get("package")
    if not isinstance(rows, list) or not rows:
        out.append("package: expected one or more [[package]] tables")
        return out
    seen: dict[tuple[str, str], int] = {}
    for i, r in enumerate(rows):
        out += _row_problems(i, r)
        if isinstance(r, dict):
            k = (str(r.get("name")), str(r.get("architecture")))
            if k in seen:
                out.append(f"package.{i}.name: {k[0]}:{k[1]} is already locked by package.{seen[k]}")
            seen.setdefault(k, i)
    return out


def load_lock(path: str | os.PathLike[str]) -> DebLock:
    """Read and check a debs lock file (once per process while it is unchanged). Raises
    :class:`ToolkitError` with one line per problem, each naming the file and the key."""
    return parsed_once(Path(path), _load_lock)


def _load_lock(path: Path) -> DebLock:
    data = read_toml(path, "debs lock file")
    problems = lock_problems(data)
    if problems:
        raise ToolkitError("\n".join(f"{path}: {p}" for p in problems))
    return DebLock(path=path, packages=tuple(DebPackage(**r) for r in data["package"]))


def dump_lock(packages: list[DebPackage] | tuple[DebPackage, ...], header: str = "") -> str:
    """TOML text of a lock holding ``packages`` in the given order; ``header`` lines become
    comments at the top."""
    out = [f"# {line}".rstrip() for line in header.splitlines()]
    out += ["version = 1"]
    for p in packages:
        out += ["", "[[package]]"]
        for k in ("name", "version", "architecture", "suite", "sha256"):
            out.append(f'{k} = "{getattr(p, k)}"')
        if p.size:
            out.append(f"size = {p.size}")
        if p.path:
            out.append(f'path = "{p.path}"')
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------- apt


def _os_release() -> dict[str, str]:
    try:
        text = Path("/etc/os-release").read_text(encoding="utf-8")
    except OSError:
        return {}
    out = {}
    for line in text.splitlines():
        k, sep, v = line.partition("=")
        if sep:
            out[k.strip()] = v.strip().strip('"')
    return out


def machine_sources() -> list[tuple[str, str]]:
    """``(archive URI, suite)`` of every ``deb`` entry of the machine's apt sources, as
    ``apt-get indextargets`` reports them (apt's own parse of ``sources.list`` and
    ``sources.list.d``, one-line and deb822 forms alike). Raises :class:`ToolkitError` when
    apt is missing."""
    try:
        out = proc.run(
            ["apt-get", "indextargets", "--format", "$(TARGET_OF)\t$(REPO_URI)\t$(RELEASE)"],
            capture=True,
            echo=False,
            what="apt-get indextargets",
        ).output
    except ToolMissing:
        raise ToolkitError("this host has no apt-get; Debian packages can only be fetched on a Debian host") from None
    rows = []
    for line in out.splitlines():
        parts = line.split("\t")
        if len(parts) == 3 and parts[0] == "deb" and (parts[1], parts[2]) not in rows:
            rows.append((parts[1], parts[2]))
    return rows


def debian_archive(sources: list[tuple[str, str]], codename: str) -> str:
    """The archive URI of the machine's Debian entry: the ``deb`` source whose suite is the
    host's own codename (``bookworm``, not ``bookworm-updates`` or ``-security``). Raises
    :class:`ToolkitError` naming the codename and the suites it saw."""
    for uri, suite in sources:
        if suite == codename:
            return uri
    seen = ", ".join(sorted({s for _, s in sources})) or "none"
    raise ToolkitError(
        f"apt sources: no deb entry for this host's Debian suite {codename!r} (suites configured: {seen}); "
        "a Debian archive source is needed to fetch other suites"
    )


@frozen
class AptConfig:
    """How to run apt for one suite: ``options`` (``-o`` pairs, empty for the machine's apt)
    and ``root`` (the private configuration's directory, None for the machine's apt)."""

    suite: str
    options: tuple[str, ...] = ()
    root: Path | None = None

    def argv(self, *args: str) -> list[str]:
        """``apt-get <options> <args>``."""
        return ["apt-get", *self.options, *args]


_DEB_ARCH = {"x86_64": "amd64", "aarch64": "arm64"}
"""``uname -m`` -> Debian's architecture name (dpkg-architecture's table, the two hosts we build on)."""


def native_arch() -> str:
    """This machine's Debian architecture (``amd64``, ``arm64``)."""
    m = os.uname().machine if hasattr(os, "uname") else "x86_64"
    return _DEB_ARCH.get(m, m)


def apt_for(suite: str, sources: list[tuple[str, str]] | None = None, architectures: tuple[str, ...] = ()) -> AptConfig:
    """The :class:`AptConfig` for ``suite``: the machine's apt when one of its ``deb`` entries
    is that suite and no foreign ``architectures`` are asked for, else a private configuration
    under ``<cache>/apt/`` (module docstring) whose directories exist, with the index of every
    architecture asked for (a cross build's ``arm64`` packages on an ``amd64`` machine; ``all``
    needs none). ``sources`` defaults to :func:`machine_sources`."""
    sources = machine_sources() if sources is None else sources
    archs = sorted({native_arch(), *architectures} - {"all"})
    if any(s == suite for _, s in sources) and archs == [native_arch()]:
        return AptConfig(suite=suite)
    osr = _os_release()
    codename = osr.get("VERSION_CODENAME", "")
    if osr.get("ID") != "debian" or not codename:
        raise ToolkitError(
            f"debs: suite {suite!r} is not in this host's apt sources and this host is not Debian "
            f"(/etc/os-release ID={osr.get('ID')!r}); set BUNDLEGRAPH_DEBIAN_ARCHIVE to a Debian archive's URL "
            "(the pinned .debs are then downloaded by their pool path and sha256)"
        )
    uri = debian_archive(sources, codename)
    extra = "" if archs == [native_arch()] else " " + " ".join(archs)  # the single-arch name stays as it was
    tag = hashlib.sha256(f"{uri} {suite} {' '.join(COMPONENTS)}{extra}".encode()).hexdigest()[:6]
    root = paths.cache_root() / "apt" / f"{suite}-{tag}"
    for d in ("lists/partial", "cache/archives/partial", "preferences.d"):
        (root / d).mkdir(parents=True, exist_ok=True)
    src = root / "sources.list"
    text = f"# derived from this host's apt source {uri} {codename}\ndeb {uri} {suite} {' '.join(COMPONENTS)}\n"
    if not src.is_file() or src.read_text(encoding="utf-8") != text:
        atomic_write_bytes(src, text.encode())
    status = root / "status"
    if not status.exists():
        status.write_bytes(b"")
    opts = {
        "Dir::Etc::SourceList": src,
        "Dir::Etc::SourceParts": "-",  # no sources.list.d: only the private list
        "Dir::Etc::Preferences": "-",  # the machine's pins must not hide the suite
        "Dir::Etc::PreferencesParts": root / "preferences.d",
        "Dir::State::Lists": root / "lists",
        "Dir::State::Status": status,  # empty: apt must not read the machine's dpkg state
        "Dir::Cache": root / "cache",
        "Acquire::Languages": "none",
    }
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        # as root apt downloads as the _apt user, who cannot write into root's cache
        opts["APT::Sandbox::User"] = "root"
    options: list[str] = []
    for k, v in opts.items():
        options += ["-o", f"{k}={v}"]
    if extra:  # the indexes of a cross build's foreign architecture too
        for a in archs:
            options += ["-o", "APT::Architectures::=" + a]
    return AptConfig(suite=suite, options=tuple(options), root=root)


def update_lists(apt: AptConfig, log: Path | None = None) -> None:
    """``apt-get update`` of a private configuration's lists (the machine's are root's business)."""
    _update(apt, log)


def _update(apt: AptConfig, log: Path | None) -> None:
    if apt.root is None:
        return  # the machine's lists are the machine's business (root's `apt-get update`)
    with locked(apt.root / ".update.lock", what=f"apt lists of {apt.suite}"):
        proc.run(apt.argv("update"), log=log, what=f"apt-get update (private lists of {apt.suite})")


def _download(apt: AptConfig, pkgs: list[DebPackage], dest: Path, log: Path | None) -> None:
    try:
        proc.run(apt.argv("download", *(p.spec for p in pkgs)), cwd=dest, log=log, what="apt-get download")
    except ToolFailed as e:
        hint = (
            "the machine's apt lists may be stale: `apt-get update` as root"
            if apt.root is None
            else f"the suite {apt.suite} may no longer carry these versions; re-pin the lock"
        )
        raise ToolkitError(f"apt-get download {' '.join(p.spec for p in pkgs)} failed ({hint})\n{e}") from None


def fetch(lock: DebLock, *, log: Path | None = None) -> list[Path]:
    """The verified blob (``<cache>/blobs/sha256/<hex>``) of every package of ``lock``, in lock
    order; packages not yet cached are downloaded with ``apt-get download`` (one call per
    suite, after ``apt-get update`` of a private configuration). Every download is checked
    against the lock's sha256 (and size, when pinned) before it enters the cache. Raises
    :class:`HashMismatch` naming the lock file and package, or :class:`ToolkitError`."""
    missing = [p for p in lock.packages if not paths.blob_path(p.sha256).is_file()]
    archive = settings.get("DEBIAN_ARCHIVE")
    if missing and archive:
        return _fetch_from_archive(lock, archive.rstrip("/"), missing)
    if missing:
        tmp_root = paths.cache_root() / "tmp"
        tmp_root.mkdir(parents=True, exist_ok=True)
        with locked(paths.blob_path("0" * 64).parent / ".debs-fetch.lock", what="debs fetch"):
            missing = [p for p in missing if not paths.blob_path(p.sha256).is_file()]
            for suite in sorted({p.suite for p in missing}):
                batch = [p for p in missing if p.suite == suite]
                apt = apt_for(suite, architectures=tuple(sorted({p.architecture for p in batch})))
                _update(apt, log)
                with tempfile.TemporaryDirectory(prefix="bg-debs-", dir=tmp_root) as d:
                    _download(apt, batch, Path(d), log)
                    for p in batch:
                        _adopt(lock, p, Path(d) / p.filename)
    return [paths.blob_path(p.sha256) for p in lock.packages]


def _fetch_from_archive(lock: DebLock, archive: str, missing: list[DebPackage]) -> list[Path]:
    """Download ``missing`` from ``<archive>/<path>`` (``BUNDLEGRAPH_DEBIAN_ARCHIVE``), each
    checked against its sha256 and size; no apt. Raises :class:`ToolkitError` for a row without
    ``path`` (a lock written before pool paths were pinned: re-pin it)."""
    from ..core.download import download_many

    lost = [p.name for p in missing if not p.path]
    if lost:
        raise ToolkitError(
            f"{lock.path}: {', '.join(lost)}: no pool path pinned (path =), so BUNDLEGRAPH_DEBIAN_ARCHIVE cannot "
            "fetch it; re-pin the lock on a Debian host"
        )
    download_many([(f"{archive}/{p.path}", p.sha256, p.size or None) for p in missing])
    return [paths.blob_path(p.sha256) for p in lock.packages]


def _adopt(lock: DebLock, p: DebPackage, got: Path) -> None:
    from ..core.download import adopt  # httpx: not for loading a lock

    what = f"{lock.path}: package {p.name} {p.version} ({p.filename})"
    if not got.is_file():
        names = sorted(x.name for x in got.parent.iterdir())
        raise ToolkitError(f"{what}: apt-get download gave {names}, not {p.filename}")
    size = got.stat().st_size
    if p.size and size != p.size:
        actual = sha256_file(got)
        got.unlink()
        raise HashMismatch(f"{what}: expected sha256 {p.sha256} size {p.size}, got sha256 {actual} size {size}")
    adopt(got, p.sha256, what=what)


# ---------------------------------------------------------------- extract


def read_receipt(prefix: Path) -> dict[str, Any] | None:
    """The receipt of an extracted prefix, or None when there is none or it is unreadable."""
    return read_json_object(prefix / RECEIPT)


def extract(lock: DebLock, prefix: Path, *, log: Path | None = None, fixup: Any = None) -> Path:
    """Extract every package of ``lock`` (fetched first, :func:`fetch`) with ``dpkg-deb -x``
    into ``prefix``, in lock order (a later package's file replaces an earlier one's).

    Atomic: the packages are extracted into a fresh directory beside ``prefix``, ``fixup``
    (a callable taking that directory, e.g. rewriting a config file) runs on it, the receipt is
    written last, and only then does it replace ``prefix``; a failure leaves the previous
    prefix (or none) as it was. A prefix whose receipt already names this lock's digest is
    kept as it is. Returns ``prefix``."""
    digest = lock.digest()
    rec = read_receipt(prefix)
    if rec is not None and rec.get("lock") == digest:
        return prefix
    blobs = fetch(lock, log=log)
    with locked(prefix.parent / f".{prefix.name}.lock", what=f"prefix {prefix}"):
        rec = read_receipt(prefix)
        if rec is not None and rec.get("lock") == digest:
            return prefix
        with atomic_dir(prefix) as tmp:
            for p, blob in zip(lock.packages, blobs, strict=True):
                proc.run(["dpkg-deb", "-x", blob, tmp], log=log, echo=False, what=f"dpkg-deb -x {p.filename}")
            if fixup is not None:
                fixup(tmp)
            receipt = {
                "lock": digest,
                "lock_file": str(lock.path),
                "packages": [
                    {
                        "name": p.name,
                        "version": p.version,
                        "architecture": p.architecture,
                        "suite": p.suite,
                        "sha256": p.sha256,
                    }
                    for p in lock.packages
                ],
            }
            atomic_write_bytes(tmp / RECEIPT, json.dumps(receipt, indent=1).encode())
    return prefix


def show(apt: AptConfig, names: list[str], architecture: str, log: Path | None = None) -> list[DebPackage]:
    """Lock rows for the candidate versions of ``names`` in ``apt``'s suite, from
    ``apt-cache show`` (its ``Version``, ``Architecture``, ``SHA256`` and ``Size`` fields, the
    Packages index format of Debian policy 5.3), for writing a lock. Raises
    :class:`ToolkitError` when a name is unknown."""
    argv = ["apt-cache", *apt.options, "show", "--no-all-versions", *(f"{n}:{architecture}" for n in names)]
    try:
        out = proc.run(argv, capture=True, echo=False, log=log, what="apt-cache show").output
    except ToolFailed as e:
        raise ToolkitError(f"apt-cache show {' '.join(names)} in {apt.suite} failed\n{e}") from None
    rows: dict[str, DebPackage] = {}
    for block in out.split("\n\n"):
        f = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line and not line.startswith(" "))
        if f.get("Package") in names and f["Package"] not in rows:
            rows[f["Package"]] = DebPackage(
                name=f["Package"],
                version=f["Version"],
                architecture=f["Architecture"],
                suite=apt.suite,
                sha256=f["SHA256"],
                size=int(f["Size"]),
                path=f.get("Filename", ""),
            )
    lost = [n for n in names if n not in rows]
    if lost:
        raise ToolkitError(f"apt-cache show: {', '.join(lost)} not found in {apt.suite}")
    return [rows[n] for n in names]


def lock_pins(lock: DebLock, rel: str) -> dict[str, Any]:
    """A component set's pins for a debs lock (what names a toolkit made of it): its path as the
    spec wrote it, the lock's digest and every package's name, version and sha256. Here, not in
    :mod:`.debsrc`, so :mod:`.identity` needs nothing that imports it back."""
    return {
        "lock": rel,
        "debs": lock.digest(),
        "packages": [[p.name, p.version, p.sha256] for p in lock.packages],
    }
