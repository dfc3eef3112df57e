"""NVIDIA's redist manifest ``redistrib_<label>.json`` (NVIDIA's format, not ours).

Source of the format: the manifests NVIDIA publishes beside the component archives in its
redist pool (``<pool>/redistrib_<label>.json``; copies in ``tests/data/redist/``). Shape::

    {"release_date": "2026-09-16", "release_label": "13.4.2", "release_product": "cuda",
     "<component>": {                        # e.g. cuda_nvcc, libcublas, cuda_cccl or cccl
        "name": "...", "license": "...", "license_path": "...", "version": "13.4.92",
        "<platform>": {                      # linux-x86_64, linux-sbsa, linux-aarch64,
            "relative_path": "cuda_nvcc/linux-sbsa/cuda_nvcc-linux-sbsa-13.4.92-archive.tar.xz",
            "sha256": "<64 hex>", "md5": "<32 hex>", "size": "1694356"},   # size: a string
        "<platform>": {"<variant>": {...artifact...}},  # variant-nested (e.g. "cuda13.3")
        "cuda_variant": ["13.3"], ...}}

Unknown keys are accepted and kept (``model_extra``); only what we cannot use is rejected: an
artifact without a 64-hex ``sha256``, a ``relative_path`` that is absolute or climbs out
(``..``), a ``size`` that is not a decimal string. ``cuda_cccl`` (older releases) and ``cccl``
(13.4+) name the same component: :meth:`RedistManifest.component` accepts either.
"""

from __future__ import annotations

import json
from pathlib import Path, PurePosixPath
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ..core.errors import ToolkitError

_ALIASES = {"cuda_cccl": ("cuda_cccl", "cccl"), "cccl": ("cccl", "cuda_cccl")}


class RedistArtifact(BaseModel):
    """One archive: ``relative_path`` (to the pool URL), ``sha256`` (hex), ``md5``, ``size``
    (bytes; NVIDIA writes a string, parsed to int here)."""

    model_config = ConfigDict(extra="allow", frozen=True)

    relative_path: str
    sha256: Annotated[str, Field(pattern=r"^[0-9a-fA-F]{64}$")]
    md5: str | None = None
    size: int | None = None

    @field_validator("size", mode="before")
    @classmethod
    def _size(cls, v: Any) -> Any:
        if isinstance(v, str):
            if not v.strip().isdigit():
                raise ValueError(f"size {v!r} is not a decimal byte count")
            return int(v)
        return v

    @field_validator("relative_path")
    @classmethod
    def _path(cls, v: str) -> str:
        p = PurePosixPath(v)
        if p.is_absolute() or ".." in p.parts or "\\" in v or "://" in v:
            raise ValueError(f"relative_path {v!r} must be a plain relative path")
        return v


class RedistComponent(BaseModel):
    """One component: ``name`` (display name), ``license``, ``license_path``, ``version`` and
    per-platform artifacts (``platforms``), some nested under variants (``variants``)."""

    model_config = ConfigDict(extra="allow", frozen=True)

    key: str
    name: str | None = None
    license: str | None = None
    license_path: str | None = None
    version: str
    platforms: dict[str, RedistArtifact] = {}
    variants: dict[str, dict[str, RedistArtifact]] = {}

    def artifact(self, platform: str, variant: str | None = None) -> RedistArtifact | None:
        """The artifact for ``platform`` (and ``variant`` for variant-nested entries). With no
        variant given and exactly one variant present, that one is returned."""
        if platform in self.platforms and variant is None:
            return self.platforms[platform]
        nested = self.variants.get(platform, {})
        if variant is not None:
            return nested.get(variant)
        return next(iter(nested.values())) if len(nested) == 1 else None


class RedistManifest(BaseModel):
    """A whole manifest; ``components`` by manifest key; unknown top-level scalars kept."""

    model_config = ConfigDict(extra="allow", frozen=True)

    release_label: str
    release_date: str | None = None
    release_product: str | None = None
    components: dict[str, RedistComponent] = {}

    def component(self, key: str) -> RedistComponent | None:
        """``key`` or its other spelling (``cuda_cccl`` <-> ``cccl``), or None."""
        return next((self.components[k] for k in _ALIASES.get(key, (key,)) if k in self.components), None)


def _split_component(key: str, raw: dict[str, Any]) -> dict[str, Any]:
    comp: dict[str, Any] = {"key": key}
    platforms: dict[str, Any] = {}
    variants: dict[str, dict[str, Any]] = {}
    for k, v in raw.items():
        if isinstance(v, dict) and "relative_path" in v:
            platforms[k] = v
        elif isinstance(v, dict) and v and all(isinstance(x, dict) for x in v.values()):
            variants[k] = v
        else:
            comp[k] = v
    return {**comp, "platforms": platforms, "variants": variants}


def parse_manifest(data: dict[str, Any], source: str = "<manifest>") -> RedistManifest:
    """Validate a decoded manifest. Raises :class:`ToolkitError` listing every problem as
    ``<source>: <component>.<platform>.<field>: <message>``."""
    if not isinstance(data, dict):
        raise ToolkitError(f"{source}: a redist manifest is a JSON object, got {type(data).__name__}")
    comps = {k: _split_component(k, v) for k, v in data.items() if isinstance(v, dict) and "version" in v}
    top = {k: v for k, v in data.items() if k not in comps}
    try:
        return RedistManifest.model_validate({**top, "components": comps})
    except ValidationError as e:
        skip = ("components", "platforms", "variants")
        lines = [f"{source}: {'.'.join(str(p) for p in x['loc'] if p not in skip)}: {x['msg']}" for x in e.errors()]
        raise ToolkitError("redist manifest refused:\n  " + "\n  ".join(lines)) from None


def load_manifest(path: str | Path) -> RedistManifest:
    """Read and validate ``redistrib_<label>.json``; raises :class:`ToolkitError` naming the file."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise ToolkitError(f"{path}: cannot read the redist manifest: {e}") from None
    except ValueError as e:
        raise ToolkitError(f"{path}: not valid JSON (is it an HTML error page?): {e}") from None
    return parse_manifest(data, str(path))
