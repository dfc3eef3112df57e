"""The records the configure and build stages leave in ``build/<leg>/`` for later stages, each
with one type and one reader (``source.json`` and ``merge.json`` have theirs beside their stage:
:class:`~.source.SourceRecord`, :class:`~.merge.MergeRecord`).

- ``configure.json`` (:class:`ConfigureRecord`, :func:`read_configure`): the configure command,
  toolchain, cache entries, the compiler launcher chosen, the post-configure checks;
- ``build.json`` (:class:`BuildRecord`, :func:`read_build`): what was built (``targets``,
  ``filtered`` by ``build_targets=``), where, the outputs' sha256 and, for a build made on another
  runner, where it was imported from.

A record is written with :meth:`BuildRecord.to_json` (key order kept: the stamp fingerprints
the file's bytes) and read back into its type; an unreadable file is an error naming it.
"""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path
from typing import Any

from ..core import paths
from ..core.errors import BundleGraphError
from ..core.lightclass import frozen


def _read(cls: type, f: Path, leg: str, stage: str) -> Any:
    try:
        data = json.loads(f.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as e:
        raise BundleGraphError(f"{f}: unreadable ({e}); run {stage}:{leg} again") from None
    if not isinstance(data, dict):
        raise BundleGraphError(f"{f}: not a {stage} record (a JSON object); run {stage}:{leg} again")
    names = {x.name for x in fields(cls)}
    try:
        return cls(**{k: v for k, v in data.items() if k in names})
    except TypeError as e:
        raise BundleGraphError(f"{f}: not a {stage} record ({e}); run {stage}:{leg} again") from None


@frozen
class BuildRecord:
    """``build/<leg>/build.json``: ``targets`` built (empty: all), ``filtered`` (only some, by
    ``build_targets=``: no bundle is made from it), ``artifacts_dir``, ``outputs`` (path
    relative to the work directory -> sha256); ``cmake_dir`` of a native build, ``imported``
    (``{"from", "files": {name: sha256}}``) of one made on another runner."""

    leg: str
    targets: list[str]
    filtered: bool
    artifacts_dir: str
    outputs: dict[str, str]
    cmake_dir: str | None = None
    imported: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        """The file's JSON (fields left out while None; ``outputs`` last)."""
        out: dict[str, Any] = {"leg": self.leg, "targets": self.targets, "filtered": self.filtered}
        out["artifacts_dir"] = self.artifacts_dir
        if self.cmake_dir is not None:
            out["cmake_dir"] = self.cmake_dir
        if self.imported is not None:
            out["imported"] = self.imported
        out["outputs"] = self.outputs
        return out


def read_build(leg: str) -> BuildRecord | None:
    """``build/<leg>/build.json``, None when the leg was never built. Raises
    :class:`BundleGraphError` naming the file when it is unreadable."""
    rec: BuildRecord | None = _read(BuildRecord, paths.build_dir(leg) / "build.json", leg, "build")
    return rec


@frozen
class ConfigureRecord:
    """``build/<leg>/configure.json``: the configure ``argv`` (and as one ``command``), the
    ``toolchain`` and its file, ``cmake_dir``, ``source_tree``, the ``cache`` entries, the
    compiler ``launcher`` chosen (``{"name", ...}``; name empty for none), the action-key
    ``inputs``, the post-configure ``checks`` and the CUDA layout of a CUDA leg."""

    leg: str
    argv: list[str]
    command: str
    toolchain: str
    toolchain_file: str
    toolchain_sha: str
    cmake_dir: str
    source_tree: str
    cache: dict[str, Any]
    launcher: dict[str, Any] | None = None
    inputs: dict[str, Any] | None = None
    checks: dict[str, Any] | None = None
    cuda: dict[str, Any] | None = None
    prefix_maps: dict[str, str] | None = None
    """Each stable name and the build-host root it replaced in every compile (absent before issue 32)."""
    compile_flags: dict[str, str] | None = None
    """``CMAKE_<LANG>_FLAGS`` and ``CMAKE_<LANG>_FLAGS_RELEASE`` as configured."""
    vulkan: dict[str, Any] | None = None
    """A Vulkan leg's SDK and shader set (:func:`bundlegraph.backends.vulkan.sdk_ref.VulkanSdk.configure_record`); absent elsewhere."""


def read_configure(leg: str, build_dir: Path | None = None) -> ConfigureRecord | None:
    """``<build_dir or build/<leg>>/configure.json``, None when the leg was never configured.
    Raises :class:`BundleGraphError` naming the file when it is unreadable."""
    f = (build_dir or paths.build_dir(leg)) / "configure.json"
    rec: ConfigureRecord | None = _read(ConfigureRecord, f, leg, "configure")
    return rec


__all__ = ["BuildRecord", "ConfigureRecord", "read_build", "read_configure"]
