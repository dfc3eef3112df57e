"""Stage ``manifest``: describe whatever bundles exist (built here or imported from an artifacts
directory) in ``dist/llama-prebuilt-manifest.json`` and ``dist/llama-prebuilt-sha256.json``
(:mod:`bundlegraph.schemas.manifest`), and write the source archive
``dist/llama.cpp-source-commit-<commit>.tar.gz``.

- A leg's bundle is ``dist/<bundle name>``, else the same name under the artifacts directory
  (copied into ``dist/`` after it passes verify). Every field of a manifest artifact is read
  back from that bundle's own info JSON, which must name the leg and the release's source
  commit — the manifest cannot disagree with what was compiled.
- The source archive holds the source tree (``.git`` left out) under
  ``llama.cpp-source-commit-<commit>/``, byte-deterministic like the bundles (:mod:`bundlegraph.pipeline.bundle.archive`).
- The SHA index lists every bundle (kind ``bundle``), the manifest (``manifest``), the source
  archive (``upstream-source``) and every paired runtime asset of every leg whose bundle is present (``runtime``;
  :mod:`bundlegraph.pipeline.paired_assets`), for plain and mix releases alike; and the release's promises
  (every promised leg's bundle, paired assets and ``[smoke] waived`` reason) and info file name,
  so that ``verify-release`` needs no spec file. A manifest entry whose smoke was waived says
  ``waived: <why>``.
- ``<state>/release/verified.json`` records, per bundle, its sha256 and whether verify passed
  (in ``package`` or here); ``publish`` reads it.

Both JSON files are written by temp file + rename, the index last.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import field, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core import paths
from ..core.errors import BundleGraphError, VerifyError
from ..core.fsutil import atomic_write_bytes, atomic_write_json, sha256_file
from ..core.lightclass import frozen, mutable
from ..schemas.asset_names import INDEX_NAME, MANIFEST_NAME, source_archive_name
from ..schemas.records import Matrix, MixPin, Release
from ..schemas.smoke_status import read_status, sidecar
from .base import Context, Prepared, TaskPlan, file_listing, run_plan, upstream_digest
from .source import source_record

NAME = "manifest"
"""The stage's name: its tasks are ``manifest:<leg>`` (:mod:`bundlegraph.pipeline.stages`)."""

if TYPE_CHECKING:  # the formats and checks are imported where a run uses them: planning needs neither
    from ..schemas.manifest import BundleInfo, Manifest, Promise, ShaIndex

VerifierFor = Callable[[str], Callable[[Path], object]]
"""``verifier_for(leg)(archive)``: verify a bundle of ``leg``; raises :class:`VerifyError`."""


def verified_path() -> Path:
    """``<state>/release/verified.json``: ``{asset: {"sha256", "verified", "leg"}}``."""
    return paths.state_dir() / "release" / "verified.json"


def read_verified() -> dict[str, dict[str, Any]]:
    try:
        verified: dict[str, dict[str, Any]] = json.loads(verified_path().read_text(encoding="utf-8"))
        return verified
    except (OSError, ValueError):
        return {}


def record_verified(asset: str, sha256: str, leg: str) -> None:
    """Note that ``asset`` (with this ``sha256``) passed verify (called by ``package``)."""
    d = read_verified()
    d[asset] = {"sha256": sha256, "verified": True, "leg": leg}
    atomic_write_json(verified_path(), d)


def write_source_archive(tree: Path, commit: str, dist: Path, commit_epoch: int | None) -> Path:
    """``dist/llama.cpp-source-commit-<commit>.tar.gz`` from ``tree`` (deterministic; ``.git``
    excluded), everything under one top-level directory of the same name."""
    from .bundle.archive import archive_epoch, entries_from_tree, write_tar_gz

    name = source_archive_name(commit)
    prefix = name[: -len(".tar.gz")]
    return write_tar_gz(dist / name, entries_from_tree(tree, prefix=prefix), archive_epoch(commit_epoch))


def locate(name: str, dist: Path, artifacts: Path | None) -> tuple[Path | None, bool]:
    """``(path, imported)`` of asset ``name``: ``dist/name``, else under ``artifacts``."""
    if (dist / name).is_file():
        return dist / name, False
    if artifacts is not None and artifacts.is_dir():
        hits = sorted(p for p in artifacts.rglob(name) if p.is_file())
        if hits:
            return hits[0], True
    return None, False


@mutable
class ManifestResult:
    """What :func:`run_manifest` wrote: the models, the bundles by leg and the problems met."""

    manifest: Manifest
    index: ShaIndex
    bundles: dict[str, Path]


def release_header(rel: Release, source_commit: str, ggml_tree: str | None) -> dict[str, Any]:
    """The header the manifest and the SHA index share (:class:`~..schemas.manifest.ReleaseHeader`):
    the source, its upstream build, the release tag, what kind of source it is and, for a mix,
    the pull requests merged (in merge order), and the source's ggml tree id."""
    prs = rel.source.prs if isinstance(rel.source, MixPin) else []
    return {
        "source_repo": rel.source_repo,
        "source_commit": source_commit,
        "upstream_tag": rel.upstream_tag,
        "release_tag": rel.tag,
        "source_ref_kind": rel.source_ref_kind,
        "merged_prs": [{"repo": p.repo, "number": p.number, "sha": p.sha, "url": p.url, "title": p.title} for p in prs],
        "ggml_tree": ggml_tree,
    }


def promises(matrix: Matrix) -> list[Promise]:
    """The index's record of every promised leg (:class:`~..schemas.manifest.Promise`), sorted by
    leg: what ``verify-release`` judges a release by without its spec files."""
    from ..schemas.manifest import Promise

    rel = matrix.release
    out = []
    for leg in sorted(matrix.promised):
        spec = matrix.legs[leg]
        out.append(
            Promise(
                leg=leg,
                asset_name=spec.bundle_name(rel.tag, rel.bundle_prefix),
                paired_assets=[p.name for p in spec.runtime.paired],
                smoke_waived=spec.smoke.waived if spec.smoke is not None else None,
            )
        )
    return out


def run_manifest(
    matrix: Matrix,
    *,
    dist: Path,
    source_tree: Path,
    source_commit: str,
    commit_epoch: int | None,
    ggml_tree: str | None = None,
    artifacts: Path | None = None,
    verifier_for: VerifierFor | None = None,
    local_dirs: list[Path] | None = None,
    client: Any = None,
    builds: dict[str, dict[str, Any]] | None = None,
) -> ManifestResult:
    """Write the source archive, manifest and index into ``dist`` (see module docstring).

    Raises :class:`BundleGraphError` when no bundle of ``matrix`` is there (naming them all; nothing
    is written), for a bundle whose info JSON disagrees with its leg or the
    release's commit, :class:`VerifyError` for an imported bundle failing verify, and
    download/hash errors for paired runtime assets."""
    from ..schemas.manifest import WAIVED, IndexEntry, Manifest, ManifestArtifact, ShaIndex
    from .bundle.archive import read_bundle_info
    from .paired_assets import hash_paired

    rel = matrix.release
    dist.mkdir(parents=True, exist_ok=True)
    verified = read_verified()
    bundles: dict[str, Path] = {}
    infos: list[BundleInfo] = []
    smoke: dict[str, str | None] = {}
    problems: list[str] = []
    for leg, spec in matrix.legs.items():
        name = spec.bundle_name(rel.tag, rel.bundle_prefix)
        path, imported = locate(name, dist, artifacts)
        if path is None:
            continue
        info = read_bundle_info(path, rel.info_file)
        if info.leg != leg or info.asset_name != name:
            problems.append(f"{name}: its {rel.info_file} describes {info.leg}/{info.asset_name}")
        if info.source_commit != source_commit or info.release_tag != rel.tag:
            problems.append(
                f"{name}: built from {info.source_commit} for {info.release_tag}, "
                f"the release is {rel.tag} at {source_commit}"
            )
        if info.signing == "pending":  # packaged with BUNDLEGRAPH_SIGN=later: never published unsigned
            problems.append(
                f"{name}: awaits signing (packaged with BUNDLEGRAPH_SIGN=later); run `bundlegraph sign-bundles` "
                f"on it first; it is not published"
            )
            continue
        sha = sha256_file(path)
        smoked = read_status(path, sha)
        if smoked is not None and smoked.status != "passed":
            problems.append(f"{name}: its smoke {smoked.status} ({sidecar(path).name}); it is not published")
            continue
        if imported or verified.get(name, {}).get("sha256") != sha:
            if verifier_for is None:
                problems.append(f"{name}: not verified (no package record with this sha256) and no verifier given")
                continue
            verifier_for(leg)(path)
            if imported:
                with tempfile.NamedTemporaryFile(dir=dist, prefix=f".{name}.", delete=False) as t:
                    tmp = Path(t.name)
                shutil.copyfile(path, tmp)
                os.replace(tmp, dist / name)
                if smoked is not None:  # its smoke result travels with it
                    atomic_write_bytes(sidecar(dist / name), sidecar(path).read_bytes())
                path = dist / name
            record_verified(name, sha, leg)
        bundles[leg] = path
        infos.append(info)
        # a waived smoke is said in the published files themselves, so that a verifier without
        # this release's spec files can tell it from a missing one (the index's promises say it too)
        smoke[name] = smoked.summary() if smoked else (f"{WAIVED}{spec.smoke.waived}" if spec.smoke else None)
    if problems:
        raise BundleGraphError("manifest: " + "; ".join(problems))
    if not bundles:  # an empty release would publish as "every check passed" (issue 41): refused
        where = f"{dist} or {artifacts}" if artifacts else str(dist)
        names = [s.bundle_name(rel.tag, rel.bundle_prefix) for s in matrix.legs.values()]
        raise BundleGraphError(
            f"manifest: no bundle to describe: none of {', '.join(names)} is in {where}; "
            f"package them first (`doit` builds the default legs, `doit package:<leg>` one leg)"
        )
    header = release_header(rel, source_commit, ggml_tree)
    manifest = Manifest(
        **header,
        artifacts=sorted(
            (ManifestArtifact.from_info(i, smoke=smoke.get(i.asset_name)) for i in infos), key=lambda a: a.asset_name
        ),
    )
    mbytes = (manifest.model_dump_json(indent=2) + "\n").encode()
    src_archive = write_source_archive(source_tree, source_commit, dist, commit_epoch)
    kinds = {**dict.fromkeys(bundles.values(), "bundle"), src_archive: "upstream-source"}
    entries: dict[str, IndexEntry] = {
        p.name: IndexEntry(kind=k, sha256=sha256_file(p), source_commit=source_commit, size=p.stat().st_size)
        for p, k in kinds.items()
    }
    entries[MANIFEST_NAME] = IndexEntry(
        kind="manifest", sha256=hashlib.sha256(mbytes).hexdigest(), source_commit=source_commit, size=len(mbytes)
    )
    dirs = [dist, *([artifacts] if artifacts else []), *(local_dirs or [])]
    paired: list[dict[str, Any]] = []
    # a paired runtime belongs to its bundle: hashed when that bundle is in the release (the
    # publish gate requires every promised bundle, so a published index holds every one)
    for leg in bundles:
        for pa in matrix.legs[leg].runtime.paired:
            if pa.name in entries:
                continue
            h = hash_paired(pa, repo=rel.source_repo, tag=rel.paired_runtime_tag, local_dirs=dirs, client=client)
            entries[pa.name] = IndexEntry(
                kind="runtime", sha256=h.sha256, source_commit=None, size=h.size, upstream_tag=rel.paired_runtime_tag
            )
            paired.append({"name": pa.name, "sha256": h.sha256, "verified": h.how, "attested": h.attested})
    index = ShaIndex(
        **header, artifacts=dict(sorted(entries.items())), promised=promises(matrix), info_file=rel.info_file
    )
    ibytes = (index.model_dump_json(indent=2) + "\n").encode()
    from ..schemas import provenance

    statement = provenance.statement(
        index_name=INDEX_NAME,
        index_bytes=ibytes,
        release=rel,
        legs=list(bundles),
        spec_files={
            "release.toml": matrix.root / "release.toml",
            **{f.name: f for leg, f in matrix.files.items() if leg in bundles},
        },
        source={
            "repo": rel.source_repo,
            "commit": source_commit,
            "archive": src_archive.name,
            "archive_sha256": entries[src_archive.name].sha256,
            "ggml_tree": ggml_tree,
        },
        bundle_infos=infos,
        paired=paired,
        env=provenance.environment(),
        builds={leg: r for leg, r in (builds or {}).items() if leg in bundles},
    )
    atomic_write_bytes(dist / MANIFEST_NAME, mbytes)
    atomic_write_bytes(dist / INDEX_NAME, ibytes)
    atomic_write_bytes(dist / provenance.PROVENANCE_NAME, provenance.render(statement))
    return ManifestResult(manifest, index, bundles)


# ---------------------------------------------------------------- graph stage


@frozen
class ManifestPlan:
    """What ``manifest`` does, resolved once before it runs: the whole ``matrix`` (every leg's
    bundle that exists is described); ``dist``; ``artifacts`` (bundles built elsewhere, or
    None); the source ``source_tree``/``source_commit``/``commit_epoch`` from the first selected
    leg's ``source:`` record."""

    matrix: Matrix
    dist: Path
    artifacts: Path | None
    source_tree: Path
    source_commit: str
    commit_epoch: int | None
    ggml_tree: str | None = None
    builds: dict[str, dict[str, Any]] = field(default_factory=dict)
    """leg -> :func:`~bundlegraph.schemas.provenance.build_recipe` of each leg configured in this work
    directory (a leg compiled on another runner has none here)."""
    consumed: dict[str, Any] = field(default_factory=dict)
    """What the prepared plan read (:func:`prepare`): every selected leg's package
    digest, the bundles, smoke results and paired assets in ``dist/`` and the artifacts
    directory (name, size, mtime), the source's digest, each configure's."""

    def key(self) -> dict[str, Any]:
        """The release and what it consumed."""
        return {"release": self.matrix.release, **self.consumed}

    def describe(self) -> dict[str, Any]:
        return {}


def build_recipes(ctx: Context) -> dict[str, dict[str, Any]]:
    """:func:`leg_recipe` of every selected leg configured in this work directory."""
    return {leg: r for leg in ctx.legs if (r := leg_recipe(leg)) is not None}


def leg_recipe(leg: str) -> dict[str, Any] | None:
    """:func:`~bundlegraph.schemas.provenance.build_recipe` of ``leg`` from its ``configure.json`` here and
    its toolkit's receipt (read from the prefix it was configured with); None when the leg was
    not configured in this work directory."""
    from ..schemas.provenance import build_recipe
    from .stage_records import read_configure

    rec = read_configure(leg)
    if rec is None:
        return None
    receipt = None
    if rec.cuda and rec.cuda.get("prefix"):
        f = Path(rec.cuda["prefix"]) / "bundlegraph-toolkit.json"
        receipt = json.loads(f.read_text(encoding="utf-8")) if f.is_file() else None
    return build_recipe(vars(rec), receipt)  # read only (dataclasses.asdict deep-copies: 9 legs, 3 ms)


def source_leg(ctx: Context) -> str:
    """The leg whose ``source:`` task the manifest (and publish) read the source from: the first
    selected leg that can fetch it on this host (a leg that compiles elsewhere refuses its source
    here unless its build is imported), else the first selected leg."""
    return next((leg for leg in ctx.legs if ctx.host_problem(leg) is None), ctx.legs[0])


def plan_manifest(ctx: Context) -> ManifestPlan:
    """The :class:`ManifestPlan` now. Raises :class:`BundleGraphError` when the source record of
    :func:`source_leg` is missing or names no commit."""
    first = source_leg(ctx)
    src = source_record(first)
    if src.commit is None:
        raise BundleGraphError(f"manifest: the source of {first} has no commit (set [source] commit in release.toml)")
    return ManifestPlan(
        matrix=ctx.matrix,
        dist=paths.dist_dir(),
        artifacts=ctx.filters.artifacts,
        source_tree=Path(src.tree),
        source_commit=src.commit,
        commit_epoch=src.epoch,
        ggml_tree=src.ggml_tree,
        builds=build_recipes(ctx),
    )


def prepare(ctx: Context) -> Prepared[ManifestPlan]:
    """``manifest``'s plan value: its :class:`ManifestPlan` with what it consumed
    (:attr:`ManifestPlan.consumed`), and its key."""
    plan = plan_manifest(ctx)
    art = ctx.filters.artifacts
    listing = file_listing(art.rglob("*"), art) if art and art.is_dir() else []
    dist = paths.dist_dir()
    bundles = file_listing(dist / ctx.bundle_name(l) for l in ctx.matrix.legs)
    smoked = file_listing(sidecar(dist / ctx.bundle_name(l)) for l in ctx.matrix.legs)
    key = {
        "packages": {l: upstream_digest(f"package:{l}") for l in ctx.legs},
        "bundles": bundles,
        "source": upstream_digest(f"source:{source_leg(ctx)}"),
        "artifacts": listing,
    }
    configured = {l: upstream_digest(f"configure:{l}") for l in ctx.legs}
    if any(v != "missing" for v in configured.values()):  # the provenance's build recipes
        key["configured"] = configured
    if smoked:  # the smoke results beside the bundles (only when there are: keys keep their form)
        key["smoke"] = smoked
    paired = sorted({pa.name for s in ctx.matrix.legs.values() for pa in s.runtime.paired})
    if paired:  # local copies of paired runtime assets are hashed from dist/ (a removed one must be seen)
        key["paired"] = file_listing(dist / n for n in paired)
    return Prepared.of(replace(plan, consumed=key))


def run(plan: ManifestPlan) -> list[Path]:
    """Write the manifest, SHA index and source archive from ``plan`` alone (:func:`run_manifest`)
    and the job summary; returns the three files."""
    from . import ci
    from .archivecheck import archive_verifier

    m = plan.matrix

    def verifier_for(leg: str) -> Callable[[Path], object]:
        spec = m.legs[leg]
        return archive_verifier(spec, m.release, base=m.legs.get(spec.merge.base) if spec.merge else None)

    # the plan's fields of the same names are run_manifest's keyword arguments
    passed = ("dist", "source_tree", "source_commit", "commit_epoch", "ggml_tree", "artifacts", "builds")
    run_manifest(m, verifier_for=verifier_for, **{k: getattr(plan, k) for k in passed})
    ci.write_summary(plan.dist, plan.dist / INDEX_NAME, m.release.info_file)
    from ..schemas.provenance import PROVENANCE_NAME

    return [
        plan.dist / MANIFEST_NAME,
        plan.dist / INDEX_NAME,
        plan.dist / PROVENANCE_NAME,
        plan.dist / source_archive_name(plan.source_commit),
    ]


def plans(ctx: Context) -> list[TaskPlan]:
    """``manifest``: after the source; describes the bundles that exist (never makes doit build
    a leg: a bare ``doit`` runs the default legs' package tasks first, ``Graph.default_tasks``
    lists them before the manifest)."""
    return [
        TaskPlan(
            stage=NAME,
            name="",
            leg=None,
            deps=[f"source:{source_leg(ctx)}"],
            prepare=partial(prepare, ctx),
            apply=partial(run_plan, run),
            doc="write the release manifest, SHA index and source archive for the bundles that exist",
        )
    ]


__all__ = [
    "NAME",
    "VerifyError",
    "plans",
    "read_verified",
    "record_verified",
    "run_manifest",
    "write_source_archive",
]
