"""Install a component set into ``<cache>/toolkits/<name>/`` (redist or wheels source), or
describe a host toolkit (host source, :mod:`bundlegraph.toolkit.hostsrc`).

Steps (redist/wheels): resolve the archives (manifest rows or lock rows); fetch every archive
into the verified blob cache (nothing unverified is extracted); under an inter-process lock,
build a fresh directory beside the prefix: extract each archive safely, lay it out for the
target (:mod:`bundlegraph.toolkit.layout`), add unversioned links, the standard nvcc.profile and
a link-only driver stub (wheels), write ``version.json`` and the receipt, validate every
required file, then rename into place. A failure leaves the previous prefix (or none) untouched.

Receipt (``bundlegraph-toolkit.json`` in the prefix)::

    {"name", "set_digest", "source", "cuda", "host_platform", "target_platform", "target_dir",
     "components": [{"component", "role", "platform", "version", "sha256", "size", "source",
                     "origin", "filename"}],
     "generated": [{"path", "what", "soname", "sha256", "ship": false}],
     "profile": {"path", "sha256", "form"} | null, "manifest"|"lock": {...}, "layout": 1}
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path

from ..download import download_many
from ..errors import ToolkitError, UnsafeArchive
from ..extract import extract
from ..fsutil import atomic_dir, atomic_write_json, locked, rmtree, sha256_file
from ..report import say
from . import layout, validate
from .components import is_windows, target_dir
from .identity import ComponentSet
from .lockfile import WheelRow, load_lock
from .redist import Artifact, resolve
from .ref import ToolkitRef
from .stub import SONAME, write_stub
from .wheels import fetch_wheel

LAYOUT_VERSION = 1


def key_inputs(cs: ComponentSet, bundles: Path) -> dict:
    """The toolkit task's action-key inputs: the component set with every resolved name,
    version, platform and sha256 (redist: from the manifest; wheels: the lock rows; host: a
    fingerprint of the files used)."""
    d: dict = {"set": cs.identity(), "layout": LAYOUT_VERSION}
    if cs.source == "redist":
        d["artifacts"] = [a.as_json() for a in resolve(cs, bundles)[2]]
    elif cs.source == "host":
        from .hostsrc import fingerprint

        d["host_files"] = fingerprint(cs)
    return d


def refuse_windows_wheels(cs: ComponentSet) -> None:
    """NVIDIA's Windows cublas wheel carries DLLs only (no ``cublas.lib``/``cublasLt.lib``), so
    a Windows target cannot link against a wheels toolkit: refuse it up front."""
    if cs.source == "wheels" and (is_windows(cs.target_platform) or is_windows(cs.host_platform)):
        raise ToolkitError(
            f"{cs.spec_file}: cuda.toolkit.source: 'wheels' cannot provide a toolkit for "
            f"{cs.target_platform}: NVIDIA's Windows cublas wheel has cublas64_*.dll/cublasLt64_*.dll but no "
            f"cublas.lib/cublasLt.lib import libraries, so nothing could link; use source = \"redist\"")


def _wheel_artifacts(cs: ComponentSet, bundles: Path) -> list[tuple[Artifact, WheelRow]]:
    lock_path = (bundles / cs.pins["lock"]).resolve()
    lock = load_lock(lock_path)
    out = []
    for role, plat, comps in (("host", cs.host_platform, cs.host), ("target", cs.target_platform, cs.target)):
        for c in comps:
            row = lock.row(c, plat)
            if row is None:
                raise ToolkitError(f"{lock_path}: no wheel for {c} on {plat}; rerun `bundlegraph lock-wheels`")
            out.append((Artifact(c, c, role, plat, row.version, row.requirement, row.sha256, row.size,
                                 row.filename, "wheels"), row))
    return out


def _wheel_root(stage: Path, filename: str) -> Path:
    roots = sorted(p for p in (stage / "nvidia").glob("cu*") if p.is_dir()) if (stage / "nvidia").is_dir() else []
    if len(roots) != 1:
        raise ToolkitError(f"wheel {filename}: expected one nvidia/cu<major>/ folder, found "
                           f"{[p.name for p in roots] or 'none'} (not an NVIDIA CUDA wheel layout)")
    return roots[0]


def install(cs: ComponentSet, ref: ToolkitRef, bundles: Path) -> Path:
    """Install (or reuse) the toolkit of ``cs`` at ``ref.prefix``; returns the receipt path.

    Raises :class:`ToolkitError` (unresolvable set, refused combination, validation failure),
    :class:`DownloadError`/:class:`HashMismatch` (fetch), :class:`UnsafeArchive` (extraction)."""
    if cs.source == "host":
        from .hostsrc import describe

        return describe(cs, ref)
    refuse_windows_wheels(cs)
    prefix: Path = ref.prefix
    stub_from = "generated stub" if cs.source == "wheels" else "cuda_cudart"
    with locked(prefix.parent / f".{prefix.name}.lock", what=f"toolkit {cs.name}"):
        receipt = prefix / ref.receipt.name
        if _reusable(receipt, cs) and not validate.problems(prefix, cs, driver_stub_from=stub_from):
            say(f"toolkit {cs.name}: already installed at {prefix}")
            return receipt
        t0 = time.monotonic()
        extra: dict = {}
        if cs.source == "redist":
            origin, mpath, arts = resolve(cs, bundles)
            extra["manifest"] = {"origin": origin, "sha256": sha256_file(mpath)}
            blobs = download_many([(a.url, a.sha256, a.size) for a in arts])
            pairs = list(zip(arts, blobs, strict=True))
        else:
            lock_path = (bundles / cs.pins["lock"]).resolve()
            extra["lock"] = {"path": cs.pins["lock"], "sha256": sha256_file(lock_path)}
            pairs = [(a, fetch_wheel(row)) for a, row in _wheel_artifacts(cs, bundles)]
        fetched = time.monotonic() - t0
        if prefix.exists():
            rmtree(prefix)  # a stale or changed entry: rebuilt whole
        with atomic_dir(prefix) as tmp:
            _assemble(cs, tmp, pairs, extra, stub_from)
        say(f"toolkit {cs.name}: installed {len(pairs)} components at {prefix} "
              f"(fetch {fetched:.1f}s, total {time.monotonic() - t0:.1f}s)")
        return receipt


def _reusable(receipt: Path, cs: ComponentSet) -> bool:
    try:
        data = json.loads(receipt.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return data.get("set_digest") == cs.digest and data.get("layout") == LAYOUT_VERSION


def _assemble(cs: ComponentSet, tmp: Path, pairs: list, extra: dict, stub_from: str) -> None:
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
                raise UnsafeArchive(f"{art.filename} ({art.component} for {art.platform}, {art.url}): "
                                    f"refused, nothing installed: {e}") from None
            root = _wheel_root(stage, art.filename) if art.source == "wheels" else stage
            layout.place(root, tmp, component=art.component, role=art.role, platform=art.platform, owners=owners)
        comps.append({**{k: v for k, v in art.as_json().items() if k not in ("url", "key")},
                      "origin": art.url, "manifest_key": art.key})
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
                generated.append({"path": stub.relative_to(tmp).as_posix(), "what": "link-only driver stub",
                                  "soname": SONAME, "sha256": sha256_file(stub), "ship": False})
    atomic_write_json(tmp / "version.json", _version_json(cs, comps))
    validate.check(tmp, cs, what=cs.name, driver_stub_from=stub_from)
    os.chmod(tmp, 0o755)  # mkdtemp made it private; the toolkit is shared by runs and users
    os.chmod(tmp / "version.json", 0o644)
    _write_receipt(tmp / "bundlegraph-toolkit.json", {
        "name": cs.name, "set_digest": cs.digest, "layout": LAYOUT_VERSION, "source": cs.source,
        "cuda": cs.cuda_version, "host_platform": cs.host_platform, "target_platform": cs.target_platform,
        "target_dir": target_dir(cs.target_platform), "components": comps, "generated": generated,
        "profile": profile, **extra})


def _write_receipt(path: Path, data: dict) -> None:
    atomic_write_json(path, data)
    os.chmod(path, 0o644)


def _version_json(cs: ComponentSet, comps: list[dict]) -> dict:
    """NVIDIA's ``version.json`` form: ``{"cuda": {"name", "version"}, "<component>": {...}}``."""
    nvcc = next((c["version"] for c in comps if c["component"] == "cuda_nvcc"), cs.cuda_version)
    out = {"cuda": {"name": "CUDA SDK", "version": nvcc}}
    for c in comps:
        out[c["component"]] = {"name": c["component"], "version": c["version"], "platform": c["platform"]}
    return out

