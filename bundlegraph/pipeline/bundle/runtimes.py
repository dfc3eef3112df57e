"""Runtime files a bundle ships (``[runtime] ships`` of a spec) and their licenses.

- ``from = "toolkit"``: a file at ``path`` under the leg's target CUDA toolkit prefix
  (e.g. ``bin/arm64/cudart64_13.dll``); version = the toolkit's version.
- ``from = "toolchain"``: a file found under the toolchain's redist root (MSVC:
  ``<VS>/VC/Redist/MSVC``, holding version directories such as ``14.40.33807``). The NEWEST
  version directory that holds the file wins (dotted numeric compare), never the first glob
  hit: an old ``libomp140.aarch64.dll`` without ``__kmpc_dispatch_deinit`` once broke every
  bundle of a release. Inside that directory a non-debug path wins over ``debug_nonredist``,
  then the lexically first path. The chosen version is recorded.

NVIDIA's license for a shipped CUDA runtime file comes from the toolkit, per component: the
redist archive's ``LICENSE`` or the wheel's ``*.dist-info/licenses/*``, kept by the toolkit
install under ``share/<component>/`` (:func:`toolkit_licenses`).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING

from ...core.errors import BundleGraphError
from ...core.fsutil import sha256_file
from ...core.lightclass import frozen
from ...schemas.records import BundleSpec

if TYPE_CHECKING:  # the info format is imported where a runtime file is resolved (never while planning)
    from ...schemas.manifest import RuntimeFileInfo

_VERSION_DIR = re.compile(r"^\d+(\.\d+)+$")


@frozen
class RuntimeFile:
    """A resolved runtime file: ``name`` in the bundle, ``path`` on disk, and its record."""

    name: str
    path: Path
    info: RuntimeFileInfo


def msvc_redist_root(env: dict[str, str] | None = None) -> Path | None:
    """The MSVC redist root (``VC/Redist/MSVC``): ``BUNDLEGRAPH_MSVC_REDIST``, else the parent
    of ``VCToolsRedistDir``, else ``VCINSTALLDIR/Redist/MSVC``; None when none is set."""
    env = dict(os.environ) if env is None else env
    from ...core import settings

    own = settings.get("MSVC_REDIST", env)
    if own:
        return Path(own)
    if env.get("VCToolsRedistDir"):
        return Path(env["VCToolsRedistDir"].rstrip("\\/")).parent
    if env.get("VCINSTALLDIR"):
        return Path(env["VCINSTALLDIR"]) / "Redist" / "MSVC"
    return None


def pick_toolchain_runtime(name: str, redist_root: Path) -> RuntimeFile:
    """Find ``name`` in the newest version directory of ``redist_root`` that holds it.

    Raises :class:`BundleGraphError` naming the root and the versions looked at when no
    version directory holds the file."""
    if not redist_root.is_dir():
        raise BundleGraphError(f"runtime {name}: toolchain redist root {redist_root} is not a directory")
    versions = sorted(
        (d for d in redist_root.iterdir() if d.is_dir() and _VERSION_DIR.match(d.name)),
        key=lambda d: tuple(int(x) for x in d.name.split(".")),
        reverse=True,
    )
    for vdir in versions:
        hits = [p for p in vdir.rglob(name) if p.is_file()]
        if not hits:
            continue
        hits.sort(key=lambda p: ("debug" in p.relative_to(vdir).as_posix().lower(), p.relative_to(vdir).as_posix()))
        best = hits[0]
        rel = best.relative_to(redist_root).as_posix()
        from ...schemas.manifest import RuntimeFileInfo

        return RuntimeFile(
            name,
            best,
            RuntimeFileInfo(name=name, origin="toolchain", version=vdir.name, source=rel, sha256=sha256_file(best)),
        )
    looked = ", ".join(d.name for d in versions) or "none"
    raise BundleGraphError(
        f"runtime {name}: not found in any version directory of {redist_root} (versions: {looked}); "
        f"install the MSVC component that provides it"
    )


def toolkit_runtime(name: str, rel: str, prefix: Path, version: str | None) -> RuntimeFile:
    """``prefix/rel`` as the shipped file ``name``; raises naming the missing path."""
    p = prefix / rel
    if not p.is_file():
        raise BundleGraphError(f"runtime {name}: {rel} is not in the target toolkit at {prefix}")
    from ...schemas.manifest import RuntimeFileInfo

    return RuntimeFile(
        name, p, RuntimeFileInfo(name=name, origin="toolkit", version=version, source=rel, sha256=sha256_file(p))
    )


def resolve_shipped(
    spec: BundleSpec,
    *,
    origin: str,
    toolkit_prefix: Path | None = None,
    toolkit_version: str | None = None,
    redist_root: Path | None = None,
) -> list[RuntimeFile]:
    """The spec's shipped runtime files of one ``origin`` (``toolkit`` or ``toolchain``), in
    spec order. Raises naming the spec key when the needed prefix/root is not given."""
    out: list[RuntimeFile] = []
    for i, s in enumerate(spec.runtime.ships):
        if s.from_ != origin:
            continue
        where = f"{spec.id}: runtime.ships[{i}] ({s.name})"
        if origin == "toolkit":
            if toolkit_prefix is None:
                raise BundleGraphError(f"{where}: ships a toolkit file but the leg has no target toolkit")
            if not s.path:
                raise BundleGraphError(f"{where}: from = 'toolkit' needs 'path' under the toolkit prefix")
            out.append(toolkit_runtime(s.name, s.path, toolkit_prefix, toolkit_version))
        else:
            if redist_root is None:
                raise BundleGraphError(
                    f"{where}: ships a toolchain file but no redist root is known; run inside the "
                    f"toolchain's environment (VCToolsRedistDir) or set BUNDLEGRAPH_MSVC_REDIST"
                )
            out.append(pick_toolchain_runtime(s.name, redist_root))
    return out


def toolkit_licenses(prefix: Path, shipped: list[RuntimeFileInfo]) -> list[tuple[str, Path]]:
    """``[(title, license file)]`` for the runtime files in ``shipped`` that come from the toolkit
    at ``prefix``: each component's own license, as NVIDIA put it beside the component
    (:func:`bundlegraph.toolkit.install.license_of`), once per component, titled with the files it
    covers. Raises :class:`~bundlegraph.core.errors.ToolkitError` naming a file that has none."""
    from ...toolkit.install import license_of

    by: dict[str, tuple[Path, list[str]]] = {}
    for r in sorted(shipped, key=lambda r: r.name):
        if r.origin != "toolkit" or r.source is None:
            continue
        comp, lic = license_of(prefix, r.source)
        by.setdefault(comp, (lic, []))[1].append(r.name)
    return [(f"NVIDIA {comp} (shipped: {', '.join(names)})", lic) for comp, (lic, names) in sorted(by.items())]


def third_party_text(tree: Path, nvidia: list[tuple[str, Path]] | None = None) -> bytes:
    """``THIRD_PARTY_LICENSES.txt``: the source tree's licenses (``LICENSE`` then every file under
    ``licenses/``, sorted), then ``nvidia`` (``(title, file)`` from :func:`toolkit_licenses`), each
    under a ``==== <title> ====`` heading, LF newlines (CRLF in inputs normalised), UTF-8. Raises
    when the tree has no ``LICENSE``."""
    if not (tree / "LICENSE").is_file():
        raise BundleGraphError(f"source tree {tree} has no LICENSE file")
    extra = sorted((p for p in (tree / "licenses").rglob("*") if p.is_file()), key=lambda p: p.as_posix())
    parts = [("llama.cpp (LICENSE)", tree / "LICENSE")]
    parts += [(f"llama.cpp {p.relative_to(tree).as_posix()}", p) for p in extra]
    parts += nvidia or []
    out = []
    for title, p in parts:
        text = p.read_bytes().decode("utf-8", "replace").replace("\r\n", "\n").rstrip("\n")
        out.append(f"==== {title} ====\n\n{text}\n")
    return "\n".join(out).encode("utf-8")
