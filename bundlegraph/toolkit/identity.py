"""A toolkit's identity: the component set a leg asks for, computed from its spec at graph
load time without any network access, and the content-derived name legs share.

Two legs with equal :class:`ComponentSet` share one toolkit task and one prefix. The name is
``cuda<ver>-<host platform>+<target platform>-<6 hex>`` where the hex is a digest of the set
(source, components per role, platforms, and the source's pins: the lock rows for wheels, the
manifest label, pool URL and the manifest's pinned sha256 for redist (:mod:`.redistlock`), the lock's path, digest and packages for debs, the path and ``version.json`` digest for host —
plus ``include/cuda.h``'s digest when the host toolkit has no ``version.json``).
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import field
from pathlib import Path
from typing import Any

from ..core.errors import ToolkitError
from ..core.lightclass import frozen
from ..schemas.archs import CudaVersion
from ..schemas.records import BundleSpec
from ..toolchains.registry import TOOLCHAINS
from .lockfile import load_lock

DEFAULT_REDIST_URL = "https://developer.download.nvidia.com/compute/cuda/redist/"


def redist_pool_url() -> str:
    """The redist pool (``$BUNDLEGRAPH_REDIST_URL``, default NVIDIA's redist URL), ending in ``/``."""
    from ..core import settings

    u = settings.get("REDIST_URL") or DEFAULT_REDIST_URL
    return u if u.endswith("/") else u + "/"


def host_toolkit_path(declared: str | None) -> Path:
    """The host toolkit: the spec's ``path``, else ``$CUDA_PATH``, else ``/usr/local/cuda``."""
    p = declared or os.environ.get("CUDA_PATH") or "/usr/local/cuda"
    return Path(p).expanduser()


@frozen
class ComponentSet:
    """What a toolkit holds. ``pins`` is source-specific JSON-able data (see module doc);
    ``spec_file`` names where the set came from (for error messages)."""

    source: str
    cuda_version: CudaVersion
    host_platform: str
    target_platform: str
    host: tuple[str, ...]
    target: tuple[str, ...]
    pins: dict[str, Any] = field(hash=False, compare=True)
    spec_file: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "cuda_version", CudaVersion(self.cuda_version))

    def identity(self) -> dict[str, Any]:
        """The JSON document the name's digest is taken over (also the task's action key)."""
        return {
            "source": self.source,
            "cuda": str(self.cuda_version),
            "host_platform": self.host_platform,
            "target_platform": self.target_platform,
            "host": list(self.host),
            "target": list(self.target),
            "pins": self.pins,
        }

    @property
    def digest(self) -> str:
        doc = json.dumps(self.identity(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(doc.encode()).hexdigest()

    @property
    def name(self) -> str:
        """``cuda13.5-linux-x86_64+linux-sbsa-3f9a1c``."""
        return f"cuda{self.cuda_version}-{self.host_platform}+{self.target_platform}-{self.digest[:6]}"


def component_set(spec: BundleSpec, bundles_dir: Path, spec_file: str = "") -> ComponentSet:
    """The :class:`ComponentSet` of a CUDA leg. Reads the wheels lock or the host toolkit's
    ``version.json`` (local files only). Raises :class:`ToolkitError` naming the spec file and
    key when the leg has no CUDA table, the lock lacks a row, or the host platform is unknown."""
    where = spec_file or f"bundles/{spec.id}.toml"
    if spec.cuda is None:
        raise ToolkitError(f"{where}: cuda: leg {spec.id} has no [cuda] table, so no toolkit")
    tk = spec.cuda.toolkit
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
        from . import debs

        pins = debs.lock_pins(debs.load_lock((bundles_dir / tk.lock).resolve()), tk.lock)
    elif tk.source == "redist":
        pins = {"manifest": tk.manifest, "pool": redist_pool_url()}
        if tk.manifest and not tk.manifest.endswith(".json"):  # NVIDIA's manifest, pinned by sha256
            from . import redistlock

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
    return ComponentSet(tk.source, spec.cuda.version, host_platform, tk.target_platform, host, target, pins, where)
