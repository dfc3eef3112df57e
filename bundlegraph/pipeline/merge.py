"""Stage ``merge:<leg>``: a backend-only leg (``ggml-cuda`` built with ``GGML_CPU=OFF``) becomes a
full tree by starting from its merge base's *packaged bundle* and adding the backend's files
and the runtime files the spec ships from the target toolkit.

Where the base bundle comes from (:func:`locate_base`):

- the same run: ``dist/<base bundle>`` written by ``package:<base leg>`` (a task dependency);
- another runner: ``<artifacts>/**/<base bundle>`` when the graph was loaded with
  ``artifacts=DIR`` / ``BUNDLEGRAPH_ARTIFACTS`` — then the bundle is an input: its sha256 is in
  the action key, it is verified here, and the base leg's build tasks are not in the graph.

Checks before anything is written (all problems reported at once):

- the base's info JSON names the base leg and says verify passed;
- the base was built from the same source commit and tree digest as the backend (ggml's
  internal ABI is not stable across commits);
- the base holds every file its spec requires (``llama-server``, ``ggml-base``, ...);
- a name clash of two *different* files is an error unless ``[merge] prefer`` is ``base`` or
  ``backend`` (identical files are not a clash).

Output: ``build/<leg>/merged/`` (atomic directory: the base's files minus its info JSON and
license file, which ``package`` regenerates, plus backend and runtime files, flat at the root)
and ``build/<leg>/merge.json`` (:class:`MergeRecord`).
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from dataclasses import asdict, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..checks.content import missing_required, required_matches
from ..core import paths
from ..core.errors import BundleGraphError
from ..core.fsutil import atomic_dir, atomic_write_json, parsed_once, sha256_file
from ..core.lightclass import frozen, mutable
from ..core.platforms import platform
from ..schemas.records import BundleSpec, Release
from ..toolchains.sdk_ref import SdkRef
from .base import Context, Prepared, TaskPlan, leg_task, locate_base, upstream_digest
from .build import plan_build
from .source import source_record
from .stage_records import read_build

NAME = "merge"
"""The stage's name: its tasks are ``merge:<leg>`` (:mod:`bundlegraph.pipeline.stages`)."""

if TYPE_CHECKING:  # imported where a run uses them: planning needs neither the formats nor the checks
    from ..schemas.manifest import BundleInfo, VerifyFindings
    from .bundle.runtimes import RuntimeFile

LICENSES_FILE = "THIRD_PARTY_LICENSES.txt"


class MergeError(BundleGraphError):
    """The base and backend cannot be merged; ``problems`` holds one line each."""

    def __init__(self, leg: str, problems: list[str]):
        self.problems = problems
        super().__init__("\n".join([f"merge:{leg}: {len(problems)} problem(s)", *("  " + p for p in problems)]))


@frozen
class BaseBundle:
    """A packaged base bundle: ``archive`` path, its ``sha256`` and its parsed ``info`` JSON."""

    archive: Path
    sha256: str
    info: BundleInfo


@mutable
class MergeRecord:
    """``build/<leg>/merge.json``: ``base_asset``/``base_sha256``/``base_leg``; ``files`` maps each
    merged file (POSIX relpath) to ``base``/``backend``/``runtime``; ``backend_files`` the
    files this leg built (the only ones signing touches); ``runtime`` the shipped runtime
    records (``RuntimeFileInfo`` JSON); ``resolved`` clashes settled by ``prefer``;
    ``base_imported`` the base bundle's ``imported_builds`` (provenance carried into this bundle)."""

    leg: str
    base_leg: str
    base_asset: str
    base_sha256: str
    files: dict[str, str]
    backend_files: list[str]
    runtime: list[dict[str, Any]]
    resolved: list[str] = field(default_factory=list)
    base_imported: list[dict[str, Any]] = field(default_factory=list)

    @classmethod
    def read(cls, path: str | os.PathLike[str]) -> MergeRecord:
        """The record at ``path`` (once per process while the file is unchanged). Raises
        :class:`BundleGraphError` (one line naming the file and the task to run) when it is
        missing (a work directory where ``merge:<leg>`` has not completed: fresh, partly run or
        interrupted) or is not a merge record (damaged): what ``doit info``, ``doit list
        --status`` and ``bundlegraph explain`` then say, instead of a traceback (issue 41)."""
        leg = Path(path).parent.name
        try:
            return parsed_once(path, _read_merge_record)
        except FileNotFoundError:
            raise BundleGraphError(f"{path}: missing: merge:{leg} has not completed here; run merge:{leg}") from None
        except (OSError, ValueError, TypeError) as e:
            raise BundleGraphError(
                f"{path}: not a merge record ({str(e).splitlines()[0]}); run merge:{leg} again"
            ) from None


def _read_merge_record(path: Path) -> MergeRecord:
    return MergeRecord(**json.loads(path.read_text(encoding="utf-8")))


def load_base(archive: Path, info_file: str) -> BaseBundle:
    """Read ``info_file`` out of ``archive`` and parse it (errors name the archive and file)."""
    from .bundle.archive import read_bundle_info

    return BaseBundle(archive, sha256_file(archive), read_bundle_info(archive, info_file))


def _built_names(spec: BundleSpec) -> set[str]:
    plat = platform(spec.os)
    return {n for t in spec.build.targets for n in (plat.library(t), plat.program(t))}


def backend_outputs(bin_dir: Path, spec: BundleSpec) -> list[Path]:
    """The files this backend leg built, from its CMake output directory (``cmake/bin``): for
    each build target ``T``: its library and program names on the leg's OS (``T.dll``/``T.exe``;
    ``libT.so``, ``libT.so.*`` (links kept), ``T``: :class:`~bundlegraph.core.platforms.Platform`);
    plus the spec's ``required`` names, except those the leg ships as runtime files
    (``cudart64_*.dll`` comes from the toolkit, not the build). Raises when a required file or a
    target's output is missing."""
    if not bin_dir.is_dir():
        raise BundleGraphError(f"{spec.id}: build output directory {bin_dir} does not exist; run build:{spec.id}")
    plat = platform(spec.os)
    fold = plat.fold
    shipped = [s.name for s in spec.runtime.ships]
    required = [r for r in spec.required if not any(required_matches(n, r, fold=fold) for n in shipped)]
    names = _built_names(spec)
    out = sorted(
        p
        for p in bin_dir.iterdir()
        if (p.is_file() or p.is_symlink())
        and (
            p.name in names
            or any(required_matches(p.name, r, fold=fold) for r in spec.required)
            or (plat.versioned and any(p.name.startswith(plat.library(t) + ".") for t in spec.build.targets))
        )
    )
    have = {p.name for p in out}
    missing = [f.file for f in missing_required(have, required, fold=fold)]
    for t in spec.build.targets:
        if not have & {plat.library(t), plat.program(t)}:
            missing.append(f"output of build target {t}")
    if missing:
        raise BundleGraphError(f"{spec.id}: {bin_dir} lacks {', '.join(missing)}")
    return out


def check_base(base: BaseBundle, base_spec: BundleSpec, commit: str | None, digest: str) -> list[str]:
    """Problems with ``base`` as the merge base of a backend built from ``commit``/``digest``."""
    i, name = base.info, base.archive.name
    probs = []
    if i.leg != base_spec.id:
        probs.append(f"{name}: {i.leg!r} bundle, but the merge base is leg {base_spec.id!r}")
    if not i.verify.passed:
        probs.append(f"{name}: its info JSON says verify did not pass")
    if i.source_commit != commit:
        probs.append(f"{name}: built from source commit {i.source_commit}, the backend from {commit}")
    if i.source_digest != digest:
        probs.append(f"{name}: built from source tree digest {i.source_digest[:16]}…, the backend from {digest[:16]}…")
    from .bundle.archive import member_names

    members = member_names(base.archive)
    for f in missing_required(members, base_spec.required, fold=platform(base_spec.os).fold):
        probs.append(f"{name}: lacks {f.file!r}, which {base_spec.id} requires")
    return probs


def _place(
    tmp: Path,
    name: str,
    src: Path,
    origin: str,
    prefer: str,
    files: dict[str, str],
    conflicts: list[str],
    resolved: list[str],
) -> None:
    dst = tmp / name
    dst.parent.mkdir(parents=True, exist_ok=True)  # a runtime file may sit in a folder (rocblas/library/...)
    if dst.exists() or dst.is_symlink():
        same = not dst.is_symlink() and not src.is_symlink() and sha256_file(dst) == sha256_file(src)
        if same:
            return
        what = (
            f"{name}: {files.get(name, 'base')} file (sha256 {sha256_file(dst)[:12]}) and {origin} "
            f"file {src} (sha256 {sha256_file(src)[:12]}) differ"
        )
        keep_existing = prefer == "base" and files.get(name) == "base"
        if prefer == "error":
            conflicts.append(what + "; set [merge] prefer = 'base' or 'backend' to choose")
            return
        resolved.append(f"{what}; prefer = {prefer}")
        if keep_existing:
            return
        dst.unlink()
    if src.is_symlink():
        os.symlink(os.readlink(src), dst)
    else:
        shutil.copyfile(src, dst)
        shutil.copymode(src, dst)
    files[name] = origin


def run_collect(
    *, spec: BundleSpec, built_dir: Path, runtime: list[RuntimeFile], dest_tree: Path, record_path: Path
) -> MergeRecord:
    """``merge:<leg>`` of a leg without a merge base: the bundle tree is the build's output
    directory (every file and link in it, recursively) plus the runtime files the spec ships
    from the toolkit. Same outputs and clash rule (``error``) as :func:`run_merge`."""
    if not built_dir.is_dir():
        raise BundleGraphError(f"{spec.id}: build output directory {built_dir} does not exist; run build:{spec.id}")
    files: dict[str, str] = {}
    conflicts: list[str] = []
    with atomic_dir(dest_tree) as tmp:
        for p in sorted(built_dir.rglob("*")):
            if p.is_dir() and not p.is_symlink():
                continue
            rel = p.relative_to(built_dir).as_posix()
            (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
            _place(tmp, rel, p, "backend", "error", files, conflicts, [])
        for rf in runtime:
            _place(tmp, rf.name, rf.path, "runtime", "error", files, conflicts, [])
        if conflicts:
            raise MergeError(spec.id, conflicts)
        rec = MergeRecord(
            leg=spec.id,
            base_leg="",
            base_asset="",
            base_sha256="",
            files=dict(sorted(files.items())),
            backend_files=sorted(k for k, v in files.items() if v == "backend"),
            runtime=[rf.info.model_dump(mode="json") for rf in runtime],
        )
    atomic_write_json(record_path, asdict(rec))
    return rec


def run_merge(
    *,
    spec: BundleSpec,
    base_spec: BundleSpec,
    info_file: str,
    base: BaseBundle,
    backend_files: list[Path],
    runtime: list[RuntimeFile],
    source_commit: str | None,
    source_digest: str,
    dest_tree: Path,
    record_path: Path,
    verifier: Callable[[Path], VerifyFindings] | None = None,
) -> MergeRecord:
    """Merge and write ``dest_tree`` + ``record_path`` atomically. ``verifier(archive) ->
    VerifyFindings`` (raises :class:`VerifyError`) is run on a base imported from an artifacts
    directory. Raises :class:`MergeError` listing every problem; nothing is written then."""
    from ..core.extract import extract

    assert spec.merge is not None, f"{spec.id} has no [merge] table"
    probs = check_base(base, base_spec, source_commit, source_digest)
    if probs:
        raise MergeError(spec.id, probs)
    if verifier is not None:
        found: VerifyFindings = verifier(base.archive)
        if not found.passed:
            raise MergeError(spec.id, [f"{base.archive.name}: verify failed on the imported base bundle"])
    prefer = spec.merge.prefer
    files: dict[str, str] = {}
    conflicts: list[str] = []
    resolved: list[str] = []
    with atomic_dir(dest_tree) as tmp:
        for rel in extract(base.archive, tmp):
            files[rel] = "base"
        for gen in (info_file, LICENSES_FILE):
            if (tmp / gen).is_file():
                (tmp / gen).unlink()
                files.pop(gen, None)
        for p in backend_files:
            _place(tmp, p.name, p, "backend", prefer, files, conflicts, resolved)
        for rf in runtime:
            _place(tmp, rf.name, rf.path, "runtime", prefer, files, conflicts, resolved)
        if conflicts:
            raise MergeError(spec.id, conflicts)
        rec = MergeRecord(
            leg=spec.id,
            base_leg=base_spec.id,
            base_asset=base.archive.name,
            base_sha256=base.sha256,
            files=dict(sorted(files.items())),
            backend_files=sorted(p.name for p in backend_files if files.get(p.name) == "backend"),
            runtime=[rf.info.model_dump(mode="json") for rf in runtime],
            resolved=resolved,
            base_imported=[b.model_dump(mode="json") for b in base.info.imported_builds],
        )
    atomic_write_json(record_path, asdict(rec))
    return rec


# ---------------------------------------------------------------- graph stage
# merge:<leg> runs after verify:<leg> but keys on build:<leg>'s output digest (the files it
# copies): verify's report holds findings, not content, so a rebuilt library with the same
# findings must still be merged again.


def _tree_files(tree: Path) -> list[Path]:
    """Every regular file of a merged tree: merge's outputs besides its record, so their
    content reaches the package key (``merge.json`` names files, it does not hash them)."""
    return sorted(p for p in tree.rglob("*") if p.is_file() and not p.is_symlink())


@frozen
class MergePlan:
    """What ``merge:<leg>`` does, resolved once before it runs (the run reads nothing else of
    the graph): ``spec``; ``base_spec``/``base_archive`` (None for a leg without ``[merge]``:
    then the built files are only collected); ``imported`` (the base came from the artifacts
    directory: verify it); ``release``; ``built_dir`` (the build's output directory) and
    ``backend_files`` (the files of it a merge adds);
    ``toolkit_prefix``/``toolkit_version``: the target toolkit the spec's shipped runtime files
    come from (resolved and hashed by the run, not on every up-to-date check); ``source_commit``/``source_digest`` (from
    ``source:<leg>``'s record; None/"" when collecting); ``dest_tree``/``record``."""

    leg: str
    spec: BundleSpec
    release: Release
    built_dir: Path
    toolkit_prefix: Path | None
    toolkit_version: str | None
    dest_tree: Path
    record: Path
    backend_files: tuple[Path, ...] = ()
    base_spec: BundleSpec | None = None
    base_archive: Path | None = None
    imported: bool = False
    source_commit: str | None = None
    source_digest: str = ""
    sdk: SdkRef | None = None
    """The leg's SDK (:attr:`~.base.LegContext.sdk`): what every bundle of it ships from it beyond the spec's
    ``[runtime] ships`` (:meth:`~bundlegraph.toolchains.sdk_ref.SdkRef.shipped_runtime`), read by the run."""
    consumed: dict[str, Any] = field(default_factory=dict)
    """What the prepared plan read (:func:`prepare`): ``built`` (the build's output digest) and,
    for a merge, ``base`` (``package:<base>``'s digest, or the sha256 of an imported base),
    ``source`` and, when shipped runtime files come from it, ``toolkit``."""

    def key(self) -> dict[str, Any]:
        """The spec and what it consumed."""
        return {"spec": self.spec, **self.consumed}

    def describe(self) -> dict[str, Any]:
        return {}


def plan_merge(ctx: Context, leg: str) -> MergePlan:
    """The :class:`MergePlan` of ``leg`` now: reads ``source:<leg>``'s record and locates the base
    bundle (both exist once the task's dependencies ran). Raises :class:`BundleGraphError`
    naming the missing record or base bundle."""
    spec = ctx.spec(leg)
    sdk = ctx.leg(leg).sdk
    shipped_from = sdk.runtime_from() if sdk is not None else None
    bdir = paths.build_dir(leg)
    built = plan_build(ctx, leg).artifacts_dir
    _refuse_filtered_build(leg)
    plan = MergePlan(
        leg=leg,
        spec=spec,
        release=ctx.release,
        built_dir=built,
        toolkit_prefix=shipped_from[0] if shipped_from else None,
        toolkit_version=shipped_from[1] if shipped_from else None,
        sdk=sdk,
        dest_tree=bdir / "merged",
        record=bdir / "merge.json",
    )
    if spec.merge is None:
        return plan
    src = source_record(leg)
    return replace(
        plan,
        backend_files=tuple(backend_outputs(built, spec)),
        base_spec=ctx.spec(spec.merge.base),
        base_archive=locate_base(ctx.bundle_name(spec.merge.base), paths.dist_dir(), ctx.filters.artifacts),
        imported=ctx.filters.artifacts is not None,
        source_commit=src.commit,
        source_digest=src.digest,
    )


def _refuse_filtered_build(leg: str) -> None:
    """A bundle is made only from a complete build of its leg: after ``build_targets=`` the
    output directory may hold stale files of targets that were not rebuilt."""
    rec = read_build(leg)
    if rec is None:
        raise BundleGraphError(f"merge:{leg}: {paths.build_dir(leg) / 'build.json'} is missing; run build:{leg}")
    if rec.filtered:
        raise BundleGraphError(
            f"merge:{leg}: the last build:{leg} built only {', '.join(rec.targets)} "
            f"(build_targets=); a bundle is made from a complete build: run build:{leg} "
            f"without build_targets"
        )


def prepare(ctx: Context, leg: str) -> Prepared[MergePlan]:
    """``merge:<leg>``'s plan value: its :class:`MergePlan` with what it consumed
    (:attr:`MergePlan.consumed`), and its key."""
    plan = plan_merge(ctx, leg)
    spec = plan.spec
    if spec.merge is None:
        return Prepared.of(replace(plan, consumed={"built": upstream_digest(f"build:{leg}")}))
    base = spec.merge.base
    if ctx.filters.artifacts is not None or base not in ctx.legs:
        b = sha256_file(plan.base_archive) if plan.base_archive is not None else "missing"
    else:
        b = upstream_digest(f"package:{base}")
    keys = {"base": b, "built": upstream_digest(f"build:{leg}"), "source": upstream_digest(f"source:{leg}")}
    sdk = ctx.leg(leg).sdk
    if sdk is not None and (sdk.SHIPS_OWN_RUNTIME or any(r.from_ == "toolkit" for r in spec.runtime.ships)):
        # shipped runtime files (cudart64_13.dll ..., HIP's runtime and kernels) come from the SDK: a new SDK
        # with identical built binaries must still refresh them
        keys["toolkit"] = upstream_digest(sdk.task)
    return Prepared.of(replace(plan, consumed=keys))


def _sdk_runtime(sdk: SdkRef, os_name: str, prefix: Path, version: str | None) -> list[Any]:
    """What every bundle of the leg's SDK ships from it (:meth:`~bundlegraph.toolchains.sdk_ref.SdkRef.shipped_runtime`:
    a HIP bundle's runtime and kernel files), as runtime files of origin ``toolkit`` recorded relative to
    ``prefix`` with ``version`` (the SDK's :meth:`~bundlegraph.toolchains.sdk_ref.SdkRef.runtime_from`)."""
    from ..schemas.manifest import RuntimeFileInfo
    from .bundle.runtimes import RuntimeFile

    return [
        RuntimeFile(
            name,
            path,
            RuntimeFileInfo(
                name=name,
                origin="toolkit",
                version=version,
                source=path.relative_to(prefix).as_posix(),
                sha256=sha256_file(path.resolve()),
            ),
        )
        for name, path in sdk.shipped_runtime(os_name)
    ]


def run(plan: MergePlan) -> list[Path]:
    """Merge (or collect) from ``plan`` alone; returns ``merge.json`` and every file of the tree."""
    from .archivecheck import archive_verifier
    from .bundle.runtimes import resolve_shipped

    runtime = resolve_shipped(
        plan.spec, origin="toolkit", toolkit_prefix=plan.toolkit_prefix, toolkit_version=plan.toolkit_version
    )
    if plan.sdk is not None and plan.toolkit_prefix is not None:
        runtime += _sdk_runtime(plan.sdk, plan.spec.os, plan.toolkit_prefix, plan.toolkit_version)
    if plan.base_spec is None:
        run_collect(
            spec=plan.spec, built_dir=plan.built_dir, runtime=runtime, dest_tree=plan.dest_tree, record_path=plan.record
        )
    else:
        assert plan.base_archive is not None
        base = load_base(plan.base_archive, plan.release.info_file)
        # a base packaged with BUNDLEGRAPH_SIGN=later awaits the sign job: every check but the
        # signatures applies; the merged bundle is signed with it (sign-bundles takes the signed base's files)
        pending = base.info.signing == "pending"
        run_merge(
            spec=plan.spec,
            base_spec=plan.base_spec,
            info_file=plan.release.info_file,
            base=base,
            backend_files=list(plan.backend_files),
            runtime=runtime,
            source_commit=plan.source_commit,
            source_digest=plan.source_digest,
            dest_tree=plan.dest_tree,
            record_path=plan.record,
            verifier=archive_verifier(plan.base_spec, plan.release, awaiting_signature=pending)
            if plan.imported
            else None,
        )
    return [plan.record, *_tree_files(plan.dest_tree)]


def plans(ctx: Context) -> list[TaskPlan]:
    """``merge:<leg>`` for every selected leg: a backend merged into its base's bundle (legs with
    ``[merge]``), else the built files and shipped runtime collected into the bundle tree."""
    out = []
    for leg in ctx.legs:
        spec = ctx.spec(leg)
        # the SDK its shipped runtime files come from (CUDA's redist DLLs, HIP's runtime)
        sdk = ctx.leg(leg).sdk
        cuda = [sdk.task] if sdk is not None and sdk.runtime_from() is not None else []
        if spec.merge is None:
            deps = [f"verify:{leg}", *cuda]
            doc = f"collect {leg}'s built files and shipped runtime into its bundle tree (no merge base)"
        else:
            base = spec.merge.base
            imported = ctx.filters.artifacts is not None
            # a filtered run without artifacts=DIR that leaves the base out finds dist/<base bundle>
            # from an earlier run, or fails naming it (filters must not change the graph's legs)
            same_run = not imported and base in ctx.legs
            deps = [f"verify:{leg}", f"source:{leg}"] + ([f"package:{base}"] if same_run else []) + cuda
            doc = f"merge {leg}'s backend into the {base} bundle" + (" (imported from artifacts)" if imported else "")
        out.append(leg_task(NAME, ctx, leg, doc=doc, deps=deps, prepare=prepare, run=run))
    return out
