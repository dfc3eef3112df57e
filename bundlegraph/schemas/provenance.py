"""The release's provenance: ``llama-prebuilt-provenance.json``, an in-toto Statement v1 whose
predicate is SLSA Provenance v1, written by the ``manifest`` task right after the SHA index.

Formats: in-toto's Statement v1 (``https://in-toto.io/Statement/v1``: ``_type``, ``subject`` (each
a ResourceDescriptor with ``name`` and ``digest``), ``predicateType``, ``predicate``) and SLSA's
Provenance v1 (``https://slsa.dev/provenance/v1``: ``buildDefinition`` {``buildType``,
``externalParameters``, ``internalParameters``, ``resolvedDependencies``} and ``runDetails``
{``builder`` {``id``}, ``metadata`` {``invocationId``, ``startedOn``}}), as the in-toto
attestation project's specifications and protobuf bindings define them.

- **Subjects**: every asset of the SHA index and the index itself, by name and sha256, sorted by
  name. (The statement is not in the index: it names the index's digest.)
- **externalParameters**: the release tag, the legs whose bundles it holds, and each spec
  file's sha256 (``release.toml`` and ``<leg>.toml``).
- **internalParameters**: bundlegraph's version and, per leg compiled in this work directory,
  what a rebuild must match (:func:`build_recipe`: toolchain, compiler and tool versions, CMake
  cache entries, flags, and the prefix maps with every build-host root written as its stable
  name, so no path of the builder's machine is published).
- **resolvedDependencies**: the llama.cpp source (repo, commit, the source archive's sha256; a
  mix's base and pull requests too), each CUDA toolkit component a leg compiled with (version,
  platform, host or target role, sha256 of the file downloaded), each runtime file a bundle ships (its toolkit or toolchain
  origin and sha256), each paired upstream asset (its sha256 and how it was verified:
  ``pinned``, ``local:<file>`` or the upstream release's published ``digest``; and whether upstream's
  attestation of a local copy was verified with ``gh attestation verify``, or why not) and each
  imported build (where it came from and every file's sha256). What could be verified only by
  its hash says so.
- **runDetails**: ``builder.id`` is the workflow ref on GitHub Actions
  (``$GITHUB_SERVER_URL/$GITHUB_WORKFLOW_REF``), else ``local``; ``invocationId`` the run id and
  attempt there. No clock is read: ``startedOn`` only from ``SOURCE_DATE_EPOCH``.

The same inputs give the same bytes (sorted keys, two-space indent, one trailing newline).
"""

from __future__ import annotations

import datetime as _dt
import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .. import __version__

PROVENANCE_NAME = "llama-prebuilt-provenance.json"
STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PREDICATE_TYPE = "https://slsa.dev/provenance/v1"
BUILD_TYPE = "urn:bundlegraph:build-type:release:v1"
"""What a bundlegraph release build is (a URI of ours: SLSA asks for a TypeURI naming the
build's template; this one is bundlegraph's release graph, its parameters above)."""


def subjects(index_name: str, index_bytes: bytes, index_json: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every asset of the index (``artifacts``: name -> ``{"sha256"}``) and the index itself."""
    import hashlib

    out = [{"name": n, "digest": {"sha256": e["sha256"]}} for n, e in index_json["artifacts"].items()]
    out.append({"name": index_name, "digest": {"sha256": hashlib.sha256(index_bytes).hexdigest()}})
    return sorted(out, key=lambda s: s["name"])


def builder(env: Mapping[str, str]) -> tuple[str, dict[str, Any]]:
    """``(builder.id, metadata)`` from a GitHub Actions environment, else ``("local", {})``
    (``startedOn`` from ``SOURCE_DATE_EPOCH`` either way)."""
    meta: dict[str, Any] = {}
    ref = env.get("GITHUB_WORKFLOW_REF")
    if env.get("GITHUB_ACTIONS") == "true" and ref:
        bid = f"{env.get('GITHUB_SERVER_URL', 'https://github.com')}/{ref}"
        if env.get("GITHUB_RUN_ID"):
            meta["invocationId"] = f"{env['GITHUB_RUN_ID']}-{env.get('GITHUB_RUN_ATTEMPT', '1')}"
    else:
        bid = "local"
    epoch = env.get("SOURCE_DATE_EPOCH")
    if epoch and epoch.isdigit():
        meta["startedOn"] = _dt.datetime.fromtimestamp(int(epoch), _dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return bid, meta


def statement(
    *,
    index_name: str,
    index_bytes: bytes,
    release: Any,
    legs: list[str],
    spec_files: Mapping[str, Path],
    source: Mapping[str, Any],
    bundle_infos: Sequence[Any],
    paired: Sequence[Mapping[str, Any]],
    env: Mapping[str, str],
    builds: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """The statement (a JSON object). ``release``: the release record; ``legs``: the legs whose
    bundles the release holds; ``spec_files``: name -> path of the spec files read;
    ``source``: ``{"repo", "commit", "archive", "archive_sha256", "ggml_tree"}``;
    ``bundle_infos``: each bundle's :class:`~bundlegraph.schemas.manifest.BundleInfo`;
    ``paired``: ``{"name", "sha256", "verified"}`` per paired asset; ``env``: the process
    environment (the CI's run, ``SOURCE_DATE_EPOCH``); ``builds``: leg -> :func:`build_recipe`
    for the legs compiled in this work directory."""
    from ..core.fsutil import sha256_file
    from .records import MixPin

    deps: list[dict[str, Any]] = [
        {
            "name": "llama.cpp",
            "uri": f"git+https://github.com/{source['repo']}@{source['commit']}",
            "digest": {"gitCommit": source["commit"], "sha256": source["archive_sha256"]},
            "annotations": {
                "archive": source["archive"],
                "source_ref_kind": release.source_ref_kind,
                "upstream_tag": release.upstream_tag,
                **({"ggml_tree": source["ggml_tree"]} if source.get("ggml_tree") else {}),
            },
        }
    ]
    if isinstance(release.source, MixPin):
        b = release.source.base
        deps.append(
            {
                "name": f"base {b.tag}",
                "uri": f"{release.source.url}@refs/tags/{b.tag}",
                "digest": {"gitCommit": b.commit, "sha256": b.sha256},
                "annotations": {"sha256_of": "git archive --format=tar <commit>"},
            }
        )
        for p in release.source.prs:
            deps.append(
                {
                    "name": f"{p.repo}#{p.number}",
                    "uri": p.url,
                    "digest": {"gitCommit": p.sha},
                    "annotations": {"merged": "in this order, with git merge --no-ff", "title": p.title},
                }
            )
    for info in sorted(bundle_infos, key=lambda i: i.asset_name):
        for rf in info.runtime_files:
            deps.append(
                {
                    "name": f"{info.leg}: {rf.name}",
                    "digest": {"sha256": rf.sha256},
                    "annotations": {"origin": rf.origin, "version": rf.version, "from": rf.source},
                }
            )
        for imp in info.imported_builds:
            deps.append(
                {
                    "name": f"{imp.leg}: build imported from another runner",
                    "uri": imp.source,
                    "digest": {"sha256": files_digest(imp.files)},
                    "annotations": {"files": dict(sorted(imp.files.items()))},
                }
            )
    for leg, recipe in sorted((builds or {}).items()):
        for pkg in (recipe.get("compiler") or {}).get("packages", []):
            deps.append(
                {
                    "name": f"{leg}: compiler package {pkg['name']} {pkg['version']} ({pkg['architecture']})",
                    "digest": {"sha256": pkg["sha256"]},
                    "annotations": {"lock": recipe["compiler"].get("lock"), "task": recipe["compiler"].get("task")},
                }
            )
        for c in recipe.get("toolkit", []):
            deps.append(
                {
                    "name": toolkit_dep_name(leg, c),
                    "uri": c["origin"],
                    "digest": {"sha256": c["sha256"]},
                    "annotations": {"file": c["filename"], "source": c["source"]},
                }
            )
    for info in sorted(bundle_infos, key=lambda i: i.leg):  # a leg compiled on another runner's job
        if info.leg in (builds or {}) or info.build is None:
            continue
        for c in info.build.get("toolkit", []):
            deps.append(
                {
                    "name": toolkit_dep_name(info.leg, c),
                    "digest": {"sha256": c["sha256"]},
                    "annotations": {"recorded": f"in {info.asset_name}'s info file"},
                }
            )
    for pa in sorted(paired, key=lambda x: x["name"]):
        deps.append(
            {
                "name": pa["name"],
                "uri": f"https://github.com/{release.source_repo}/releases/download/{release.paired_runtime_tag}/{pa['name']}",
                "digest": {"sha256": pa["sha256"]},
                "annotations": {
                    "verified": verified_as(pa["verified"]),
                    "attestation": pa.get("attested") or "not verified: not a file of this run",
                },
            }
        )
    bid, meta = builder(env)
    return {
        "_type": STATEMENT_TYPE,
        "subject": subjects(index_name, index_bytes, json.loads(index_bytes)),
        "predicateType": PREDICATE_TYPE,
        "predicate": {
            "buildDefinition": {
                "buildType": BUILD_TYPE,
                "externalParameters": {
                    "tag": release.tag,
                    "legs": sorted(legs),
                    "specs": {n: sha256_file(p) for n, p in sorted(spec_files.items())},
                },
                "internalParameters": {
                    "bundlegraph": __version__,
                    "builds": internal_builds(builds or {}, bundle_infos),
                },
                "resolvedDependencies": deps,
            },
            "runDetails": {"builder": {"id": bid}, "metadata": meta},
        },
    }


def internal_builds(builds: Mapping[str, Mapping[str, Any]], bundle_infos: Sequence[Any]) -> dict[str, Any]:
    """``internalParameters.builds``: leg -> recipe, for each leg configured in this work
    directory (its :func:`build_recipe` without the toolkit's downloads, which are dependencies)
    and each other leg whose bundle's info file records how it was compiled where it was (the
    release's manifest job compiles nothing itself)."""
    out: dict[str, Any] = {leg: {k: v for k, v in r.items() if k != "toolkit"} for leg, r in builds.items()}
    for info in bundle_infos:
        if info.build is not None and info.leg not in out:
            out[info.leg] = {k: v for k, v in info.build.items() if k != "toolkit"}
    return dict(sorted(out.items()))


TOOLKIT_KEYS = ("component", "version", "platform", "role", "sha256")
"""What a bundle's info file records of each toolkit component its leg compiled with (where it
was downloaded from is the provenance's to say: a mirror's address is no property of the bytes)."""


def toolkit_dep_name(leg: str, c: Mapping[str, Any]) -> str:
    """The provenance's name of toolkit component ``c`` of ``leg``:
    ``<leg>: <component> <version> (<platform>, <role>)``."""
    return f"{leg}: {c['component']} {c['version']} ({c['platform']}, {c['role']})"


ROOT_ROLES = {
    "llama.cpp": "the llama.cpp source tree",
    "build": "CMake's binary directory",
    "cuda": "the CUDA toolkit's root",
    "work": "the work directory",
    "cache": "the download and toolkit cache",
}
"""What each stable name of :mod:`bundlegraph.toolchains.prefix_maps` stands for."""


def build_recipe(configure: Mapping[str, Any], receipt: Mapping[str, Any] | None) -> dict[str, Any]:
    """What a rebuild of one leg must match, from its ``configure.json`` (``configure``) and its
    toolkit's receipt (``bundlegraph-toolkit.json``, None for a CPU leg): the toolchain, compiler
    and build-tool versions, the CMake cache entries, each language's flags and the prefix maps.
    Each build-host root is written as ``<name>`` (its stable name, :data:`ROOT_ROLES` says what
    it stands for), in the flags and in the CMake cache's values (a toolkit library pinned by
    path), so the statement names no path of the machine that built it.
    ``toolkit``: each installed component (component, version, platform, role, origin, file,
    sha256). ``compiler`` (a Linux leg): the pinned compiler, its lock, floors and every package
    by sha256 (:func:`bundlegraph.pipeline.configure.compiler_record`). ``vulkan`` (a Vulkan leg): its SDK (task, source, header and glslc versions) and
    ``shader_extensions``/``compiled_out``, the shader paths glslc could not compile (reported,
    not hidden)."""
    maps: dict[str, str] = dict(configure.get("prefix_maps") or {})

    def unrooted(text: str) -> str:
        for name, root in sorted(maps.items(), key=lambda kv: -len(kv[1])):
            text = text.replace(root, f"<{name}>")
        return text

    inputs = configure.get("inputs") or {}
    out: dict[str, Any] = {
        "toolchain": configure.get("toolchain"),
        "compilers": inputs.get("compilers"),
        "tools": {k: v.get("version") for k, v in (inputs.get("tools") or {}).items()},
        "cmake_cache": {
            k: unrooted(v) if isinstance(v, str) else v for k, v in sorted((configure.get("cache") or {}).items())
        },
        "flags": {
            k: _maps_in_name_order(unrooted(v)) for k, v in sorted((configure.get("compile_flags") or {}).items())
        },
        "prefix_maps": {f"<{name}>": ROOT_ROLES.get(name, name) for name in sorted(maps)},
    }
    if configure.get("compiler"):  # a Linux leg: the pinned compiler (lock, floors, every package by sha256)
        out["compiler"] = configure["compiler"]
    if configure.get("vulkan"):  # a Vulkan leg: its SDK and the shader set glslc could compile (compiled_out)
        out["vulkan"] = configure["vulkan"]
    if receipt is not None:
        keep = ("component", "version", "platform", "role", "origin", "filename", "sha256", "source")
        out["toolkit"] = [{k: c.get(k) for k in keep} for c in receipt.get("components", [])]
        out["cuda"] = receipt.get("cuda")
    return out


def _maps_in_name_order(flags: str) -> str:
    """``flags`` with its prefix-map options (``-ffile-prefix-map=<work>=work``, nvcc's
    ``-Xcompiler=`` form, cl.exe's ``/d1trimfile:<work>``) in the order of their stable names,
    each in the place one of them held. The compilers get them ordered by the length of the
    build host's roots (the most specific wins: :mod:`bundlegraph.toolchains.prefix_maps`),
    which depends on where the build ran; once the roots are written as stable names the
    order carries nothing, and the recipe (in every bundle's info file) must not depend on the
    machine."""
    words = flags.split(" ")
    at = [i for i, w in enumerate(words) if "prefix-map=<" in w or "/d1trimfile:<" in w]
    for i, w in zip(at, sorted(words[i] for i in at), strict=True):
        words[i] = w
    return " ".join(words)


def verified_as(how: str) -> str:
    """How a paired asset's sha256 was had, in words that do not depend on the machine or the run:
    ``pinned`` (the spec pins it), ``local file`` (a file of this run, checked against a pin when
    there is one), ``upstream release`` (its published digest, or the sha256 of the bytes
    downloaded from it: both name the upstream release's asset; ``verify-release`` checks the
    index against the published digest). Source: :class:`bundlegraph.pipeline.paired_assets.AssetHash`."""
    if how == "pinned":
        return "pinned in the spec"
    if how.startswith("local:"):
        return "local file (sha256 of its bytes)"
    return "upstream release asset"


def files_digest(files: Mapping[str, str]) -> str:
    """sha256 of the canonical JSON (sorted keys) of ``files`` (name -> sha256): an imported
    build's digest in the statement."""
    import hashlib

    return hashlib.sha256(json.dumps(dict(sorted(files.items())), sort_keys=True).encode()).hexdigest()


def render(st: Mapping[str, Any]) -> bytes:
    """The statement's bytes: sorted keys, two-space indent, a trailing newline."""
    return (json.dumps(st, sort_keys=True, indent=2, ensure_ascii=False) + "\n").encode()


def environment() -> dict[str, str]:
    """What :func:`builder` reads of this process's environment."""
    keys = ("GITHUB_ACTIONS", "GITHUB_SERVER_URL", "GITHUB_WORKFLOW_REF", "GITHUB_RUN_ID", "GITHUB_RUN_ATTEMPT")
    return {k: os.environ[k] for k in (*keys, "SOURCE_DATE_EPOCH") if k in os.environ}


__all__ = ["BUILD_TYPE", "PREDICATE_TYPE", "PROVENANCE_NAME", "STATEMENT_TYPE", "environment", "render", "statement"]
