"""Stage ``publish``: the coverage gate. Nothing is published unless the whole release is there.

:func:`gate` lists every problem at once; :func:`run_publish` refuses (:class:`PublishRefused`,
one line per missing item) or writes ``dist/release-assets.txt`` — the files to upload, one
name per line, sorted — by temp file + rename. Checks:

- the run is not filtered (``only_profile``/``only_leg``): a filtered run can never publish;
- no leg is a local build (``archs=``/``toolkit_source=`` overrides, :mod:`bundlegraph.backends.cuda.overrides`);
- the manifest and SHA index exist, parse, and name this release's tag and source commit; the
  manifest's sha256 is the one the index lists;
- every promised leg (every spec unless ``promised = false``) has its bundle in ``dist/``,
  non-empty, recorded as verified with its current sha256, listed in the index as a ``bundle``
  with that sha256, and in the manifest;
- the source archive (``llama.cpp-source-commit-<commit>.tar.gz``) is present and hashed;
  every paired runtime asset of every promised leg is in the index (kind ``runtime``);
- coverage: every host class a promised leg claims (its install kind x the SMs its archs name
  x a driver of its runtime line; a CPU leg: a host of its os/arch without an NVIDIA GPU) gets
  a bundle of that install kind from the manifest, by the installer's selection rules
  (:func:`bundlegraph.installer.selection.coverage_problems`). This catches a leg dropped from the
  release, a lost SM, a CPU bundle chosen for a CUDA host;
- the release's coverage rules (``[coverage]`` of ``release.toml``: class sets equal across
  CUDA lines, required bundles) hold for the bundles in ``dist/``
  (:func:`bundlegraph.installer.coverage.rule_problems`), each missing bundle named with its rule.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import field, replace
from functools import partial
from pathlib import Path
from typing import Any

from ..core import paths
from ..core.errors import BundleGraphError
from ..core.fsutil import atomic_write_bytes, sha256_file
from ..core.lightclass import frozen
from ..core.report import say
from ..schemas.asset_names import INDEX_NAME, MANIFEST_NAME, source_archive_name
from ..schemas.records import Matrix
from ..schemas.smoke_status import read_status, sidecar
from .base import Context, Prepared, TaskPlan, file_listing, run_plan, upstream_digest
from .manifest import read_verified, source_leg
from .source import source_record

NAME = "publish"
"""The stage's name: its tasks are ``publish:<leg>`` (:mod:`bundlegraph.pipeline.stages`)."""

ASSET_LIST = "release-assets.txt"


class PublishRefused(BundleGraphError):
    """The coverage gate refused; ``missing`` holds one line per problem."""

    def __init__(self, tag: str, missing: list[str]):
        self.missing = missing
        super().__init__(
            "\n".join(
                [f"publish {tag}: refused, {len(missing)} item(s) missing or wrong:", *("  - " + m for m in missing)]
            )
        )


def _load(path: Path, model: Any) -> Any:
    try:
        return model.model_validate_json(path.read_bytes())
    except FileNotFoundError:
        return None
    except ValueError as e:
        raise PublishRefused("?", [f"{path.name} is invalid: {e}"]) from None


def gate(
    matrix: Matrix, dist: Path, *, filtered: str | None, source_commit: str | None, git_ref: str = ""
) -> tuple[list[str], list[str]]:
    """``(problems, assets)``: every reason to refuse, and the asset names to upload."""
    rel = matrix.release
    probs: list[str] = []
    if filtered:
        probs.append(f"the run is filtered ({filtered}); a filtered run can never publish — run without filters")
    from ..schemas.manifest import Manifest, ShaIndex

    manifest: Manifest | None = _load(dist / MANIFEST_NAME, Manifest)
    index: ShaIndex | None = _load(dist / INDEX_NAME, ShaIndex)
    if manifest is None:
        probs.append(f"{MANIFEST_NAME}: missing (run the manifest task)")
    if index is None:
        probs.append(f"{INDEX_NAME}: missing (run the manifest task)")
    arts = index.artifacts if index else {}
    for doc in (d for d in (manifest, index) if d is not None):
        if doc.release_tag != rel.tag or (source_commit and doc.source_commit != source_commit):
            probs.append(
                f"{type(doc).__name__} is for {doc.release_tag} at {doc.source_commit}, "
                f"the release is {rel.tag} at {source_commit}"
            )
    if manifest is not None and index is not None:
        mh = hashlib.sha256((dist / MANIFEST_NAME).read_bytes()).hexdigest()
        if MANIFEST_NAME not in arts or arts[MANIFEST_NAME].sha256 != mh:
            probs.append(f"{MANIFEST_NAME}: its sha256 {mh[:12]}… is not the one the index lists")
    in_manifest = {a.asset_name for a in manifest.artifacts} if manifest else set()
    verified = read_verified()
    from ..schemas.provenance import PROVENANCE_NAME

    assets = [MANIFEST_NAME, INDEX_NAME]
    if not (dist / PROVENANCE_NAME).is_file():
        probs.append(f"{PROVENANCE_NAME}: the provenance statement is missing (the manifest task writes it)")
    else:
        assets.append(PROVENANCE_NAME)
    for leg in matrix.promised:
        spec = matrix.legs[leg]
        name = spec.bundle_name(rel.tag, rel.bundle_prefix)
        if spec.local is not None:  # a local build (archs=, toolkit_source=)
            probs.append(
                f"{name}: a local build of {leg} (archs=/toolkit_source= override) is never published; "
                f"run without BUNDLEGRAPH_ARCHS / BUNDLEGRAPH_TOOLKIT_SOURCE"
            )
        p = dist / name
        for pa in spec.runtime.paired:  # listed whether or not the bundle is there: every item at once
            pe = arts.get(pa.name)
            if pe is None or pe.kind != "runtime":
                probs.append(f"{pa.name}: paired runtime of {leg} is not hashed in {INDEX_NAME}")
            elif (dist / pa.name).is_file():
                assets.append(pa.name)
        if not p.is_file():
            probs.append(f"{name}: bundle of promised leg {leg} is missing")
            continue
        if p.stat().st_size == 0:
            probs.append(f"{name}: bundle of promised leg {leg} is empty")
            continue
        sha = sha256_file(p)
        smoked = read_status(p, sha)
        if (smoked is None or smoked.status != "passed") and spec.smoke is None:
            probs.append(
                f"{name}: bundle of promised leg {leg} has no passed smoke for these bytes "
                f"({sidecar(p).name} {'says ' + smoked.status if smoked else 'missing'}): run smoke:{leg} "
                f"where its bundle can start, or say why none can in its spec ([smoke] waived = ...)"
            )
        if verified.get(name, {}).get("sha256") != sha:
            probs.append(
                f"{name}: bundle of promised leg {leg} is not verified (no verify record for sha256 {sha[:12]}…)"
            )
        e = arts.get(name)
        if e is None or e.kind != "bundle":
            probs.append(f"{name}: bundle of promised leg {leg} is not hashed in {INDEX_NAME}")
        elif e.sha256 != sha:
            probs.append(f"{name}: sha256 {sha[:12]}… differs from the index's {e.sha256[:12]}…")
        if manifest is not None and name not in in_manifest:
            probs.append(f"{name}: bundle of promised leg {leg} is not in {MANIFEST_NAME}")
        assets.append(name)
    if manifest is not None:
        # every host class a promised leg claims gets a bundle of that leg's install kind, by
        # the installer's rules, from the manifest written from the built files (claims of a leg
        # whose bundle is missing are that missing bundle, listed above)
        from ..installer.selection import coverage_problems

        present = {
            leg
            for leg in matrix.promised
            if (dist / matrix.legs[leg].bundle_name(rel.tag, rel.bundle_prefix)).is_file()
        }
        probs += [f"coverage: {p}" for p in coverage_problems(matrix, manifest, index, legs=present)]
        # the release's own rules ([coverage] of release.toml): judged on the bundles in dist/,
        # whatever the specs promise (a leg dropped or set promised = false does not escape them)
        from ..installer.coverage import offers_of_manifest, rule_problems

        probs += rule_problems(
            rel.coverage, offers_of_manifest(manifest.artifacts, dist), prefix=rel.bundle_prefix, tag=rel.tag
        )
    ref = git_ref
    if ref.startswith("refs/tags/") and ref.removeprefix("refs/tags/") != rel.tag:
        probs.append(
            f"release.toml: tag: '{rel.tag}' is not the git tag being released "
            f"('{ref.removeprefix('refs/tags/')}'): installers void a SHA index whose release_tag is not "
            f"the GitHub release's tag; set tag (and upstream_tag) in release.toml, or push the tag it names"
        )
    src = source_archive_name(source_commit or (index.source_commit if index else "unknown"))
    se = arts.get(src)
    if not (dist / src).is_file():
        probs.append(f"{src}: source archive is missing")
    elif se is None or se.kind != "upstream-source" or se.sha256 != sha256_file(dist / src):
        probs.append(f"{src}: source archive is not hashed (kind upstream-source) in {INDEX_NAME}")
    assets.append(src)
    return probs, sorted(set(assets))


def run_publish(
    matrix: Matrix, dist: Path, *, filtered: str | None, source_commit: str | None, git_ref: str = ""
) -> Path:
    """Apply :func:`gate`; on success write ``dist/release-assets.txt`` and return it."""
    probs, assets = gate(matrix, dist, filtered=filtered, source_commit=source_commit, git_ref=git_ref)
    if probs:
        raise PublishRefused(matrix.release.tag, probs)
    out = dist / ASSET_LIST
    atomic_write_bytes(out, ("\n".join(assets) + "\n").encode())
    return out


# ---------------------------------------------------------------- graph stage


@frozen
class PublishPlan:
    """What ``publish`` checks, resolved once before it runs: the whole ``matrix``, ``dist``,
    ``filtered`` (the active load-time filters as text, or None), ``source_commit`` (from the
    first leg's ``source:`` record) and ``git_ref`` (``GITHUB_REF`` of the CI run, "" elsewhere:
    a tag being released must be the release's tag)."""

    matrix: Matrix
    dist: Path
    filtered: str | None
    source_commit: str | None
    git_ref: str
    consumed: dict[str, Any] = field(default_factory=dict)
    """What the prepared plan read (:func:`prepare`): the manifest's digest and the files in
    ``dist/`` (name, size, mtime)."""

    def key(self) -> dict[str, Any]:
        """The filters and what it consumed: any file added, removed or rewritten in ``dist/`` runs
        the gate again."""
        return {"filtered": self.filtered, **self.consumed}

    def describe(self) -> dict[str, Any]:
        return {}


def _filtered(ctx: Context) -> str | None:
    f = ctx.filters
    return ", ".join(f"{k}={v}" for k, v in (("only_profile", f.only_profile), ("only_leg", f.only_leg)) if v) or None


def plan_publish(ctx: Context) -> PublishPlan:
    """The :class:`PublishPlan` now (reads the first leg's source record; raises when missing)."""
    return PublishPlan(
        matrix=ctx.matrix,
        dist=paths.dist_dir(),
        filtered=_filtered(ctx),
        source_commit=source_record(source_leg(ctx)).commit,
        git_ref=os.environ.get("GITHUB_REF", ""),
    )


def prepare(ctx: Context) -> Prepared[PublishPlan]:
    """``publish``'s plan value: its key (the manifest's digest, the filters, the files in dist/)
    and its plan."""
    plan = plan_publish(ctx)
    # the gate judges what is in dist/ now: any file added, removed or rewritten there runs it again
    listing = file_listing(p for p in plan.dist.iterdir() if p.name != ASSET_LIST) if plan.dist.is_dir() else []
    return Prepared.of(replace(plan, consumed={"manifest": upstream_digest("manifest"), "dist": listing}))


def run(plan: PublishPlan) -> list[Path]:
    """Apply the gate from ``plan`` alone (:func:`run_publish`); returns the asset list."""
    out = run_publish(
        plan.matrix, plan.dist, filtered=plan.filtered, source_commit=plan.source_commit, git_ref=plan.git_ref
    )
    n = len(out.read_text(encoding="utf-8").split())
    say(
        f"publish {plan.matrix.release.tag}: every promised bundle, runtime and host class is covered; "
        f"{n} assets to upload are listed in {out}"
    )
    return [out]


def plans(ctx: Context) -> list[TaskPlan]:
    """``publish``: the gate after the manifest; refused in a filtered run."""
    return [
        TaskPlan(
            stage=NAME,
            name="",
            leg=None,
            deps=["manifest"],
            prepare=partial(prepare, ctx),
            apply=partial(run_plan, run),
            doc="coverage gate: refuse unless every promised bundle and paired runtime is present, "
            "verified and hashed; then list the assets to upload",
        )
    ]
