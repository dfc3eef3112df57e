"""The release's provenance checked field by field against the release's own files (the reader
of what :mod:`bundlegraph.schemas.provenance` writes; ``verify-release``'s ``provenance`` check).

A statement whose subjects match the index can still lie about how the bytes were made: another
tag, another source commit or source archive, other legs, other runtime files or build
parameters. Each field the statement states is compared with the file of the release that
states the same fact, and each difference is one line naming the statement's field (its JSON
path) and both values:

- ``_type``, ``predicateType``, ``buildDefinition.buildType``: in-toto Statement v1, SLSA
  Provenance v1, bundlegraph's build type;
- ``subject``: exactly the index's assets and the index, by sha256
  (:func:`provenance_problems`);
- ``externalParameters.tag``: the index's ``release_tag``; ``externalParameters.legs``: the
  legs of the bundles the release holds (each bundle's own info JSON says its leg);
- ``resolvedDependencies[llama.cpp]``: ``uri`` (the index's ``source_repo`` at its
  ``source_commit``), ``digest.gitCommit`` (``source_commit``), ``digest.sha256`` (the index's
  sha256 of the source archive), ``annotations.archive`` (that archive's name),
  ``annotations.upstream_tag``/``source_ref_kind``/``ggml_tree`` (the index header's);
- a mix's pull requests: one dependency ``<repo>#<number>`` per ``merged_prs`` entry of the
  index, ``digest.gitCommit`` its ``sha``;
- each bundle's runtime files (``<leg>: <file>``: sha256, origin, version, where it came from)
  and imported builds, as the bundle's info JSON lists them;
- each paired upstream asset: its sha256 as the index has it;
- ``internalParameters.builds.<leg>``: only for a leg whose bundle the release holds, key by
  key against the recipe the bundle's info JSON records (``build``: toolchain, compilers, tools,
  ``cmake_cache.<KEY>``, ``flags.CMAKE_C_FLAGS``...; a bundle packaged before it was recorded
  has none), and against the info's own ``archs`` (``cmake_cache.CMAKE_CUDA_ARCHITECTURES``),
  ``ggml_backend_dl`` (``cmake_cache.GGML_BACKEND_DL``) and ``toolkit_version`` (``cuda``); a
  bundle whose info records a recipe needs one in the statement;
- the toolkit components a leg compiled with (dependencies ``<leg>: <component> <version>
  (<platform>, <role>)``), by sha256, against those its bundle's info file records.

Not checkable from the release alone: what no other file states (where a component was
downloaded from, ``runDetails``), and a recipe that the statement and the bundle's info state
alike but falsely: ``--attestations`` checks the statement's and the bundle's signatures,
``verify-release --rebuild`` the bytes a rebuild gives.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..schemas.asset_names import INDEX_NAME, source_archive_name
from ..schemas.provenance import (
    BUILD_TYPE,
    PREDICATE_TYPE,
    PROVENANCE_NAME,
    STATEMENT_TYPE,
    files_digest,
    toolkit_dep_name,
)

if TYPE_CHECKING:
    from ..schemas.manifest import BundleInfo, ShaIndex


def _dig(d: Any, *path: str) -> Any:
    """``d[path[0]][path[1]]...``, None where a step is missing or not an object."""
    for k in path:
        if not isinstance(d, dict):
            return None
        d = d.get(k)
    return d


def provenance_problems(statement: bytes, index: bytes) -> list[str]:
    """What is wrong with the provenance statement (its bytes) against the SHA index (its bytes):
    its subjects must be exactly the index's assets and the index itself, by sha256."""
    from ..schemas.provenance import subjects

    name = PROVENANCE_NAME
    try:
        st = json.loads(statement)
        want = {s["name"]: s["digest"]["sha256"] for s in subjects(INDEX_NAME, index, json.loads(index))}
        got = {s["name"]: s["digest"].get("sha256") for s in st["subject"]}
    except (ValueError, KeyError, TypeError, AttributeError) as e:  # AttributeError: a digest that is no object
        return [f"{name}: not a provenance statement ({type(e).__name__}: {e})"]
    out = [f"{name}: subject {n} missing (the index has it)" for n in sorted(set(want) - set(got))]
    out += [f"{name}: subject {n} is not in the index" for n in sorted(set(got) - set(want))]
    out += [
        f"{name}: subject {n} has sha256 {got[n]}, the index's is {want[n]}"
        for n in sorted(set(want) & set(got))
        if got[n] != want[n]
    ]
    return out


def statement_problems(
    raw: bytes, index: ShaIndex, index_bytes: bytes, infos: Mapping[str, BundleInfo] | None
) -> list[str]:
    """Every difference between the statement ``raw`` (its bytes) and the release: the ``index``
    (parsed, and its bytes) and ``infos`` (asset name -> the info JSON of every bundle of the
    release; None when some could not be read, and what depends on them is not compared). One
    line each: ``llama-prebuilt-provenance.json: <field>: ...``. Raises nothing."""
    n = PROVENANCE_NAME
    try:
        st = json.loads(raw)
    except ValueError as e:
        return [f"{n}: not JSON ({e})"]
    if not isinstance(st, dict):
        return [f"{n}: not a JSON object"]
    out: list[str] = []

    def differs(field: str, stated: Any, actual: Any, where: str) -> None:
        if stated != actual:
            out.append(f"{n}: {field}: states {stated!r}, {where} says {actual!r}")

    differs("_type", st.get("_type"), STATEMENT_TYPE, "in-toto Statement v1")
    differs("predicateType", st.get("predicateType"), PREDICATE_TYPE, "SLSA Provenance v1")
    bd = _dig(st, "predicate", "buildDefinition")
    if not isinstance(bd, dict):
        return [*out, f"{n}: predicate.buildDefinition: missing or not an object"]
    differs("buildDefinition.buildType", bd.get("buildType"), BUILD_TYPE, "bundlegraph's build type")
    out += provenance_problems(raw, index_bytes)
    ext = bd.get("externalParameters")
    differs("externalParameters.tag", _dig(ext, "tag"), index.release_tag, f"{INDEX_NAME} release_tag")
    if infos is not None:
        differs(
            "externalParameters.legs",
            _dig(ext, "legs"),
            sorted({i.leg for i in infos.values()}),
            "each bundle's info file",
        )
    deps = bd.get("resolvedDependencies")
    if not isinstance(deps, list) or not all(isinstance(d, dict) for d in deps):
        return [*out, f"{n}: buildDefinition.resolvedDependencies: missing or not a list of objects"]
    by_name: dict[str, dict[str, Any]] = {}
    for d in deps:
        by_name.setdefault(str(d.get("name")), d)
    out += _source_problems(by_name, index)
    if infos is None:  # a bundle's info could not be read (the agreement check says which): its facts are unknown
        return out + _paired_problems(by_name, index)
    out += _bundle_dep_problems(by_name, infos)
    out += _paired_problems(by_name, index)
    builds = _dig(bd, "internalParameters", "builds")
    if builds is not None and not isinstance(builds, dict):
        out.append(f"{n}: internalParameters.builds: not an object")
        builds = None
    by_leg = {i.leg: i for i in infos.values()}
    for leg, recipe in sorted((builds or {}).items()):
        info = by_leg.get(leg)
        field = f"internalParameters.builds.{leg}"
        if info is None:
            out.append(f"{n}: {field}: a recipe for a leg whose bundle the release does not hold")
            continue
        where = f"{info.asset_name}'s info file"
        cache = _dig(recipe, "cmake_cache")
        if not isinstance(recipe, dict) or not isinstance(cache, dict):
            out.append(f"{n}: {field}.cmake_cache: missing or not an object")
            continue
        if info.build is not None:
            out += _recipe_problems(field, recipe, info.build, where)
            out += _toolkit_problems(by_name, info)
        if "CMAKE_CUDA_ARCHITECTURES" in cache or info.archs:
            archs = ";".join(info.archs) if info.archs else None
            differs(
                f"{field}.cmake_cache.CMAKE_CUDA_ARCHITECTURES", cache.get("CMAKE_CUDA_ARCHITECTURES"), archs, where
            )
        if "GGML_BACKEND_DL" in cache:
            differs(f"{field}.cmake_cache.GGML_BACKEND_DL", _on(cache["GGML_BACKEND_DL"]), info.ggml_backend_dl, where)
        if recipe.get("cuda") is not None or info.toolkit_version is not None:
            differs(f"{field}.cuda", recipe.get("cuda"), info.toolkit_version, where)
    for leg, info in sorted(by_leg.items()):
        if info.build is not None and leg not in (builds or {}):
            out.append(
                f"{n}: internalParameters.builds.{leg}: missing, but {info.asset_name}'s info file records its build"
            )
    return _dedup(out)


def _recipe_problems(field: str, stated: Mapping[str, Any], recorded: Mapping[str, Any], where: str) -> list[str]:
    """Each key of a leg's recipe (one level into tables: ``flags.CMAKE_C_FLAGS``) whose value
    the statement states otherwise than the bundle's info file records. ``cuda``, which an info
    file may leave out, is compared with its ``toolkit_version`` instead."""
    out: list[str] = []
    for k in sorted(set(stated) | set(recorded)):
        if (k == "cuda" and k not in recorded) or k == "toolkit":  # the components: dependencies
            continue
        s, r = stated.get(k), recorded.get(k)
        if isinstance(s, dict) and isinstance(r, dict):
            for sub in sorted(set(s) | set(r)):
                if s.get(sub) != r.get(sub):
                    out.append(
                        f"{PROVENANCE_NAME}: {field}.{k}.{sub}: states {s.get(sub)!r}, {where} says {r.get(sub)!r}"
                    )
        elif s != r:
            out.append(f"{PROVENANCE_NAME}: {field}.{k}: states {s!r}, {where} says {r!r}")
    return out


def _toolkit_problems(by_name: Mapping[str, dict[str, Any]], info: BundleInfo) -> list[str]:
    """The toolkit components the statement says ``info``'s leg compiled with (dependencies
    ``<leg>: <component> <version> (<platform>, <role>)``) are those its info file records, by
    sha256."""
    recorded = {toolkit_dep_name(info.leg, c): c.get("sha256") for c in (info.build or {}).get("toolkit") or []}
    pattern = re.compile(rf"{re.escape(info.leg)}: \S+ \S+ \(\S+, \S+\)")
    stated = {k: _dig(d, "digest", "sha256") for k, d in by_name.items() if pattern.fullmatch(k)}
    where = f"{info.asset_name}'s info file"
    out = [
        f"{PROVENANCE_NAME}: resolvedDependencies[{k}]: missing ({where} records this toolkit component)"
        for k in sorted(set(recorded) - set(stated))
    ]
    out += [
        f"{PROVENANCE_NAME}: resolvedDependencies[{k}]: a toolkit component {where} does not record"
        for k in sorted(set(stated) - set(recorded))
    ]
    out += [
        f"{PROVENANCE_NAME}: resolvedDependencies[{k}].digest.sha256: states {stated[k]!r}, {where} says {recorded[k]!r}"
        for k in sorted(set(stated) & set(recorded))
        if stated[k] != recorded[k]
    ]
    return out


def _dedup(lines: list[str]) -> list[str]:
    """``lines`` without repeats (a field compared twice, by the recipe and by the info's own
    fields, is named once), in order."""
    return list(dict.fromkeys(lines))


def _paired_problems(by_name: Mapping[str, dict[str, Any]], index: ShaIndex) -> list[str]:
    """Each paired upstream asset's dependency has the index's sha256."""
    out: list[str] = []
    for name, e in sorted(index.of_kind("runtime").items()):
        d = by_name.get(name)
        stated = _dig(d, "digest", "sha256")
        if d is None:
            out.append(f"{PROVENANCE_NAME}: resolvedDependencies[{name}]: missing (a paired asset of {INDEX_NAME})")
        elif stated != e.sha256:
            out.append(
                f"{PROVENANCE_NAME}: resolvedDependencies[{name}].digest.sha256: states {stated!r}, "
                f"{INDEX_NAME} says {e.sha256!r}"
            )
    return out


def _on(v: Any) -> bool | Any:
    """CMake's truth of a cache value (``ON``/``OFF``...), or the value itself when it is neither."""
    s = str(v).upper()
    return True if s in ("ON", "1", "TRUE", "YES", "Y") else False if s in ("OFF", "0", "FALSE", "NO", "N", "") else v


def _source_problems(by_name: Mapping[str, dict[str, Any]], index: ShaIndex) -> list[str]:
    """The ``llama.cpp`` dependency and a mix's pull requests against the index header."""
    n = PROVENANCE_NAME
    d = by_name.get("llama.cpp")
    if d is None:
        return [f"{n}: resolvedDependencies[llama.cpp]: missing (the source the release was built from)"]
    out: list[str] = []
    archive = source_archive_name(index.source_commit)
    entry = index.artifacts.get(archive)
    field = "resolvedDependencies[llama.cpp]"
    pairs = (
        ("uri", _dig(d, "uri"), f"git+https://github.com/{index.source_repo}@{index.source_commit}", "source_repo"),
        ("digest.gitCommit", _dig(d, "digest", "gitCommit"), index.source_commit, "source_commit"),
        ("digest.sha256", _dig(d, "digest", "sha256"), entry.sha256 if entry else None, f"sha256 of {archive}"),
        ("annotations.archive", _dig(d, "annotations", "archive"), archive, "source_commit"),
        ("annotations.upstream_tag", _dig(d, "annotations", "upstream_tag"), index.upstream_tag, "upstream_tag"),
        (
            "annotations.source_ref_kind",
            _dig(d, "annotations", "source_ref_kind"),
            index.source_ref_kind,
            "source_ref_kind",
        ),
        ("annotations.ggml_tree", _dig(d, "annotations", "ggml_tree"), index.ggml_tree, "ggml_tree"),
    )
    for key, stated, actual, what in pairs:
        if stated != actual:
            out.append(f"{n}: {field}.{key}: states {stated!r}, {INDEX_NAME} {what} gives {actual!r}")
    stated_prs = {k: v for k, v in by_name.items() if "#" in k and not k.startswith("base ")}
    for pr in index.merged_prs:
        key = f"{pr.repo}#{pr.number}"
        got = _dig(stated_prs.pop(key, None), "digest", "gitCommit")
        if got != pr.sha:
            out.append(
                f"{n}: resolvedDependencies[{key}].digest.gitCommit: states {got!r}, {INDEX_NAME} merged_prs {pr.sha!r}"
            )
    for key in sorted(stated_prs):
        if ": " not in key:  # a leg's runtime file may hold '#' in its name; a pull request never holds ': '
            out.append(f"{n}: resolvedDependencies[{key}]: a pull request {INDEX_NAME} merged_prs does not name")
    return out


def _bundle_dep_problems(by_name: Mapping[str, dict[str, Any]], infos: Mapping[str, BundleInfo]) -> list[str]:
    """Each bundle's runtime files and imported builds, as its info JSON lists them."""
    n = PROVENANCE_NAME
    out: list[str] = []
    for asset, info in sorted(infos.items()):
        where = f"{asset}'s info file"
        for rf in info.runtime_files:
            key = f"{info.leg}: {rf.name}"
            d = by_name.get(key)
            if d is None:
                out.append(f"{n}: resolvedDependencies[{key}]: missing ({where} lists it)")
                continue
            stated = (
                _dig(d, "digest", "sha256"),
                _dig(d, "annotations", "origin"),
                _dig(d, "annotations", "version"),
                _dig(d, "annotations", "from"),
            )
            for what, s, a in zip(
                ("digest.sha256", "annotations.origin", "annotations.version", "annotations.from"),
                stated,
                (rf.sha256, rf.origin, rf.version, rf.source),
                strict=True,
            ):
                if s != a:
                    out.append(f"{n}: resolvedDependencies[{key}].{what}: states {s!r}, {where} says {a!r}")
        for imp in info.imported_builds:
            key = f"{imp.leg}: build imported from another runner"
            want = files_digest(imp.files)
            got = _dig(by_name.get(key), "digest", "sha256")
            if got != want:
                out.append(f"{n}: resolvedDependencies[{key}].digest.sha256: states {got!r}, {where} gives {want!r}")
    return out


__all__ = ["statement_problems"]
