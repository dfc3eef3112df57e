"""Resolve a component set against NVIDIA's redist manifest into archives to fetch.

The manifest is ``<pool>/redistrib_<label>.json`` (pool: ``$BUNDLEGRAPH_REDIST_URL``, default
NVIDIA's redist URL), pinned by sha256 in ``bundles/locks/cuda-redist-manifests.toml``
(:mod:`.redistlock`), fetched once and cached under ``<cache>/manifests/`` (both checked against
the pin), or a local ``.json`` file when the spec's ``manifest`` ends in ``.json`` (relative to
``bundles/``). Versions come from the manifest per component, never from the
release number. Each host component resolves on the host platform, each target component on
the target platform.
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict
from pathlib import Path
from typing import Any

from ..core import paths
from ..core.download import fetch_small
from ..core.errors import ToolkitError
from ..core.fsutil import atomic_write_bytes
from ..core.lightclass import frozen
from ..schemas.redist import RedistManifest, load_manifest
from .identity import ComponentSet


@frozen
class Artifact:
    """One archive to install: ``component`` (as the spec names it), ``key`` (as the manifest
    names it), ``role``, ``platform``, ``version``, ``url``, ``sha256``, ``size`` (bytes),
    ``filename``, ``source`` (``redist``/``wheels``)."""

    component: str
    key: str
    role: str
    platform: str
    version: str
    url: str
    sha256: str
    size: int | None
    filename: str
    source: str

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


def manifest_location(cs: ComponentSet, bundles: Path) -> tuple[str, Path]:
    """``(origin, local path)`` of the set's manifest (the path may not exist yet)."""
    label = cs.pins["manifest"]
    if label.endswith(".json"):
        p = (bundles / label).resolve()
        return str(p), p
    url = f"{cs.pins['pool']}redistrib_{label}.json"
    d = paths.cache_root() / "manifests" / hashlib.sha256(url.encode()).hexdigest()[:16]
    return url, d / f"redistrib_{label}.json"


def get_manifest(cs: ComponentSet, bundles: Path) -> tuple[str, Path, RedistManifest]:
    """Fetch (or reuse) and parse the manifest. NVIDIA's manifest must be pinned
    (``cs.pins["manifest_sha256"]``, from :mod:`.redistlock`): without a pin it refuses before
    downloading, and bytes that are not the pinned ones (fetched or cached) are refused in one line
    naming the manifest and both digests. Raises :class:`~.redistlock.ManifestNotPinned`,
    :class:`HashMismatch`, :class:`ToolkitError`, :class:`DownloadError`."""
    from . import redistlock

    origin, path = manifest_location(cs, bundles)
    if origin == str(path):  # a local file of the bundles directory, under version control like the lock
        if not path.is_file():
            raise ToolkitError(f"{cs.spec_file}: cuda.toolkit.manifest: {path} does not exist")
        return origin, path, load_manifest(path)
    label, want = cs.pins["manifest"], cs.pins.get("manifest_sha256")
    if not want:
        raise redistlock.unpinned(label, cs.spec_file, bundles)
    if path.is_file() and hashlib.sha256(path.read_bytes()).hexdigest() == want:
        return origin, path, load_manifest(path)
    data = fetch_small(origin)  # not cached, or cached with other bytes: what the pool serves now
    got = hashlib.sha256(data).hexdigest()
    if got != want:
        raise redistlock.moved(origin, got, want, redistlock.lock_path(bundles), label)
    import json

    from ..schemas.redist import parse_manifest

    try:
        m = parse_manifest(json.loads(data), origin)
    except ValueError as e:
        raise ToolkitError(f"{origin}: not a redist manifest (not JSON: {e}); first bytes: {data[:60]!r}") from None
    atomic_write_bytes(path, data)
    return origin, path, m


def resolve(cs: ComponentSet, bundles: Path) -> tuple[str, Path, list[Artifact]]:
    """The archives of ``cs``: ``(manifest origin, manifest path, artifacts)``. A component the
    manifest lacks, or lacks for the platform, raises :class:`ToolkitError` naming component,
    platform and manifest."""
    origin, path, m = get_manifest(cs, bundles)
    pool = origin.rsplit("/", 1)[0] + "/" if "://" in origin else cs.pins.get("pool", "")
    out, problems = [], []
    for role, plat, comps in (("host", cs.host_platform, cs.host), ("target", cs.target_platform, cs.target)):
        for c in comps:
            comp = m.component(c)
            if comp is None:
                problems.append(f"component {c} ({role}) is not in manifest {origin}")
                continue
            art = comp.artifact(plat)
            if art is None:
                have = sorted(set(comp.platforms) | set(comp.variants))
                problems.append(
                    f"component {c} ({role}) has no archive for platform {plat} in manifest "
                    f"{origin} (it has: {', '.join(have) or 'none'})"
                )
                continue
            url, name = pool + art.relative_path, art.relative_path.rsplit("/", 1)[-1]
            out.append(
                Artifact(c, comp.key, role, plat, comp.version, url, art.sha256.lower(), art.size, name, "redist")
            )
    if problems:
        raise ToolkitError(f"{cs.spec_file}: cuda.toolkit cannot be resolved:\n  " + "\n  ".join(problems))
    return origin, path, out
