"""A toolkit's identity: the component set a leg asks for (computed from its ``[cuda]`` table at
graph load time without any network access by :func:`bundlegraph.backends.cuda.toolkit_set.component_set`),
and the content-derived name legs share.

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

from ..core.lightclass import frozen
from ..schemas.archs import CudaVersion

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
