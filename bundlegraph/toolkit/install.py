"""Install a component set into ``<cache>/toolkits/<name>/`` (redist or wheels source), or
describe a host toolkit (host source, :mod:`bundlegraph.toolkit.hostsrc`).

Steps (redist/wheels): resolve the archives (manifest rows or lock rows); fetch every archive
into the verified blob cache (nothing unverified is extracted); under an inter-process lock,
build a fresh directory beside the prefix: extract each archive safely, lay it out for the
target (:mod:`bundlegraph.toolkit.layout`), add unversioned links, the standard nvcc.profile and
a link-only driver stub (wheels), write ``version.json`` and the receipt, validate every
required file, then rename into place. A failure leaves the previous prefix (or none) untouched.

NVIDIA's license files are kept from both layouts under ``share/<component>/``: a redist
archive's ``LICENSE`` at its root (NVIDIA's redist layout) and a wheel's
``*.dist-info/licenses/*`` (NVIDIA's wheels). Each component's receipt entry names its
``license`` (prefix-relative path, None when the archive had none) and, for target components,
the ``files`` it placed, so ``package`` ships each runtime file with the license NVIDIA put beside
it (:func:`license_of`).

Receipt (``bundlegraph-toolkit.json`` in the prefix)::

    {"name", "set_digest", "source", "cuda", "host_platform", "target_platform", "target_dir",
     "components": [{"component", "role", "platform", "version", "sha256", "size", "source",
                     "origin", "filename", "license", "files"}],
     "generated": [{"path", "what", "soname", "sha256", "ship": false}],
     "profile": {"path", "sha256", "form"} | null, "manifest"|"lock": {...}, "layout": 1}
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from ..core.download import download_many
from ..core.errors import ToolkitError, UnsafeArchive
from ..core.extract import extract
from ..core.fsutil import atomic_dir, atomic_write_json, locked, sha256_file
from ..core.report import say
from ..toolchains.cuda import is_windows, target_dir
from . import layout, validate
from .identity import ComponentSet
from .installed import receipt_of, say_installed
from .key import LAYOUT_VERSION
from .lockfile import WheelRow, load_lock
from .redist import Artifact, resolve
from .ref import RECEIPT, CudaToolkit
from .stub import SONAME, write_stub
from .wheels import fetch_wheel


def refuse_windows_wheels(cs: ComponentSet) -> None:
    """NVIDIA's Windows cublas wheel carries DLLs only (no ``cublas.lib``/``cublasLt.lib``), so
    a Windows target cannot link against a wheels toolkit: refuse it up front."""
    if cs.source == "wheels" and (is_windows(cs.target_platform) or is_windows(cs.host_platform)):
        raise ToolkitError(
            f"{cs.spec_file}: cuda.toolkit.source: 'wheels' cannot provide a toolkit for "
            f"{cs.target_platform}: NVIDIA's Windows cublas wheel has cublas64_*.dll/cublasLt64_*.dll but no "
            f'cublas.lib/cublasLt.lib import libraries, so nothing could link; use source = "redist"'
        )


def _wheel_artifacts(cs: ComponentSet, lock_path: Path) -> list[tuple[Artifact, WheelRow]]:
    lock = load_lock(lock_path)
    out = []
    for role, plat, comps in (("host", cs.host_platform, cs.host), ("target", cs.target_platform, cs.target)):
        for c in comps:
            row = lock.row(c, plat)
            if row is None:
                raise ToolkitError(f"{lock_path}: no wheel for {c} on {plat}; rerun `bundlegraph lock-wheels`")
            art = Artifact(c, c, role, plat, row.version, row.requirement, row.sha256, row.size, row.filename, "wheels")
            out.append((art, row))
    return out


def _wheel_root(stage: Path, filename: str) -> Path:
    roots = sorted(p for p in (stage / "nvidia").glob("cu*") if p.is_dir()) if (stage / "nvidia").is_dir() else []
    if len(roots) != 1:
        raise ToolkitError(
            f"wheel {filename}: expected one nvidia/cu<major>/ folder, found "
            f"{[p.name for p in roots] or 'none'} (not an NVIDIA CUDA wheel layout)"
        )
    return roots[0]


def install(cs: ComponentSet, ref: CudaToolkit, bundles: Path) -> Path:
    """Install (or reuse) the toolkit of ``cs`` at ``ref.prefix``; returns the receipt path.

    Raises :class:`ToolkitError` (unresolvable set, refused combination, validation failure),
    :class:`DownloadError`/:class:`HashMismatch` (fetch), :class:`UnsafeArchive` (extraction)."""
    if cs.source == "host":
        from .hostsrc import describe

        return describe(cs, ref)
    if cs.source == "debs":
        from .debsrc import install_debs

        return install_debs(cs, ref, bundles)
    refuse_windows_wheels(cs)
    prefix: Path = ref.prefix
    with locked(prefix.parent / f".{prefix.name}.lock", what=f"toolkit {cs.name}"):
        receipt = prefix / ref.receipt_file.name
        if _reusable(receipt, cs) and not validate.problems(prefix, cs):
            say(f"toolkit {cs.name}: already installed at {prefix}")
            return receipt
        t0 = time.monotonic()
        extra: dict[str, Any] = {}
        if cs.source == "redist":
            origin, mpath, arts = resolve(cs, bundles)
            extra["manifest"] = {"origin": origin, "sha256": sha256_file(mpath)}
            blobs = download_many([(a.url, a.sha256, a.size) for a in arts])
            pairs = list(zip(arts, blobs, strict=True))
        else:
            lock_path = (bundles / cs.pins["lock"]).resolve()
            extra["lock"] = {"path": cs.pins["lock"], "sha256": sha256_file(lock_path)}
            pairs = [(a, fetch_wheel(row)) for a, row in _wheel_artifacts(cs, lock_path)]
        fetched = time.monotonic() - t0
        # a stale or damaged entry is rebuilt whole beside it and swapped in by atomic_dir: the old
        # one stays in place until then (a run building from it meanwhile keeps its files, and a
        # failed or interrupted install leaves it as it was)
        with atomic_dir(prefix) as tmp:
            _assemble(cs, tmp, pairs, extra)
        say_installed(cs, f"{len(pairs)} components", prefix, fetched, t0)
        return receipt


def _reusable(receipt: Path, cs: ComponentSet) -> bool:
    data = receipt_of(receipt, cs)
    # a toolkit installed before NVIDIA's licenses were kept per component is laid out again
    # (from the verified blob cache: nothing is downloaded)
    return data is not None and all("license" in c for c in data.get("components", []))


LICENSE_NAMES = ("LICENSE", "LICENSE.txt", "License.txt", "EULA.txt")
"""File names NVIDIA gives its license: redist archives ``LICENSE``; wheels
``*.dist-info/licenses/License.txt``; full installers ``EULA.txt``."""


def _keep_wheel_license(stage: Path, tmp: Path, component: str) -> None:
    """A wheel's license files (``*.dist-info/licenses/*``, or ``*.dist-info/License.txt``) into
    ``share/<component>/`` of the prefix (the layout drops ``dist-info``)."""
    found = sorted(stage.glob("*.dist-info/licenses/*")) + sorted(stage.glob("*.dist-info/License.txt"))
    for f in found:
        if f.is_file():
            dest = tmp / "share" / component / f.name
            dest.parent.mkdir(parents=True, exist_ok=True)
            if not dest.exists():
                os.replace(f, dest)


def _license_path(tmp: Path, component: str) -> str | None:
    d = tmp / "share" / component
    hit = next((d / n for n in LICENSE_NAMES if (d / n).is_file()), None)
    return hit.relative_to(tmp).as_posix() if hit else None


def license_of(prefix: Path, rel: str) -> tuple[str, Path]:
    """``(component, license file)`` of the toolkit file ``rel`` (prefix-relative, e.g.
    ``bin/arm64/cudart64_13.dll``): the component whose receipt entry lists it and the license
    NVIDIA put beside that component. A ``host`` toolkit (no per-component receipt) answers with
    its own ``EULA.txt``/``LICENSE``. Raises :class:`ToolkitError` naming the file when it cannot
    be shipped with its license (unknown component, no license in its archive, or a toolkit
    installed before licenses were kept: delete that toolkit directory to reinstall it)."""
    receipt = prefix / "bundlegraph-toolkit.json"
    try:
        data = json.loads(receipt.read_text(encoding="utf-8"))
    except FileNotFoundError:
        data = None
    except (OSError, ValueError) as e:
        raise ToolkitError(f"{receipt}: unreadable ({e}); cannot tell which license goes with {rel}") from None
    if data is None or data.get("source") == "host":
        for n in ("EULA.txt", "LICENSE", "LICENSE.txt"):
            if (prefix / n).is_file():
                return "CUDA Toolkit", prefix / n
        raise ToolkitError(
            f"{rel}: the toolkit at {prefix} has no EULA.txt or LICENSE; a CUDA runtime file "
            f"is never shipped without NVIDIA's license"
        )
    for c in data.get("components", []):
        if rel in c.get("files", []):
            lic = c.get("license")
            if not lic or not (prefix / lic).is_file():
                raise ToolkitError(
                    f"{rel}: its component {c['component']} ({c.get('filename')}) came without a "
                    f"license file in {prefix}; it cannot be shipped"
                )
            return c["component"], prefix / lic
    if not any("files" in c for c in data.get("components", [])):
        raise ToolkitError(
            f"{rel}: the toolkit at {prefix} was installed before bundlegraph kept NVIDIA's "
            f"license per component; delete {prefix} so the toolkit task reinstalls it"
        )
    raise ToolkitError(
        f"{rel}: no component of the toolkit at {prefix} placed this file; it cannot be shipped with a license"
    )


def _assemble(cs: ComponentSet, tmp: Path, pairs: list[Any], extra: dict[str, Any]) -> None:
    owners: dict[str, str] = {}
    comps = []
    for art, blob in pairs:
        if sha256_file(blob) != art.sha256:  # the cache was changed since it was verified
            os.unlink(blob)
            raise ToolkitError(f"cached {art.filename} ({blob}) no longer has sha256 {art.sha256}; deleted, rerun")
        with tempfile.TemporaryDirectory(prefix=".stage-", dir=tmp) as d:
            stage = Path(d)
            try:
                extract(blob, stage, strip=0 if art.source == "wheels" else 1)
            except UnsafeArchive as e:
                raise UnsafeArchive(
                    f"{art.filename} ({art.component} for {art.platform}, {art.url}): refused, nothing installed: {e}"
                ) from None
            root = _wheel_root(stage, art.filename) if art.source == "wheels" else stage
            placed = layout.place(
                root, tmp, component=art.component, role=art.role, platform=art.platform, owners=owners
            )
            if art.source == "wheels":
                _keep_wheel_license(stage, tmp, art.component)
        entry = {
            **{k: v for k, v in art.as_json().items() if k not in ("url", "key")},
            "origin": art.url,
            "manifest_key": art.key,
            "license": _license_path(tmp, art.component),
        }
        if art.role == "target":
            entry["files"] = sorted(k for k in placed if not k.startswith("include/") and "/include/" not in k)
        comps.append(entry)
    plats = [cs.host_platform, cs.target_platform]
    layout.fill_headers(tmp, plats)
    for p in set(plats):
        if not is_windows(p):
            layout.unversioned_links(tmp / "targets" / target_dir(p) / "lib")
    layout.host_aliases(tmp, cs.host_platform)
    generated, profile = [], None
    if cs.source == "wheels":
        prof = layout.install_profile(tmp)
        profile = {"path": "bin/nvcc.profile", "sha256": sha256_file(prof), "form": "standard (targets/<dir>)"}
        lib = tmp / "targets" / target_dir(cs.target_platform) / "lib"
        if not (lib / "stubs" / "libcuda.so").exists():
            stub = write_stub(lib, cs.target_platform)
            if stub is not None:
                generated.append(
                    {
                        "path": stub.relative_to(tmp).as_posix(),
                        "what": "link-only driver stub",
                        "soname": SONAME,
                        "sha256": sha256_file(stub),
                        "ship": False,
                    }
                )
    atomic_write_json(tmp / "version.json", _version_json(cs, comps))
    validate.check(tmp, cs, what=cs.name)
    os.chmod(tmp, 0o755)  # mkdtemp made it private; the toolkit is shared by runs and users
    os.chmod(tmp / "version.json", 0o644)
    receipt = tmp / RECEIPT
    atomic_write_json(
        receipt,
        {
            "name": cs.name,
            "set_digest": cs.digest,
            "layout": LAYOUT_VERSION,
            "source": cs.source,
            "cuda": cs.cuda_version,
            "host_platform": cs.host_platform,
            "target_platform": cs.target_platform,
            "target_dir": target_dir(cs.target_platform),
            "components": comps,
            "generated": generated,
            "profile": profile,
            **extra,
        },
    )
    os.chmod(receipt, 0o644)


def _version_json(cs: ComponentSet, comps: list[dict[str, Any]]) -> dict[str, Any]:
    """NVIDIA's ``version.json`` form: ``{"cuda": {"name", "version"}, "<component>": {...}}``."""
    nvcc = next((c["version"] for c in comps if c["component"] == "cuda_nvcc"), cs.cuda_version)
    out = {"cuda": {"name": "CUDA SDK", "version": nvcc}}
    for c in comps:
        out[c["component"]] = {"name": c["component"], "version": c["version"], "platform": c["platform"]}
    return out
