"""Stage ``source``: fetch the llama.cpp source pin, verify it, unpack it safely into the
content-addressed cache and expose the tree with a content digest later stages key on.

Cache layout (``$BUNDLEGRAPH_CACHE/sources/<id>/``): ``tree/`` (the unpacked archive) and
``receipt.json`` (pin, archive sha256, subdirectory, tree digest, commit, commit date). ``<id>``
is the archive's sha256 (tarball, pip-sdist) or the commit (git). A lock serialises two runs
unpacking the same source. Each leg's task writes ``build/<leg>/source.json`` (a
:class:`SourceRecord`): the tree path, its digest, commit and commit date.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import tempfile
from dataclasses import asdict, replace
from functools import partial
from pathlib import Path
from typing import Any

from ..core import paths, proc
from ..core.errors import BundleGraphError, HashMismatch, HostMismatch
from ..core.fsutil import atomic_dir, atomic_write_json, locked, parsed_once, rmtree, sha256_file, tree_digest
from ..core.gitmeta import read_commit
from ..core.lightclass import frozen
from ..core.report import say
from ..schemas.records import GitPin, MixPin, PathPin, PipSdistPin, Release, SourcePin, TarballPin
from .base import Context, Prepared, TaskPlan, known, run_plan

NAME = "source"
"""The stage's name: its tasks are ``source:<leg>`` (:mod:`bundlegraph.pipeline.stages`)."""

RECEIPT = "receipt.json"


@frozen
class SourcePlan:
    """What the source stage will do: ``pin`` (the release's source pin, as JSON),
    ``cache_dir`` (where the unpacked source lives, None for a ``path`` pin), ``tree``
    (the directory later stages use), and ``base_dir`` for resolving ``path`` pins."""

    pin: dict[str, Any]
    kind: str
    cache_dir: Path | None
    tree: Path
    subdirectory: str | None

    @property
    def receipt(self) -> Path | None:
        return self.cache_dir / RECEIPT if self.cache_dir is not None else None


@frozen
class SourceRecord:
    """``build/<leg>/source.json``: ``tree`` (absolute path), ``digest`` (tree digest of
    the source, ``.git`` excluded), ``files`` (count), ``commit``, ``commit_date`` (ISO 8601),
    ``kind`` and ``origin`` (URL / requirement / path); ``ggml_tree``: ``git rev-parse
    HEAD:ggml`` of a tree that carries git metadata (None otherwise, and in older records)."""

    tree: str
    digest: str
    files: int
    commit: str | None
    commit_date: str | None
    kind: str
    origin: str
    ggml_tree: str | None = None

    @classmethod
    def read(cls, path: str | os.PathLike[str]) -> SourceRecord:
        """The record at ``path``. Raises :class:`BundleGraphError` (one line naming the file)
        when it is unreadable or not a source record. Read once per process while the file is
        unchanged (every stage of the leg reads it)."""
        try:
            return parsed_once(path, _read_source_record)
        except (ValueError, TypeError) as e:
            leg = Path(path).parent.name
            raise BundleGraphError(
                f"{path}: not a source record ({str(e).splitlines()[0]}); delete it and run source:{leg} again"
            ) from None

    @property
    def epoch(self) -> int | None:
        """Commit time as a Unix timestamp (archive timestamps), or None."""
        if not self.commit_date:
            return None
        return int(_dt.datetime.fromisoformat(self.commit_date).timestamp())


def plan_source(release: Release, release_dir: Path) -> SourcePlan:
    """Compute where the pin's tree will be. Starts no process."""
    pin = release.source
    sub = pin.subdirectory
    if isinstance(pin, PathPin):
        base = (release_dir / pin.path).resolve()
        return SourcePlan(pin.dump(), pin.kind, None, base / sub if sub else base, sub)
    pins = pin.dump()
    if isinstance(pin, GitPin):
        ident = pin.commit
    elif isinstance(pin, MixPin):
        # the base and every pin decide the merged tree; a cosmetic title does not, so it is in
        # neither the cache entry's name nor the source task's key (issue 40, item 6)
        for pr in pins.get("prs", []):
            pr.pop("title", None)
        ident = hashlib.sha256(json.dumps(pins, sort_keys=True).encode()).hexdigest()[:32]
    else:
        ident = pin.sha256
    cache_dir = paths.cache_root() / "sources" / f"{pin.kind}-{ident}"
    tree = cache_dir / "tree"
    return SourcePlan(pins, pin.kind, cache_dir, tree / sub if sub else tree, sub)


def _fetch_pip_sdist(pin: PipSdistPin, log: Path) -> Path:
    blob = paths.blob_path(pin.sha256)
    if blob.is_file():
        return blob
    with tempfile.TemporaryDirectory(prefix="bundlegraph-sdist-") as d:
        proc.run(
            [
                proc.python_exe(),
                "-m",
                "pip",
                "download",
                "--no-deps",
                "--no-binary",
                pin.name,
                "--disable-pip-version-check",
                "-d",
                d,
                pin.requirement,
            ],
            log=log,
            what=f"source: pip download {pin.requirement}",
        )
        files = [p for p in Path(d).iterdir() if p.is_file()]
        if len(files) != 1 or not files[0].name.endswith((".tar.gz", ".zip")):
            raise BundleGraphError(
                f"source: pip download {pin.requirement} gave {[p.name for p in files]}, expected one sdist"
            )
        from ..core.download import adopt

        return adopt(files[0], pin.sha256, what=f"source: sdist {files[0].name} of {pin.requirement}")


def _fetch_git(pin: GitPin, dest: Path, log: Path) -> None:
    for argv in (
        ["git", "init", "-q", str(dest)],
        ["git", "-C", str(dest), "fetch", "-q", "--depth", "1", pin.url, pin.commit],
        ["git", "-C", str(dest), "checkout", "-q", "--detach", pin.commit],
    ):
        proc.run(argv, log=log, what=f"source: git {pin.url}")


def _receipt(cache_dir: Path) -> dict[str, Any] | None:
    try:
        receipt: dict[str, Any] = json.loads((cache_dir / RECEIPT).read_text(encoding="utf-8"))
        return receipt
    except (OSError, ValueError):
        return None


def record_path(leg: str) -> Path:
    """``build/<leg>/source.json``: where ``source:<leg>`` writes its :class:`SourceRecord` (the
    one place that path is spelled)."""
    return paths.build_dir(leg) / "source.json"


def source_record(leg: str) -> SourceRecord:
    """The :class:`SourceRecord` ``source:<leg>`` wrote (:func:`record_path`): the one reader of
    that file for later stages. Raises :class:`BundleGraphError` when it is missing."""
    f = record_path(leg)
    if not f.is_file():
        raise BundleGraphError(f"{leg}: {f} is missing; run source:{leg}")
    return SourceRecord.read(f)


def source_record_if_any(leg: str) -> SourceRecord | None:
    """:func:`source_record`, or None while ``source:<leg>`` has not run (a plan made before it)."""
    f = record_path(leg)
    return SourceRecord.read(f) if f.is_file() else None


def check_upstream_tag(tree: Path, release: Release) -> None:
    """Refuse a stated ``upstream_tag`` below the tool split for a tree that has it: a tree
    whose ``tools/server/CMakeLists.txt`` builds ``llama-server-impl`` is upstream build
    >= :data:`~bundlegraph.schemas.records.IMPL_SPLIT_BUILD`, and installers gate their checks
    for the ``*-impl`` libraries on that number. Raises :class:`BundleGraphError`."""
    from ..schemas.records import IMPL_SPLIT_BUILD

    cml = tree / "tools" / "server" / "CMakeLists.txt"
    try:
        splits = "llama-server-impl" in cml.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return
    if splits and release.build_number < IMPL_SPLIT_BUILD:
        raise BundleGraphError(
            f"release.toml: upstream_tag: {release.upstream_tag} is below b{IMPL_SPLIT_BUILD}, but the source tree "
            f"already builds llama-server-impl (tools/server/CMakeLists.txt), which upstream added in "
            f"b{IMPL_SPLIT_BUILD}; state the upstream build number of the pinned commit"
        )


def run_source(plan: SourcePlan, release: Release, record_path: Path, log: Path) -> SourceRecord:
    """Fetch/verify/unpack (or reuse the cache) and write the leg's :class:`SourceRecord`.

    Raises :class:`HashMismatch`, :class:`DownloadError`, :class:`UnsafeArchive`,
    :class:`ToolFailed` with the artifact named.
    """
    pin = release.source
    if plan.cache_dir is None:  # path pin: used in place
        if not plan.tree.is_dir():
            raise BundleGraphError(f"source: path pin {plan.tree} is not a directory")
        digest, n = tree_digest(plan.tree)
        origin = str(plan.tree)
    else:
        with locked(plan.cache_dir.with_suffix(".lock"), what=f"source cache {plan.cache_dir.name}"):
            receipt = _receipt(plan.cache_dir)
            if receipt is None or not plan.tree.is_dir():
                _populate(plan, pin, log)
                receipt = _receipt(plan.cache_dir)
                assert receipt is not None
        digest, n, origin = receipt["digest"], receipt["files"], receipt["origin"]
    info = read_commit(plan.tree)
    commit = info.commit if info else pin.commit
    date = info.date if info else pin.commit_date
    if info and pin.commit and info.commit != pin.commit:
        raise BundleGraphError(
            f"source: the tree carries commit {info.commit} but the pin declares commit {pin.commit}"
        )
    check_upstream_tag(plan.tree, release)
    from .mix import ggml_tree

    rec = SourceRecord(
        tree=str(plan.tree),
        digest=digest,
        files=n,
        commit=commit,
        commit_date=date.astimezone(_dt.UTC).isoformat() if date else None,
        kind=plan.kind,
        origin=origin,
        ggml_tree=ggml_tree(plan.tree, log) if (plan.tree / ".git").exists() else None,
    )
    atomic_write_json(record_path, asdict(rec))
    return rec


def _populate(plan: SourcePlan, pin: SourcePin, log: Path) -> None:
    assert plan.cache_dir is not None
    if plan.cache_dir.exists():
        rmtree(plan.cache_dir)  # a stale, receipt-less entry from an interrupted run
    with atomic_dir(plan.cache_dir) as tmp:
        tree = tmp / "tree"
        tree.mkdir()
        if isinstance(pin, GitPin):
            _fetch_git(pin, tree, log)
            origin, archive_sha = pin.url, None
        elif isinstance(pin, MixPin):
            from .mix import fetch_and_merge

            fetch_and_merge(pin, tree, log)  # (merged commit, base sha256): checked, recorded by git
            origin, archive_sha = pin.url, pin.base.sha256
        else:
            if isinstance(pin, PipSdistPin):
                blob = _fetch_pip_sdist(pin, log)
                origin = pin.requirement
            else:
                assert isinstance(pin, TarballPin)
                from ..core.download import download

                blob = download(pin.url, pin.sha256)
                origin = pin.url
            archive_sha = sha256_file(blob)
            if archive_sha != pin.sha256:  # the cache was tampered with
                os.unlink(blob)
                raise HashMismatch(f"source: cached archive {blob} has sha256 {archive_sha}, pin {pin.sha256}")
            from ..core.extract import extract

            extract(blob, tree, strip=1)
        sub = tree / plan.subdirectory if plan.subdirectory else tree
        if not sub.is_dir():
            raise BundleGraphError(f"source: subdirectory '{plan.subdirectory}' is not in {origin}")
        digest, n = tree_digest(sub)
        atomic_write_json(
            tmp / RECEIPT,
            {
                "pin": plan.pin,
                "archive_sha256": archive_sha,
                "origin": origin,
                "subdirectory": plan.subdirectory,
                "digest": digest,
                "files": n,
            },
        )


def _read_source_record(path: Path) -> SourceRecord:
    return SourceRecord(**json.loads(path.read_text(encoding="utf-8")))


@frozen
class SourceTaskPlan:
    """What ``source:<leg>`` does: ``fetch`` (the release's :class:`SourcePlan`, shared by every
    leg: one content-addressed cache entry), ``release``, and the leg's ``record``
    (``build/<leg>/source.json``) and ``log``."""

    leg: str
    fetch: SourcePlan
    release: Release
    record: Path
    log: Path
    refusal: str | None = None

    def key(self) -> dict[str, Any]:
        """The pin. (The cache entry's receipt is an output of every source task, so a deleted
        cache entry makes them run again.) A ``path`` pin is used in place and its content can
        change under the same pin, so its key also holds the tree's content digest."""
        f = self.fetch
        if f.cache_dir is None:
            return {"pin": f.pin, "tree": tree_digest(f.tree)[0] if f.tree.is_dir() else "missing"}
        return {"pin": f.pin}

    def describe(self) -> dict[str, Any]:
        """The pin, the tree later stages use and the leg's record."""
        return {"pin": self.fetch.pin, "tree": str(self.fetch.tree), "record": str(self.record)}


def run(plan: SourceTaskPlan) -> list[Path]:
    """Fetch (or reuse) the source and write the leg's record from ``plan`` alone; returns the
    record and the cache entry's receipt. A leg that cannot start here (``refusal``: it compiles on
    another host, or its merge base bundle is nowhere) is refused first: nothing is downloaded."""
    if plan.refusal:
        raise HostMismatch(f"source:{plan.leg}: {plan.refusal}")
    rec = run_source(plan.fetch, plan.release, plan.record, plan.log)
    say(
        f"source: {rec.origin} commit {rec.commit} ({rec.commit_date}) "
        f"digest {rec.digest[:12]} ({rec.files} files) at {rec.tree}"
    )
    return [plan.record] + ([plan.fetch.receipt] if plan.fetch.receipt else [])


def moved(plan: SourceTaskPlan) -> str | None:
    """Why ``source:<leg>`` must run again although its key holds: its record names another tree
    than the pin resolves to now (issue 41). A ``path`` pin is written relative to the bundles
    directory, so after ``mv`` or ``cp -r`` of a checkout its key is unchanged while the record
    still names the old absolute tree, which every later stage reads (configure would build from
    the old copy, or fail on a missing directory); a moved ``BUNDLEGRAPH_CACHE`` does the same to
    the other pins. Re-resolving and comparing keeps the key's form, so a work directory that did
    not move stays up to date. None when the record is absent or unreadable (the key and the
    outputs' check cover those) or names the same tree."""
    f = plan.record
    if not f.is_file():
        return None
    try:
        was = Path(SourceRecord.read(f).tree)
    except BundleGraphError:
        return None
    if was == plan.fetch.tree:
        return None
    return f"{f.name} names the source tree {was}; the pin resolves to {plan.fetch.tree} now (moved or copied)"


def prepare(plan: SourceTaskPlan) -> Prepared[SourceTaskPlan]:
    """``source:<leg>``'s plan value: the plan and its key, and :func:`moved`'s reason to run."""
    why = moved(plan)
    p = Prepared.of(plan)
    return replace(p, stale=(why,)) if why else p


def plans(ctx: Context) -> list[Any]:
    """``source:<leg>`` for every selected leg (all share one content-addressed cache entry)."""
    fetch = plan_source(ctx.release, ctx.matrix.root)
    out = []
    for leg in ctx.legs:
        tp = SourceTaskPlan(
            leg=leg,
            fetch=fetch,
            release=ctx.release,
            record=record_path(leg),
            log=ctx.log(leg, "source"),
            refusal=ctx.host_problem(leg) or ctx.merge_base_problem(leg),
        )
        out.append(
            TaskPlan(
                stage=NAME,
                name=leg,
                leg=leg,
                doc=f"fetch, verify and unpack the llama.cpp source ({fetch.kind}) for {leg}",
                prepare=partial(prepare, tp),
                apply=partial(run_plan, run),
                preview=partial(known, tp),
            )
        )
    return out
