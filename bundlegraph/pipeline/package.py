"""Stage ``package:<leg>``: the leg's tree (merged tree, or the build's output directory) ->
``dist/<bundle name>`` (``.zip`` Windows, ``.tar.gz`` Linux), byte-deterministic.

Steps (:func:`run_package`):

1. select files by the spec's ``[package] keep``/``exclude`` globs (``*`` within one path
   part, ``**`` any depth) on POSIX relative paths; add the toolchain runtime files
   (:mod:`.runtimes`); check every ``required`` name is there;
2. signing hook (:mod:`.sign`) on copies of the PE files this leg built, never others'; with
   ``BUNDLEGRAPH_SIGN=later`` none runs: the info JSON says ``signing: pending`` and
   ``bundlegraph sign-bundles`` (:mod:`bundlegraph.release.signbundles`) signs the bundle in a job that holds
   the signing secret and runs no build code;
3. ``THIRD_PARTY_LICENSES.txt``: the source tree's ``LICENSE`` + ``licenses/*``, plus NVIDIA's
   license when a CUDA runtime file is shipped;
4. pack without the info JSON into a temp archive and run verify on that archive -> findings
   (machine, fatbin SMs); write the info JSON (:class:`BundleInfo`) with them; pack the final
   temp archive, verify it again (findings must not change) and rename it into place.

A failure at any step (including an interruption) leaves no archive: the previous bundle is
removed first and temp files are deleted. Archive timestamps: :func:`bundlegraph.pipeline.bundle.archive.archive_epoch`.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core import paths, settings
from ..core.errors import BundleGraphError, VerifyError
from ..core.fsutil import atomic_write_json, sha256_file
from ..core.lightclass import frozen
from ..core.platforms import platform
from ..core.report import say
from ..installer.entry import entry_side
from ..schemas.records import BundleSpec, Release
from .base import Context, Prepared, TaskPlan, leg_task, upstream_digest
from .manifest import leg_recipe, record_verified
from .merge import LICENSES_FILE, MergeRecord
from .source import source_record
from .stage_records import read_build

NAME = "package"
"""The stage's name: its tasks are ``package:<leg>`` (:mod:`bundlegraph.pipeline.stages`)."""

if TYPE_CHECKING:  # imported where a run uses them: planning needs neither the formats nor the checks
    from ..schemas.manifest import BundleInfo, ImportedBuild, RuntimeFileInfo, VerifyFindings
    from .bundle.runtimes import RuntimeFile

Verifier = Callable[[Path], "VerifyFindings"]
"""``verifier(archive) -> findings``; raises :class:`VerifyError` listing failures."""


def glob_regex(pattern: str) -> re.Pattern[str]:
    """A POSIX-path glob as a regex: ``**/`` any directories, ``**`` anything, ``*`` and ``?``
    within one path part, ``[...]`` a class."""
    i, out = 0, []
    while i < len(pattern):
        c = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
            continue
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            j = pattern.find("]", i)
            if j < 0:
                out.append(re.escape(c))
            else:
                out.append("[" + pattern[i + 1 : j].replace("\\", "\\\\") + "]")
                i = j
        else:
            out.append(re.escape(c))
        i += 1
    return re.compile("^" + "".join(out) + "$")


def selector(keep: list[str], exclude: list[str]) -> Callable[[str], bool]:
    """``sel(relpath)``: kept by some ``keep`` glob and by no ``exclude`` glob."""
    k = [glob_regex(p) for p in keep]
    x = [glob_regex(p) for p in exclude]
    return lambda rel: any(r.match(rel) for r in k) and not any(r.match(rel) for r in x)


@frozen
class PackageInputs:
    """Everything ``package`` consumes.

    ``tree``: the files to pack; ``source_tree``/``source_commit``/``source_digest``/
    ``commit_epoch``: from the leg's :class:`SourceRecord`; ``own_files``: relpaths of files this
    leg built (signing touches only these PE files; None = every PE file of ``tree`` not shipped
    as runtime); ``runtime``: runtime files to add (toolchain ones, and toolkit ones for a leg
    without merge); ``prior_runtime``: runtime records of files already in ``tree`` (merge);
    ``toolkit_prefix``/``toolkit_version``: the target toolkit (NVIDIA license, info JSON);
    ``merged_from``: the base asset; ``imported``: provenance of build output made on other
    runners (this leg's and its base's), written into the info JSON."""

    spec: BundleSpec
    release: Release
    tree: Path
    dest: Path
    source_tree: Path
    source_commit: str
    source_digest: str
    commit_epoch: int | None
    runtime: list[RuntimeFile] = field(default_factory=list)
    prior_runtime: list[RuntimeFileInfo] = field(default_factory=list)
    own_files: list[str] | None = None
    toolkit_prefix: Path | None = None
    toolkit_version: str | None = None
    merged_from: str | None = None
    imported: list[ImportedBuild] = field(default_factory=list)
    sdk: dict[str, Any] | None = None
    """A HIP leg's pinned TheRock SDK (:meth:`bundlegraph.backends.hip.sdk.SdkPlan.receipt`), for the
    info JSON's ``sdk``; None for other legs."""
    recipe: dict[str, Any] | None = None
    """How the leg compiled here (:func:`~bundlegraph.pipeline.manifest.leg_recipe`, each toolkit
    component by :data:`~bundlegraph.schemas.provenance.TOOLKIT_KEYS`), for the info JSON's ``build``;
    None for an imported build."""


def build_info(inp: PackageInputs, signing: str, runtime: list[RuntimeFileInfo], found: VerifyFindings) -> BundleInfo:
    """The bundle's info JSON model (fields documented in :mod:`bundlegraph.schemas.manifest`).
    The backend's own fields come from its package (:func:`~bundlegraph.installer.entry.entry_side`):
    a CUDA bundle's supported SMs are those its GPU code runs on, from the SASS targets verify
    found in its fatbins (``found.fatbin_sass``); [] for a CPU leg."""
    from ..schemas.manifest import BundleInfo

    s, r = inp.spec, inp.release
    own = entry_side(s.backend).fields(s, list(found.fatbin_sass))  # the backend's fields (CUDA's SMs)
    sms = own.supported_sms
    return BundleInfo(
        asset_name=inp.dest.name,
        leg=s.id,
        os=s.os,
        arch=s.arch,
        install_kind=s.install_kind,
        source_repo=r.source_repo,
        source_commit=inp.source_commit,
        source_digest=inp.source_digest,
        upstream_tag=r.upstream_tag,
        release_tag=r.tag,
        platform=f"{s.os}-{s.arch}",
        profile=s.profile_name,
        archs=own.archs,
        bundle_profile=s.profile_name,
        runtime_line=s.profile.line,
        coverage_class=s.profile.klass,
        bundle_rank=s.profile.rank,
        toolkit_version=inp.toolkit_version or own.toolkit_version,
        supported_sms=sms,
        min_sm=min(sms) if sms else None,
        max_sm=max(sms) if sms else None,
        ggml_backend_dl=bool(s.cmake_bool("GGML_BACKEND_DL", False)),
        merged_from=inp.merged_from,
        runtime_files=runtime,
        external_runtime=list(s.runtime.external),
        paired_assets=[p.name for p in s.runtime.paired],
        signing=signing,
        verify=found,
        imported_builds=list(inp.imported),
        build=inp.recipe,
        gfx_target=own.gfx_target,
        mapped_targets=own.mapped_targets,
        sdk=inp.sdk,
    )


def _collect(inp: PackageInputs) -> tuple[dict[str, Path], dict[str, bool]]:
    sel = selector(inp.spec.package.keep, inp.spec.package.exclude)
    files: dict[str, Path] = {}
    links: dict[str, bool] = {}
    if not inp.tree.is_dir():
        raise BundleGraphError(f"package:{inp.spec.id}: input tree {inp.tree} does not exist")
    for p in sorted(inp.tree.rglob("*")):
        rel = p.relative_to(inp.tree).as_posix()
        if (p.is_file() or p.is_symlink()) and sel(rel):
            files[rel] = p
            links[rel] = p.is_symlink()
    for rf in inp.runtime:
        if rf.name in files and files[rf.name].read_bytes() != rf.path.read_bytes():
            raise BundleGraphError(
                f"package:{inp.spec.id}: runtime file {rf.name} ({rf.path}) clashes with a "
                f"different {rf.name} in {inp.tree}"
            )
        files[rf.name] = rf.path
        links[rf.name] = False
    from ..checks.content import missing_required

    missing = [f.file for f in missing_required(files, inp.spec.required, fold=platform(inp.spec.os).fold)]
    if missing:
        raise BundleGraphError(
            f"package:{inp.spec.id}: {inp.tree} lacks required file(s) {', '.join(missing)} "
            f"(spec key 'required', or excluded by [package] patterns)"
        )
    return files, links


def _checked(verifier: Verifier, archive: Path, name: str) -> VerifyFindings:
    try:
        found = verifier(archive)
    except VerifyError as e:  # name the bundle, not the temp file
        raise VerifyError(e.failures, subject=name) from None
    if not found.passed:
        raise VerifyError(["verify reported failure"], subject=name)
    return found


def run_package(
    inp: PackageInputs,
    verifier: Verifier,
    *,
    log: Path | None = None,
    env: dict[str, str] | None = None,
    sign_later: bool = False,
) -> BundleInfo:
    """Pack, sign, verify and write ``inp.dest`` (see the module docstring). Returns the info
    written into the bundle. ``sign_later``: run no signer; a leg whose spec signs gets
    ``signing: pending`` (``verifier`` must then not require signatures). Raises
    :class:`BundleGraphError` subclasses (``VerifyError``, ``SigningError``, ``ArchiveError``)
    naming the leg and file."""
    from .bundle.archive import Entry, archive_epoch, write_archive
    from .bundle.runtimes import third_party_text, toolkit_licenses
    from .bundle.sign import is_pe, sign_files

    s = inp.spec
    inp.dest.parent.mkdir(parents=True, exist_ok=True)
    inp.dest.unlink(missing_ok=True)
    epoch = archive_epoch(inp.commit_epoch)
    files, links = _collect(inp)
    shipped = {rf.name for rf in inp.runtime} | {r.name for r in inp.prior_runtime}
    own = set(inp.own_files) if inp.own_files is not None else {k for k in files if Path(k).name not in shipped}
    infos = [*(rf.info for rf in inp.runtime), *inp.prior_runtime]
    cuda_shipped = any(r.origin == "toolkit" for r in infos)
    if cuda_shipped and inp.toolkit_prefix is None:
        raise BundleGraphError(
            f"package:{s.id}: ships CUDA runtime files but no toolkit prefix was given (needed for NVIDIA's license)"
        )
    nvidia = toolkit_licenses(inp.toolkit_prefix, infos) if cuda_shipped and inp.toolkit_prefix is not None else []
    licenses = third_party_text(inp.source_tree, nvidia)
    runtime = sorted([*inp.prior_runtime, *(rf.info for rf in inp.runtime)], key=lambda r: r.name)
    with tempfile.TemporaryDirectory(prefix=f".{s.id}-sign-", dir=inp.dest.parent) as sd:
        to_sign = [k for k in files if k in own and not links[k] and is_pe(files[k])]
        signed: list[Path] = []
        for k in to_sign:
            cp = Path(sd) / k
            cp.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(files[k], cp)
            files[k] = cp
            signed.append(cp)
        if sign_later and s.signing != "none":
            outcome: str = "pending"
        else:
            outcome = sign_files(signed, leg=s.id, signing=s.signing, env=env, log=log)
        entries = [Entry(k, link=str(p.readlink())) if links[k] else Entry(k, path=p) for k, p in files.items()]
        entries.append(Entry(LICENSES_FILE, data=licenses))
        suffix = s.archive_suffix
        probe = inp.dest.with_name(f".{inp.dest.name}.probe{suffix}")
        staged = inp.dest.with_name(f".{inp.dest.name}.staged{suffix}")
        try:
            write_archive(probe, entries, epoch)
            found = _checked(verifier, probe, inp.dest.name)
            info = build_info(inp, outcome, runtime, found)
            entries.append(Entry(inp.release.info_file, data=(info.model_dump_json(indent=2) + "\n").encode()))
            write_archive(staged, entries, epoch)
            again = _checked(verifier, staged, inp.dest.name)
            if again != found:
                raise VerifyError([f"findings changed between passes: {found} vs {again}"], subject=inp.dest.name)
            staged.replace(inp.dest)
        finally:
            probe.unlink(missing_ok=True)
            staged.unlink(missing_ok=True)
    return info


# ---------------------------------------------------------------- graph stage


@frozen
class PackagePlan:
    """What ``package:<leg>`` does, resolved once before it runs: ``inputs`` (the
    :class:`PackageInputs`, from the spec, ``source:<leg>``'s record and ``merge:<leg>``'s
    ``merge.json``) without the toolchain runtime files, which the run resolves (and hashes)
    under ``redist_root`` when ``toolchain_runtime`` is set, and without the merge record's
    runtime and provenance entries (``merge_record``), which the run validates (so an up-to-date
    check never imports the formats); ``base_spec`` (the merge base's spec, for the archive
    verifier); ``log``; ``receipt`` (``build/<leg>/package.json``)."""

    inputs: PackageInputs
    merge_record: MergeRecord
    base_spec: BundleSpec | None
    toolchain_runtime: bool
    redist_root: Path | None
    log: Path
    receipt: Path
    sign_later: bool = False
    """``BUNDLEGRAPH_SIGN=later``: package unsigned (``signing: pending``) for ``sign-bundles``."""
    consumed: dict[str, Any] = field(default_factory=dict)
    """What the prepared plan read (:func:`prepare`): ``tree`` (merge's output digest), ``source``
    (source's), ``epoch`` (``SOURCE_DATE_EPOCH``), ``signer`` (whether a signing command is set) and
    ``recipe`` (the leg's build recipe, written into the info JSON)."""

    def key(self) -> dict[str, Any]:
        """The spec, the release and what it consumed."""
        return {"spec": self.inputs.spec, "release": self.inputs.release, **self.consumed}

    def describe(self) -> dict[str, Any]:
        return {}


def plan_package(ctx: Context, leg: str) -> PackagePlan:
    """The :class:`PackagePlan` of ``leg`` now: reads ``source:<leg>``'s record and
    ``merge:<leg>``'s ``merge.json``. Raises :class:`BundleGraphError` when one is missing or the
    source has no commit."""
    spec = ctx.spec(leg)
    src = source_record(leg)
    if src.commit is None:
        raise BundleGraphError(f"package:{leg}: the source has no commit (set [source] commit in release.toml)")
    sdk = ctx.leg(leg).sdk
    toolkit = sdk.info_toolkit() if sdk is not None else None  # CUDA's: the info file's toolkit and its licenses
    bdir = paths.build_dir(leg)
    rec = MergeRecord.read(bdir / "merge.json")
    inp = PackageInputs(
        spec=spec,
        release=ctx.release,
        dest=paths.dist_dir() / ctx.bundle_name(leg),
        source_tree=Path(src.tree),
        source_commit=src.commit,
        source_digest=src.digest,
        commit_epoch=src.epoch,
        toolkit_prefix=toolkit[0] if toolkit else None,
        toolkit_version=toolkit[1] if toolkit else None,
        tree=bdir / "merged",
        own_files=rec.backend_files,
        merged_from=rec.base_asset or None,
        sdk=sdk.bundle_info() if sdk is not None else None,
    )
    toolchain = any(s.from_ == "toolchain" for s in spec.runtime.ships)
    redist_root = None
    if toolchain:
        from .bundle.runtimes import msvc_redist_root

        redist_root = msvc_redist_root()
    return PackagePlan(
        inputs=inp,
        merge_record=rec,
        base_spec=ctx.matrix.legs.get(spec.merge.base) if spec.merge else None,
        toolchain_runtime=toolchain,
        redist_root=redist_root,
        log=ctx.log(leg, "package"),
        receipt=bdir / "package.json",
    )


def _provenance(leg: str, rec: MergeRecord) -> list[ImportedBuild]:
    """The base's imported builds (from the merge record), then this leg's own (``build.json``)."""
    from ..schemas.manifest import ImportedBuild

    out = [ImportedBuild.model_validate(b) for b in rec.base_imported]
    own = read_build(leg)
    if own is not None and own.imported is not None:
        out.append(ImportedBuild(leg=leg, source=own.imported["from"], files=own.imported["files"]))
    return out


def _recipe(leg: str) -> dict[str, Any] | None:
    """The leg's build recipe for its info JSON: how it compiled in this work directory, None
    when its build was imported (a configure record left from an earlier local build is not
    how these files were made)."""
    own = read_build(leg)
    if own is not None and own.imported is not None:
        return None
    from ..schemas.provenance import TOOLKIT_KEYS

    recipe = leg_recipe(leg)
    if recipe is None:
        return None
    if "toolkit" in recipe:  # each component by what it is, not where it was downloaded from
        recipe["toolkit"] = [{k: c.get(k) for k in TOOLKIT_KEYS} for c in recipe["toolkit"]]
    return recipe


def prepare(ctx: Context, leg: str) -> Prepared[PackagePlan]:
    """``package:<leg>``'s plan value: its :class:`PackagePlan` with the merged tree's digest,
    the source's, ``SOURCE_DATE_EPOCH``, whether a signing command is set and the leg's build
    recipe (for the info JSON); and its key."""
    consumed: dict[str, Any] = {
        "tree": upstream_digest(f"merge:{leg}"),
        "source": upstream_digest(f"source:{leg}"),
        "epoch": os.environ.get("SOURCE_DATE_EPOCH"),
        "signer": bool(settings.get("SIGN_COMMAND")),
        "sign": settings.get("SIGN"),
    }
    plan = plan_package(ctx, leg)
    # the recipe itself, not configure's digest: a configure that ran again the same way (a
    # toolkit component changed) leaves the bundle as it is
    recipe = _recipe(leg)
    consumed["recipe"] = recipe
    later = consumed["sign"] == "later"
    return Prepared.of(replace(plan, inputs=replace(plan.inputs, recipe=recipe), consumed=consumed, sign_later=later))


def run(plan: PackagePlan) -> list[Path]:
    """Pack, sign and verify from ``plan`` alone; record the verified sha256; returns the bundle
    and ``package.json``."""
    from ..schemas.manifest import RuntimeFileInfo
    from . import ci
    from .archivecheck import archive_verifier
    from .bundle.runtimes import resolve_shipped

    rec = plan.merge_record
    inp = replace(
        plan.inputs,
        prior_runtime=[RuntimeFileInfo.model_validate(r) for r in rec.runtime],
        imported=_provenance(plan.inputs.spec.id, rec),
    )
    if plan.toolchain_runtime:
        inp = replace(inp, runtime=resolve_shipped(inp.spec, origin="toolchain", redist_root=plan.redist_root))
    dest, leg = inp.dest, inp.spec.id
    try:
        later = plan.sign_later and inp.spec.signing != "none"
        verifier = archive_verifier(inp.spec, inp.release, base=plan.base_spec, awaiting_signature=later)
        info = run_package(inp, verifier, log=plan.log, sign_later=later)
    except VerifyError as e:
        ci.annotate(e.failures, dest.name)
        raise
    sha = sha256_file(dest)
    record_verified(dest.name, sha, leg)
    atomic_write_json(
        plan.receipt,
        {"asset": dest.name, "sha256": sha, "size": dest.stat().st_size, "info": info.model_dump(mode="json")},
    )
    say(f"package:{leg}: {dest.name} {dest.stat().st_size} bytes sha256 {sha}")
    return [dest, plan.receipt]


def plans(ctx: Context) -> list[TaskPlan]:
    """``package:<leg>``: pack ``build/<leg>/merged`` into ``dist/<bundle>``, sign, verify the
    archive; writes ``build/<leg>/package.json`` and records the verified sha256."""
    out = []
    for leg in ctx.legs:
        doc, deps = f"pack, sign, verify {ctx.bundle_name(leg)}", [f"merge:{leg}", f"source:{leg}"]
        out.append(leg_task(NAME, ctx, leg, doc=doc, deps=deps, prepare=prepare, run=run))
    return out
