"""``Release``: ``bundles/release.toml`` — the tag, the llama.cpp source pin and the main job.

Source pin kinds (``[source] kind = ...``):

- ``tarball``: ``url`` + ``sha256`` of the archive (``subdirectory`` optional);
- ``git``: ``url`` + full 40-hex ``commit``;
- ``path``: a local directory (``path``, relative to the release file), used as is;
- ``pip-sdist``: ``requirement`` (``name==version``) + ``sha256`` of the sdist, fetched with
  ``pip download --no-deps --no-binary <name>``; ``subdirectory`` selects the tree inside it
  (``vendor/llama.cpp`` for ``llama-cpp-python``).

The source's commit and commit date come from git metadata the source carries (the
0.3.36 sdist carries a gitdir for ``vendor/llama.cpp``), else from ``commit`` /
``commit_date`` here. They become ``LLAMA_BUILD_COMMIT`` and the archives' timestamp;
``LLAMA_BUILD_NUMBER`` is ``upstream_tag``'s number.

These pydantic models validate the file; the graph uses their records
(:mod:`bundlegraph.schemas.plain`: ``Release.build_number``, the pins' ``name``/``version``).
"""

from __future__ import annotations

import datetime as _dt
from typing import Annotated, Literal

from pydantic import Field, field_validator

from .base import Strict

_SHA256 = r"^[0-9a-f]{64}$"


class _PinBase(Strict):
    subdirectory: str | None = None
    commit: Annotated[str | None, Field(pattern=r"^[0-9a-f]{40}$")] = None
    commit_date: _dt.datetime | None = None


class TarballPin(_PinBase):
    kind: Literal["tarball"]
    url: str
    sha256: Annotated[str, Field(pattern=_SHA256)]


class GitPin(_PinBase):
    kind: Literal["git"]
    url: str
    commit: Annotated[str, Field(pattern=r"^[0-9a-f]{40}$")]


class PathPin(_PinBase):
    kind: Literal["path"]
    path: str


class PipSdistPin(_PinBase):
    kind: Literal["pip-sdist"]
    requirement: Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*==[A-Za-z0-9.+!-]+$")]
    sha256: Annotated[str, Field(pattern=_SHA256)]


SourcePin = Annotated[TarballPin | GitPin | PathPin | PipSdistPin, Field(discriminator="kind")]


class Release(Strict):
    """The release (``bundles/release.toml``).

    - ``tag``: the GitHub release tag (``b<digits>`` or ``b<digits>-mix-<7 hex>``); its number
      must equal ``upstream_tag``'s (installers read the impl-split gate from either).
    - ``upstream_tag``: the upstream llama.cpp build (``b<digits>``) of the pinned commit. It
      cannot be derived offline from a shallow source; the release states it. It becomes
      ``LLAMA_BUILD_NUMBER``, the SHA index's and manifest's ``upstream_tag``, and gates the
      ``*-impl`` libraries (:data:`~bundlegraph.schemas.plain.IMPL_SPLIT_BUILD`; the source stage refuses a value below it
      for a tree that builds ``llama-server-impl``).
    - ``paired_runtime_tag``: the upstream release whose ``cudart-llama-bin-*`` runtime assets
      are paired with the Windows CUDA bundles (hashed into the SHA index).
    - ``source_repo`` (``owner/name``), the source pin, ``default_legs`` (what a bare ``doit``
      builds), ``bundle_prefix`` (``app``) and ``info_file`` (each bundle's info JSON)."""

    tag: Annotated[str, Field(pattern=r"^b\d+(-mix-[0-9a-f]{7})?$")]
    upstream_tag: Annotated[str, Field(pattern=r"^b\d+$")]
    paired_runtime_tag: Annotated[str, Field(pattern=r"^b\d+$")]
    source_repo: Annotated[str, Field(pattern=r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")]
    bundle_prefix: Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9-]*$")] = "app"
    info_file: Annotated[str, Field(pattern=r"^[A-Za-z0-9_.-]+\.json$")] = "BUNDLE_INFO.json"
    default_legs: Annotated[list[str], Field(min_length=1)]
    source: SourcePin

    @field_validator("default_legs")
    @classmethod
    def _unique(cls, v: list[str]) -> list[str]:
        if len(set(v)) != len(v):
            raise ValueError("default_legs holds duplicates")
        return v
