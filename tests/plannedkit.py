"""Releases that are planned, not built, as a ``dist/`` an installer can be pointed at: ours
(:func:`bundlegraph.installer.planned.planned_manifest` of ``bundles/``) and the fork's
(``tests/data/fork/cuda-matrix.json``: its CUDA bundles as its workflows state them, plus one CPU
bundle per platform).

Use::

    ours = write_dist(planned_manifest(load_matrix(ROOT / "bundles")), tmp / "ours")
    fork = write_dist(fork_manifest(), tmp / "fork")

A planned dist holds the real manifest and SHA index an installer reads to choose, and for each
bundle (and the source archive the index must name) a small file that says it is planned (its sha256 is in the index, so the installer's
listing and hash bookkeeping see a consistent release). Those files are never installed: only
selection is asked of a planned release.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

from bundlegraph.installer.planned import PLANNED_COMMIT
from bundlegraph.schemas.archs import parse_arch
from bundlegraph.schemas.manifest import INDEX_NAME, MANIFEST_NAME, IndexEntry, Manifest, ManifestArtifact, ShaIndex

DATA = Path(__file__).resolve().parent / "data" / "fork"
FORK_TAG = "b11642"
CPU_KINDS = {("linux", "x64"): "linux-cpu", ("linux", "arm64"): "linux-arm64", ("windows", "x64"): "windows-cpu"}
CPU_KINDS[("windows", "arm64")] = "windows-arm64"


def _suffix(os_: str) -> str:
    return ".zip" if os_ == "windows" else ".tar.gz"


def fork_sms(archs: str, sms: str | None) -> list[int]:
    """The fork's ``supported_sms`` (its package_bundle.py, restated): the stated ``sms``, else the
    leading SM of each arch, plus 103 where 100 is built."""
    if sms:
        return sorted(int(s) for s in sms.split())
    out = {parse_arch(a).sm for a in archs.split()}
    if 100 in out:
        out.add(103)
    return sorted(out)


def fork_manifest() -> Manifest:
    """The fork's release as a manifest: every CUDA row of ``cuda-matrix.json`` on each of its
    OSes, and a CPU bundle for each platform."""
    rows = json.loads((DATA / "cuda-matrix.json").read_text())["rows"]
    arts = []
    for r in rows:
        sms = fork_sms(r["archs"], r.get("sms"))
        for os_ in r["os"]:
            kind = f"{os_}-cuda" if r["arch"] == "x64" else f"{os_}-arm64-cuda"
            name = f"app-{FORK_TAG}-{os_}-{r['arch']}-{r['profile']}{_suffix(os_)}"
            arts.append(
                ManifestArtifact(
                    asset_name=name,
                    install_kind=kind,
                    os=os_,
                    arch=r["arch"],
                    bundle_profile=r["profile"],
                    runtime_line=r["line"],
                    coverage_class=r["klass"],
                    supported_sms=sms,
                    min_sm=min(sms),
                    max_sm=max(sms),
                    rank=r["rank"],
                    toolkit_version=r["toolkit"],
                    ggml_backend_dl=True,
                )
            )
    for (os_, arch), kind in CPU_KINDS.items():
        arts.append(
            ManifestArtifact(
                asset_name=f"app-{FORK_TAG}-{os_}-{arch}-cpu{_suffix(os_)}",
                install_kind=kind,
                os=os_,
                arch=arch,
                bundle_profile="cpu",
                runtime_line=None,
                coverage_class="cpu",
                supported_sms=[],
                min_sm=None,
                max_sm=None,
                rank=10,
                toolkit_version=None,
                ggml_backend_dl=True,
            )
        )
    return Manifest(
        source_repo="ggml-org/llama.cpp",
        source_commit=PLANNED_COMMIT,
        upstream_tag=FORK_TAG,
        release_tag=FORK_TAG,
        artifacts=sorted(arts, key=lambda a: a.asset_name),
    )


def write_dist(manifest: Manifest, dest: Path) -> Path:
    """``dest`` holding ``manifest``, a SHA index of it and of one planned-bundle file per entry
    (module docstring); returns ``dest``."""
    dest.mkdir(parents=True, exist_ok=True)
    entries: dict[str, IndexEntry] = {}
    for a in manifest.artifacts:
        assert re.fullmatch(r"[A-Za-z0-9._+-]+", a.asset_name), a.asset_name
        body = f"planned, not built: {a.asset_name}\n".encode()
        (dest / a.asset_name).write_bytes(body)
        entries[a.asset_name] = IndexEntry(
            kind="bundle", sha256=hashlib.sha256(body).hexdigest(), source_commit=manifest.source_commit
        )
    # the installer takes a release only when its index names the source archive of its commit
    src = f"llama.cpp-source-commit-{manifest.source_commit}.tar.gz"
    body = f"planned, not built: {src}\n".encode()
    (dest / src).write_bytes(body)
    entries[src] = IndexEntry(
        kind="upstream-source", sha256=hashlib.sha256(body).hexdigest(), source_commit=manifest.source_commit
    )
    mbytes = (manifest.model_dump_json(indent=2) + "\n").encode()
    (dest / MANIFEST_NAME).write_bytes(mbytes)
    entries[MANIFEST_NAME] = IndexEntry(
        kind="manifest", sha256=hashlib.sha256(mbytes).hexdigest(), source_commit=manifest.source_commit
    )
    head = manifest.model_dump(include={"source_repo", "source_commit", "upstream_tag", "release_tag"})
    index = ShaIndex(**head, artifacts=dict(sorted(entries.items())))
    (dest / INDEX_NAME).write_text(index.model_dump_json(indent=2) + "\n")
    return dest
