"""Graph tasks of the release end: ``merge:<leg>``, ``package:<leg>``, ``manifest``, ``publish``.

Each planner turns the stage functions (:mod:`.merge`, :mod:`.package`, :mod:`.manifest`,
:mod:`.publish`) into :class:`~bundlegraph.graph.TaskPlan` objects; no work happens at load time.

- ``merge:<leg>`` (legs with ``[merge]``): base = ``dist/<base bundle>`` after
  ``package:<base>`` (same run), or the bundle of that name in the artifacts directory
  (``artifacts=DIR``): then it is an input keyed by its sha256 and no base task is a dependency.
  Backend files come from the build's artifacts dir; shipped runtime from ``toolkit_for_leg``.
- ``merge:<leg>`` of a leg without ``[merge]``: its build's artifacts dir plus shipped toolkit
  runtime, collected into the same ``build/<leg>/merged`` tree (:func:`.merge.run_collect`).
- Both run after ``verify:<leg>`` but key on ``build:<leg>``'s output digest (the files they
  copy): verify's report holds findings, not content, so a rebuilt library with the same
  findings must still be merged again. Their outputs are ``merge.json`` and every file of the
  merged tree (fingerprinted), which is what ``package:<leg>`` keys on.
- ``package:<leg>``: packs ``build/<leg>/merged``; writes
  ``dist/<bundle>`` and ``build/<leg>/package.json``, and records the verified sha256.
- ``manifest``: after every selected leg's package; ``publish``: after the manifest, refused
  in a filtered run.
"""

from __future__ import annotations

import os
from pathlib import Path

from .. import paths
from ..errors import BundleGraphError
from ..fsutil import atomic_write_json, sha256_file
from .base import Context, TaskPlan, upstream_digest


def _after_build(leg: str) -> str:
    return f"verify:{leg}"


def _tree_files(tree: Path) -> list[Path]:
    """Every regular file of a merged tree: merge's outputs besides its record, so their
    content reaches the package key (``merge.json`` names files, it does not hash them)."""
    return sorted(p for p in tree.rglob("*") if p.is_file() and not p.is_symlink())


def _source(leg: str):
    from .source import SourceRecord

    f = paths.build_dir(leg) / "source.json"
    if not f.is_file():
        raise BundleGraphError(f"{leg}: {f} is missing; run source:{leg}")
    return SourceRecord.read(f)


def _asset(ctx: Context, leg: str) -> str:
    return ctx.spec(leg).bundle_name(ctx.release.tag, ctx.release.bundle_prefix)


def _base_archive(ctx: Context, leg: str) -> Path:
    from .merge import locate_base

    base = ctx.spec(leg).merge.base
    return locate_base(_asset(ctx, base), paths.dist_dir(), ctx.filters.artifacts)


def merge_plans(ctx: Context) -> list:
    from .archivecheck import archive_verifier
    from .build import plan_build
    from .merge import backend_outputs, load_base, run_collect, run_merge
    from .runtimes import resolve_shipped
    from .toolkit import toolkit_for_leg

    out = []
    for leg in ctx.legs:
        spec = ctx.spec(leg)
        if spec.merge is None:
            out.append(_collect_plan(ctx, leg, run_collect))
            continue
        base = spec.merge.base
        imported = ctx.filters.artifacts is not None
        # a filtered run without artifacts=DIR that leaves the base out finds dist/<base bundle>
        # from an earlier run, or fails in run() naming it (filters must not change the graph's legs)
        same_run = not imported and base in ctx.legs
        deps = [_after_build(leg), f"source:{leg}"] + ([f"package:{base}"] if same_run else [])
        if spec.backend == "cuda":
            deps.append(f"toolkit:{toolkit_for_leg(ctx, leg).name}")

        def inputs(leg=leg, base=base, imported=imported) -> dict:
            if imported or base not in ctx.legs:
                try:
                    b = sha256_file(_base_archive(ctx, leg))
                except BundleGraphError:
                    b = "missing"
            else:
                b = upstream_digest(f"package:{base}")
            keys = {"spec": ctx.spec(leg), "base": b, "built": upstream_digest(f"build:{leg}"),
                    "source": upstream_digest(f"source:{leg}")}
            if any(r.from_ == "toolkit" for r in ctx.spec(leg).runtime.ships):
                # shipped runtime files (cudart64_13.dll ...) come from the toolkit: a new toolkit
                # with identical built binaries must still refresh them
                keys["toolkit"] = upstream_digest(f"toolkit:{toolkit_for_leg(ctx, leg).name}")
            return keys

        def run(leg=leg, spec=spec, base=base, imported=imported) -> list[Path]:
            src = _source(leg)
            ref = toolkit_for_leg(ctx, leg) if spec.backend == "cuda" else None
            rt = resolve_shipped(spec, origin="toolkit", toolkit_prefix=ref.prefix if ref else None,
                                 toolkit_version=ref.version if ref else None)
            rec = paths.build_dir(leg) / "merge.json"
            run_merge(spec=spec, base_spec=ctx.spec(base), info_file=ctx.release.info_file,
                      base=load_base(_base_archive(ctx, leg), ctx.release.info_file),
                      backend_files=backend_outputs(plan_build(ctx, leg).artifacts_dir, spec), runtime=rt,
                      source_commit=src.commit, source_digest=src.digest,
                      dest_tree=paths.build_dir(leg) / "merged", record_path=rec,
                      verifier=archive_verifier(ctx.spec(base), ctx.release) if imported else None)
            return [rec, *_tree_files(paths.build_dir(leg) / "merged")]

        out.append(TaskPlan(stage="merge", name=leg, leg=leg, deps=deps, inputs=inputs, run=run,
                            doc=f"merge {leg}'s backend into the {base} bundle"
                                + (" (imported from artifacts)" if imported else "")))
    return out


def _collect_plan(ctx: Context, leg: str, run_collect):
    from .build import plan_build
    from .runtimes import resolve_shipped
    from .toolkit import toolkit_for_leg

    spec = ctx.spec(leg)
    deps = [_after_build(leg)] + ([f"toolkit:{toolkit_for_leg(ctx, leg).name}"] if spec.backend == "cuda" else [])

    def run() -> list[Path]:
        ref = toolkit_for_leg(ctx, leg) if spec.backend == "cuda" else None
        rt = resolve_shipped(spec, origin="toolkit", toolkit_prefix=ref.prefix if ref else None,
                             toolkit_version=ref.version if ref else None)
        rec = paths.build_dir(leg) / "merge.json"
        run_collect(spec=spec, built_dir=plan_build(ctx, leg).artifacts_dir, runtime=rt,
                    dest_tree=paths.build_dir(leg) / "merged", record_path=rec)
        return [rec, *_tree_files(paths.build_dir(leg) / "merged")]

    return TaskPlan(stage="merge", name=leg, leg=leg, deps=deps, run=run,
                    inputs=lambda: {"spec": ctx.spec(leg), "built": upstream_digest(f"build:{leg}")},
                    doc=f"collect {leg}'s built files and shipped runtime into its bundle tree (no merge base)")


def package_plans(ctx: Context) -> list:
    from .archivecheck import archive_verifier
    from .manifest import record_verified
    from ..schemas.manifest import RuntimeFileInfo
    from .merge import MergeRecord
    from .package import PackageInputs, run_package
    from .runtimes import msvc_redist_root, resolve_shipped
    from .toolkit import toolkit_for_leg

    out = []
    for leg in ctx.legs:
        spec = ctx.spec(leg)
        up = f"merge:{leg}"
        deps = [up, f"source:{leg}"]

        def inputs(leg=leg, up=up) -> dict:
            return {"spec": ctx.spec(leg), "release": ctx.release, "tree": upstream_digest(up),
                    "source": upstream_digest(f"source:{leg}"), "epoch": os.environ.get("SOURCE_DATE_EPOCH"),
                    "signer": bool(os.environ.get("BUNDLEGRAPH_SIGN_COMMAND"))}

        def run(leg=leg, spec=spec) -> list[Path]:
            src = _source(leg)
            ref = toolkit_for_leg(ctx, leg) if spec.backend == "cuda" else None
            dest = paths.dist_dir() / _asset(ctx, leg)
            runtime = resolve_shipped(spec, origin="toolchain", redist_root=msvc_redist_root()) \
                if any(s.from_ == "toolchain" for s in spec.runtime.ships) else []
            rec = MergeRecord.read(paths.build_dir(leg) / "merge.json")
            kw = dict(tree=paths.build_dir(leg) / "merged", own_files=rec.backend_files,
                      merged_from=rec.base_asset or None,
                      prior_runtime=[RuntimeFileInfo.model_validate(r) for r in rec.runtime])
            inp = PackageInputs(spec=spec, release=ctx.release, dest=dest, source_tree=Path(src.tree),
                                source_commit=src.commit, source_digest=src.digest, commit_epoch=src.epoch,
                                runtime=runtime, toolkit_prefix=ref.prefix if ref else None,
                                toolkit_version=ref.version if ref else None, **kw)
            base = ctx.matrix.legs.get(spec.merge.base) if spec.merge else None
            from .. import ci
            from ..errors import VerifyError

            try:
                info = run_package(inp, archive_verifier(spec, ctx.release, base=base), log=ctx.log(leg, "package"))
            except VerifyError as e:
                ci.annotate(e.failures, dest.name)
                raise
            sha = sha256_file(dest)
            record_verified(dest.name, sha, leg)
            receipt = paths.build_dir(leg) / "package.json"
            atomic_write_json(receipt, {"asset": dest.name, "sha256": sha, "size": dest.stat().st_size,
                                        "info": info.model_dump(mode="json")})
            print(f"package:{leg}: {dest.name} {dest.stat().st_size} bytes sha256 {sha}", flush=True)
            return [dest, receipt]

        out.append(TaskPlan(stage="package", name=leg, leg=leg, deps=deps, inputs=inputs, run=run,
                            doc=f"pack, sign, verify {_asset(ctx, leg)}"))
    return out


def manifest_plans(ctx: Context) -> list:
    from .archivecheck import archive_verifier
    from .manifest import run_manifest
    from ..schemas.manifest import INDEX_NAME, MANIFEST_NAME, source_archive_name

    first = ctx.legs[0]

    def verifier_for(leg: str):
        spec = ctx.spec(leg)
        return archive_verifier(spec, ctx.release, base=ctx.matrix.legs.get(spec.merge.base) if spec.merge else None)

    def inputs() -> dict:
        art = ctx.filters.artifacts
        listing = sorted((p.relative_to(art).as_posix(), p.stat().st_size, p.stat().st_mtime_ns)
                         for p in art.rglob("*") if p.is_file()) if art and art.is_dir() else []
        dist = paths.dist_dir()
        bundles = sorted((p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in
                         (dist / _asset(ctx, l) for l in ctx.matrix.legs) if p.is_file())
        return {"packages": {l: upstream_digest(f"package:{l}") for l in ctx.legs},
                "bundles": bundles, "source": upstream_digest(f"source:{first}"), "artifacts": listing,
                "release": ctx.release}

    def run() -> list[Path]:
        src = _source(first)
        dist = paths.dist_dir()
        from .. import ci

        run_manifest(ctx.matrix, dist=dist, source_tree=Path(src.tree), source_commit=src.commit,
                     commit_epoch=src.epoch, artifacts=ctx.filters.artifacts, verifier_for=verifier_for)
        ci.write_summary(dist, dist / INDEX_NAME, ctx.release.info_file)
        return [dist / MANIFEST_NAME, dist / INDEX_NAME, dist / source_archive_name(src.commit)]

    return [TaskPlan(stage="manifest", name="", leg=None, inputs=inputs, run=run,
                     # The manifest describes the bundles that exist (in dist/ or the artifacts dir); it
                     # never makes doit build a leg. A bare `doit` runs the default legs' package tasks
                     # first (Graph.default_tasks lists them before the manifest).
                     deps=[f"source:{first}"],
                     doc="write the release manifest, SHA index and source archive for the bundles that exist")]


def publish_plans(ctx: Context) -> list:
    from .publish import run_publish

    f = ctx.filters
    filtered = ", ".join(x for x in (f"only_profile={f.only_profile}" if f.only_profile else "",
                                     f"only_leg={f.only_leg}" if f.only_leg else "") if x) or None

    def run() -> list[Path]:
        return [run_publish(ctx.matrix, paths.dist_dir(), filtered=filtered,
                            source_commit=_source(ctx.legs[0]).commit)]

    return [TaskPlan(stage="publish", name="", leg=None, deps=["manifest"], run=run,
                     inputs=lambda: {"manifest": upstream_digest("manifest"), "filtered": filtered},
                     doc="coverage gate: refuse unless every promised bundle and paired runtime is present, "
                         "verified and hashed; then list the assets to upload")]
