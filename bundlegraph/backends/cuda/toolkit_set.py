"""The component set a CUDA leg asks for, read from its ``[cuda]`` table at graph load time
without any network access (:class:`~bundlegraph.toolkit.identity.ComponentSet`: its source, its
host and target components and platforms, and the source's pins)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from ...core.errors import ToolkitError
from ...schemas.records import BundleSpec
from ...toolchains.registry import TOOLCHAINS
from ...toolkit.identity import ComponentSet, host_toolkit_path, redist_pool_url
from ...toolkit.lockfile import load_lock
from .spec import CUDA


def component_set(spec: BundleSpec, bundles_dir: Path, spec_file: str = "") -> ComponentSet:
    """The :class:`ComponentSet` of a CUDA leg. Reads the wheels lock or the host toolkit's
    ``version.json`` (local files only). Raises :class:`ToolkitError` naming the spec file and
    key when the leg has no CUDA table, the lock lacks a row, or the host platform is unknown."""
    where = spec_file or f"bundles/{spec.id}.toml"
    cuda = CUDA.get(spec)
    if cuda is None:
        raise ToolkitError(f"{where}: cuda: leg {spec.id} has no [cuda] table, so no toolkit")
    tk = cuda.toolkit
    tc = TOOLCHAINS.get(spec.toolchain)
    host_platform = tk.host_platform or (tc.redist_host if tc else None)
    if host_platform is None:
        raise ToolkitError(
            f"{where}: cuda.toolkit.host_platform: not given and toolchain {spec.toolchain!r} is unknown"
        )
    host = tuple(sorted(tk.host))
    target = tuple(sorted(tk.target))
    pins: dict[str, Any]
    if tk.source == "wheels":
        assert tk.lock is not None
        lock_path = (bundles_dir / tk.lock).resolve()
        lock = load_lock(lock_path)
        rows = []
        for role, plat, comps in (("host", host_platform, host), ("target", tk.target_platform, target)):
            for c in comps:
                r = lock.row(c, plat)
                if r is None:
                    raise ToolkitError(
                        f"{where}: cuda.toolkit.{role}: component {c} on {plat} has no row in {lock_path}; "
                        f"rerun `bundlegraph lock-wheels`"
                    )
                rows.append(
                    {
                        "component": c,
                        "platform": plat,
                        "filename": r.filename,
                        "sha256": r.sha256,
                        "size": r.size,
                        "version": r.version,
                    }
                )
        pins = {"lock": tk.lock, "wheels": rows}
    elif tk.source == "debs":
        assert tk.lock is not None
        from ...toolkit import debs

        pins = debs.lock_pins(debs.load_lock((bundles_dir / tk.lock).resolve()), tk.lock)
    elif tk.source == "redist":
        pins = {"manifest": tk.manifest, "pool": redist_pool_url()}
        if tk.manifest and not tk.manifest.endswith(".json"):  # NVIDIA's manifest, pinned by sha256
            from ...toolkit import redistlock

            pin = redistlock.load_pins(redistlock.lock_path(bundles_dir)).get(tk.manifest)
            pins["manifest_sha256"] = pin.sha256 if pin else None
    else:
        root = host_toolkit_path(tk.path)
        vj = root / "version.json"
        try:
            vdigest = hashlib.sha256(vj.read_bytes()).hexdigest()
        except OSError:
            vdigest = "missing"
        pins = {"path": root.as_posix(), "version_json": vdigest}
        if vdigest == "missing":  # no version.json: the version comes from include/cuda.h (hostsrc.read_version)
            try:
                pins["cuda_h"] = hashlib.sha256((root / "include" / "cuda.h").read_bytes()).hexdigest()
            except OSError:
                pins["cuda_h"] = "missing"
    return ComponentSet(tk.source, cuda.version, host_platform, tk.target_platform, host, target, pins, where)


__all__ = ["component_set"]
