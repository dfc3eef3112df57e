"""``bundlegraph verify-release --rebuild LEG``: rebuild one leg of a release from the release's
own source archive and compare the bundle's bytes with the published one (issue 32, item 5).

What it does, in a fresh directory (kept with ``--rebuild-dir``):

1. The source archive the SHA index names (kind ``upstream-source``) is checked against the
   index's sha256 (fail closed).
2. The spec files given with ``--bundles`` must be the ones the release was built from: each
   one the provenance names (``release.toml``, the leg's and its merge base's) must have the
   sha256 it records, else the rebuild is refused naming the file and both digests.
3. The source is proven (:mod:`bundlegraph.release.source_proof`): the archive's git tree id must be the
   tree of the source commit the index names, fetched from the source repository (``source_repo``
   on GitHub, a mix pin's ``url``, or ``BUNDLEGRAPH_SOURCE_URL``); for a mix release, the
   base and every pinned pull request head are fetched and merged as the release merged them, and
   the merge must be that commit. A substituted tree is refused (:class:`HashMismatch`) naming the
   files that differ: an archive is never trusted because the release says so.
4. A copy of those specs is built with the real graph: ``doit package:LEG`` in a new work
   directory, the merge base of a merged leg taken from the release itself (``artifacts=``),
   ``SOURCE_DATE_EPOCH`` as the provenance records it, else the source archive's timestamp (one
   run stamps the source archive and the bundles with one time). Its ``[source]`` is a ``kind =
   "path"`` pin of the extracted archive (the same commit and commit date); a mix release keeps
   its mix pin (a path pin cannot carry a mix tag), so its source stage merges the same pins into
   the tree just proven.
5. The rebuilt bundle's sha256 is compared with the index's; when they differ, the members that
   differ are named.

Every compile maps the build host's roots to stable names (:mod:`bundlegraph.toolchains.prefix_maps`),
so the new directory's paths do not change the bytes.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import tempfile
from dataclasses import field
from pathlib import Path
from typing import Any

from ..core.errors import BundleGraphError
from ..core.fsutil import sha256_file
from ..core.lightclass import mutable

DODO = '''"""doit entry point of a rebuild (bundlegraph verify-release --rebuild): the graph of bundles/ beside it."""

from pathlib import Path

from doit import get_var

from bundlegraph.graph.dodo_support import load_for_doit

_graph = load_for_doit(Path(__file__).parent / "bundles", get_var)
DOIT_CONFIG = _graph.doit_config
globals().update(_graph.task_creators())
'''
"""The dodo.py of the rebuild directory: the project's own, with its bundles beside it."""


@mutable
class RebuildResult:
    """What a rebuild found: ``bundle`` (the asset name), ``published``/``rebuilt`` (sha256s),
    ``differing`` (member names whose bytes differ; empty when the bundles are identical or
    when a member list could not be compared), ``directory`` (where it was rebuilt)."""

    leg: str
    bundle: str
    published: str
    rebuilt: str
    directory: Path
    differing: list[str] = field(default_factory=list)

    @property
    def identical(self) -> bool:
        return self.published == self.rebuilt


def rebuild(dist: Path, bundles: Path, leg: str, directory: Path | None = None) -> RebuildResult:
    """Rebuild ``leg`` of the release in ``dist`` (a directory holding its assets) from its own
    source archive, with the spec files of ``bundles``; see the module docstring. ``directory``:
    where to rebuild (default: a new temporary directory, removed afterwards unless the
    bundles differ). Raises :class:`BundleGraphError` naming what is missing or does not match
    (the index, the source archive, a spec file) and when the build itself fails, and
    :class:`~bundlegraph.core.errors.HashMismatch` naming the files of a source archive that is
    not the tree of the commit it names."""
    from ..core import proc
    from ..core.extract import extract
    from ..core.report import say
    from ..schemas.asset_names import INDEX_NAME
    from ..schemas.provenance import PROVENANCE_NAME
    from ..schemas.records import MixPin
    from ..specs.loader import load_matrix
    from .source_proof import prove

    index = _json(dist / INDEX_NAME)
    arts: dict[str, Any] = index.get("artifacts") or {}
    sources = [n for n, a in arts.items() if a.get("kind") == "upstream-source"]
    if len(sources) != 1:
        raise BundleGraphError(f"--rebuild: {INDEX_NAME} names {len(sources)} source archives, expected one")
    archive = dist / sources[0]
    if not archive.is_file():
        raise BundleGraphError(
            f"--rebuild: {archive} is missing: the release's source archive is what it rebuilds from"
        )
    got = sha256_file(archive)
    if got != arts[sources[0]]["sha256"]:
        raise BundleGraphError(f"--rebuild: {sources[0]}: sha256 {got}, {INDEX_NAME} says {arts[sources[0]]['sha256']}")
    matrix = load_matrix(bundles)
    if leg not in matrix.legs:
        raise BundleGraphError(f"--rebuild {leg}: no such leg in {bundles}; legs: {', '.join(matrix.legs)}")
    spec = matrix.legs[leg]
    rel = matrix.release
    bundle = spec.bundle_name(rel.tag, rel.bundle_prefix)
    if bundle not in arts:
        raise BundleGraphError(f"--rebuild {leg}: {bundle} is not in {INDEX_NAME}")
    statement = _json(dist / PROVENANCE_NAME)
    _check_specs(statement, matrix, leg, bundles)

    commit = str(index.get("source_commit") or rel.source.commit or "")
    if not re.fullmatch(r"[0-9a-f]{40}|[0-9a-f]{64}", commit):
        raise BundleGraphError(f"--rebuild {leg}: {INDEX_NAME}: source_commit: expected a commit id, got {commit!r}")
    if rel.source.commit and rel.source.commit != commit:  # the spec files are the tag's: they decide
        raise BundleGraphError(
            f"--rebuild {leg}: {INDEX_NAME} names source commit {commit}, release.toml's [source] pins {rel.source.commit}"
        )

    root = Path(tempfile.mkdtemp(prefix="bundlegraph-rebuild-")) if directory is None else directory
    root.mkdir(parents=True, exist_ok=True)
    try:
        proof = prove(archive, rel, commit, root)
    except BaseException:
        if directory is None:
            shutil.rmtree(root, ignore_errors=True)
        raise
    say(
        f"verify-release --rebuild {leg}: {sources[0]} is the tree {proof.tree} of commit {commit} "
        f"({proof.files} files, fetched from {proof.url})"
    )
    shutil.copytree(bundles, root / "bundles", dirs_exist_ok=True)
    if not isinstance(rel.source, MixPin):
        tree = root / "source"
        if tree.exists():
            shutil.rmtree(tree)
        extract(archive, tree, strip=1)
        _pin_path_source(root / "bundles" / "release.toml", tree, commit, rel.source.commit_date)
    (root / "dodo.py").write_text(DODO, encoding="utf-8")
    work = root / "work"
    work.mkdir(exist_ok=True)
    argv = [sys.executable, "-m", "doit", "-f", str(root / "dodo.py"), f"package:{leg}", f"only_leg={leg}"]
    if spec.merge is not None:
        argv.append(f"artifacts={dist}")
    env = dict(os.environ, BUNDLEGRAPH_WORKDIR=str(work))
    env.pop("BUNDLEGRAPH_BUNDLES", None)
    env["SOURCE_DATE_EPOCH"] = _epoch(statement) or _archive_epoch(archive)
    say(f"verify-release --rebuild {leg}: building in {root}")
    r = proc.run(argv, env=env, cwd=root, log=root / "rebuild.log", check=False, what=f"rebuild of {leg}")
    if r.returncode != 0:
        raise BundleGraphError(
            f"--rebuild {leg}: the build failed (doit exited {r.returncode}); its log: {root / 'rebuild.log'}"
        )
    out = work / "dist" / bundle
    result = RebuildResult(leg, bundle, arts[bundle]["sha256"], sha256_file(out), root)
    if not result.identical:
        result.differing = _differing(dist / bundle, out)
    elif directory is None:
        shutil.rmtree(root, ignore_errors=True)
    return result


def _json(p: Path) -> dict[str, Any]:
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BundleGraphError(f"--rebuild: {p} is missing") from None
    except (OSError, ValueError) as e:
        raise BundleGraphError(f"--rebuild: {p} does not parse: {e}") from None
    if not isinstance(data, dict):
        raise BundleGraphError(f"--rebuild: {p}: expected a JSON object")
    return data


def _check_specs(statement: dict[str, Any], matrix: Any, leg: str, bundles: Path) -> None:
    """Each spec file of ``leg`` (and its merge base) that the provenance records must have its
    recorded sha256; one the provenance does not record is refused too."""
    recorded = statement.get("predicate", {}).get("buildDefinition", {}).get("externalParameters", {}).get("specs", {})
    files = {"release.toml": bundles / "release.toml"}
    spec = matrix.legs[leg]
    for lg in [leg] + ([spec.merge.base] if spec.merge else []):
        f = matrix.files.get(lg)
        if f is not None:
            files[Path(f).name] = Path(f)
    problems = []
    for name, f in sorted(files.items()):
        want = recorded.get(name)
        if want is None:
            problems.append(f"{name}: the provenance records no such spec file")
        elif sha256_file(f) != want:
            problems.append(f"{f}: sha256 {sha256_file(f)}, the release was built from {want}")
    if problems:
        raise BundleGraphError(
            "--rebuild: these are not the spec files the release was built from (check out its tag):\n  "
            + "\n  ".join(problems)
        )


_TABLE = re.compile(r"^\s*\[\[?\s*([A-Za-z0-9_.\-\"]+)\s*\]\]?\s*(#.*)?$")


def _pin_path_source(release_toml: Path, tree: Path, commit: str, commit_date: Any) -> None:
    """Replace the ``[source]`` table (and its sub-tables) of ``release_toml`` by a path pin of
    ``tree`` at ``commit``; every other line is kept as written."""
    lines = release_toml.read_text(encoding="utf-8").splitlines()
    out: list[str] = []
    skipping = False
    for line in lines:
        m = _TABLE.match(line)
        if m:
            name = m.group(1).strip('"')
            skipping = name == "source" or name.startswith("source.")
        if not skipping:
            out.append(line)
    pin = ["", "[source]", 'kind = "path"', f"path = {json.dumps(tree.as_posix())}", f'commit = "{commit}"']
    if commit_date is not None:
        pin.append(f"commit_date = {commit_date.isoformat().replace('+00:00', 'Z')}")
    release_toml.write_text("\n".join(out + pin) + "\n", encoding="utf-8")


def _epoch(statement: dict[str, Any]) -> str | None:
    """``SOURCE_DATE_EPOCH`` of the original build, from the provenance's ``startedOn``."""
    import datetime as dt

    started = statement.get("predicate", {}).get("runDetails", {}).get("metadata", {}).get("startedOn")
    if not started:
        return None
    return str(int(dt.datetime.fromisoformat(started.replace("Z", "+00:00")).timestamp()))


def _archive_epoch(archive: Path) -> str:
    """The timestamp of the source archive's members: one run writes the source archive and the
    bundles with one archive time (``SOURCE_DATE_EPOCH``, else the commit's date), so it is the
    time the rebuild's bundles need. Raises :class:`BundleGraphError` for an archive without one."""
    import tarfile

    try:
        with tarfile.open(archive) as tf:
            first = tf.next()
    except (OSError, tarfile.TarError) as e:
        raise BundleGraphError(f"--rebuild: {archive}: not a readable tar archive: {e}") from None
    if first is None:
        raise BundleGraphError(f"--rebuild: {archive}: empty")
    return str(int(first.mtime))


def _differing(published: Path, rebuilt: Path) -> list[str]:
    """Member names whose bytes differ, or that only one of the two archives has."""
    from ..pipeline.bundle.archive import member_names, read_member

    a, b = set(member_names(published)), set(member_names(rebuilt))
    return sorted((a ^ b) | {n for n in a & b if read_member(published, n) != read_member(rebuilt, n)})
