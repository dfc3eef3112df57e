"""The CUDA legs' local-build overrides, read when the graph loads (like the leg filters): build a CUDA leg
for chosen GPU architectures and/or with the toolkit already installed on this host.

- ``archs``: ``doit archs=90`` / ``BUNDLEGRAPH_ARCHS=90`` (comma- or semicolon-separated CMake
  arch forms, ``90,120``), or ``native`` = the compute capabilities of the GPUs present
  (``nvidia-smi``, :mod:`bundlegraph.core.gpus`). Each arch is checked against the leg's CUDA version
  (:func:`bundlegraph.schemas.archs.arch_supported`).
- ``toolkit_source``: ``doit toolkit_source=host`` / ``BUNDLEGRAPH_TOOLKIT_SOURCE=host[:PATH]``:
  the leg's toolkit becomes the ``host`` source (``PATH``, else ``$CUDA_PATH``, else
  ``/usr/local/cuda``), for hosts with no package registry. The leg's ``cuda.version`` becomes
  the host toolkit's (read by :func:`bundlegraph.toolkit.hostsrc.read_version`); its major
  must match the leg's ``profile.line``. ``GGML_CUDA_NCCL`` becomes OFF unless the spec sets it
  (a host toolkit may carry NCCL, which the release's toolkit does not, and ggml-cuda would link it).

An overridden leg is **not the release's**: its profile name gets a local suffix
(``cuda13-portable+sm90-local``, ``+host13.0-local``, ``+sm90-host13.0-local``), so its bundle is
``app-<tag>-linux-x64-cuda13-portable+sm90-local.tar.gz``, its info JSON says so
(``bundle_profile``), every action key that holds the spec differs from the release build's,
and the publish gate refuses it (:func:`is_local`). The overrides apply to the selected CUDA
legs only; CPU legs (merge bases) are untouched.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from ...core.errors import BundleGraphError
from ...core.lightclass import frozen
from ...schemas.archs import CudaVersion, arch_supported, parse_arch
from ...schemas.records import BundleSpec, Matrix
from .spec import CUDA

if TYPE_CHECKING:
    from ...pipeline.base import Filters

LOCAL_MARK = "-local"
T = TypeVar("T")


@frozen
class LocalOverrides:
    """Parsed overrides: ``archs`` (CMake forms, or None) and ``host_toolkit`` (the toolkit
    root for the ``host`` source, or None); ``toolkit_version`` is that toolkit's version;
    ``origin`` says where each value came from (for messages and the tag)."""

    archs: tuple[str, ...] | None = None
    host_toolkit: Path | None = None
    toolkit_version: str | None = None
    origin: str = ""

    @property
    def active(self) -> bool:
        return self.archs is not None or self.host_toolkit is not None

    def tag(self) -> str:
        """The local suffix (without ``+``): ``sm90-local``, ``host13.0-local``, ``sm90_120-host13.0-local``."""
        parts = []
        if self.archs is not None:
            parts.append("sm" + "_".join(re.sub(r"[^0-9a-z]", "", a) for a in self.archs))
        if self.host_toolkit is not None:
            parts.append(f"host{self.toolkit_version}")
        return "-".join(parts) + LOCAL_MARK


def parse_archs(raw: str) -> tuple[str, ...]:
    """``"90"``, ``"90,120"``, ``"90;120a"`` -> CMake forms (validated); ``native`` -> the GPUs
    present. Raises :class:`BundleGraphError` naming the variable and the bad value."""
    raw = raw.strip()
    if raw == "native":
        from ...core.gpus import probe

        p = probe()
        if not p.gpus:
            raise BundleGraphError(f"archs=native: no GPU to build for ({p.problem}); name the archs, e.g. archs=90")
        return tuple(str(sm) for sm in sorted({g.sm for g in p.gpus}))
    items = [a.strip() for a in re.split(r"[,;]", raw) if a.strip()]
    if not items:
        raise BundleGraphError(f"archs={raw!r}: empty; give CMake arch forms (90, 90,120, 86-real) or 'native'")
    for a in items:
        try:
            parse_arch(a)
        except ValueError as e:
            raise BundleGraphError(f"archs={raw}: {e}") from None
    if len(set(items)) != len(items):
        raise BundleGraphError(f"archs={raw}: holds duplicates")
    return tuple(items)


def parse_toolkit_source(raw: str) -> Path:
    """``host`` or ``host:PATH`` -> the host toolkit root. Raises naming the accepted forms."""
    from ...toolkit.identity import host_toolkit_path

    kind, _, path = raw.strip().partition(":")
    if kind != "host":
        raise BundleGraphError(
            f"toolkit_source={raw!r}: only 'host' or 'host:PATH' can be chosen at load time "
            f"(the wheels and redist sources need pins from the spec)"
        )
    return host_toolkit_path(path or None).resolve()


def parse(archs: str | None, toolkit_source: str | None) -> LocalOverrides:
    """Both overrides from their raw strings (None/empty = not given)."""
    from ...toolkit.hostsrc import read_version

    a = parse_archs(archs) if archs else None
    root = parse_toolkit_source(toolkit_source) if toolkit_source else None
    version = read_version(root) if root is not None else None
    origin = ", ".join(
        x for x in (f"archs={','.join(a)}" if a else "", f"toolkit_source=host:{root.as_posix()}" if root else "") if x
    )
    return LocalOverrides(a, root, version, origin)


def apply(matrix: Matrix, legs: list[str], ov: LocalOverrides) -> Matrix:
    """A copy of ``matrix`` whose selected CUDA legs carry the overrides (see module docstring).
    Raises :class:`BundleGraphError` naming the leg, spec file and override when an arch is not
    buildable with the leg's (possibly overridden) CUDA version."""
    if not ov.active:
        return matrix
    from ...specs.validation import validate_leg, validate_table  # (pydantic: only with overrides)

    new = dict(matrix.legs)
    problems = []
    for leg in legs:
        spec = matrix.legs[leg]
        if CUDA.get(spec) is None:
            continue
        where = matrix.files.get(leg, f"{leg}.toml")
        shards = spec.build.shards  # not in the dump (no key holds it): carried over by hand
        cuda = CUDA.of(spec)
        if ov.host_toolkit is not None:
            assert ov.toolkit_version is not None  # read from the host toolkit with its path
            major = CudaVersion(ov.toolkit_version).major
            if spec.profile.line and spec.profile.line != f"cuda{major}":
                problems.append(
                    f"{where}: profile.line: {spec.profile.line}, but toolkit_source=host is CUDA "
                    f"{ov.toolkit_version} ({ov.host_toolkit})"
                )
                continue
            tk = {
                **cuda.toolkit.dump(),
                "source": "host",
                "path": ov.host_toolkit.as_posix(),
                "lock": None,
                "manifest": None,
            }
            mm = "{}.{}".format(*CudaVersion(ov.toolkit_version).parts)
            cuda = _validated(partial(validate_table, type(cuda)), {**cuda.dump(), "toolkit": tk, "version": mm}, where)
            # a host toolkit may hold libraries the release's toolkit lacks: ggml-cuda links NCCL
            # whenever find_package(NCCL) succeeds (GGML_CUDA_NCCL defaults ON), and verify then
            # refuses libnccl.so.2 (not shipped, not external). Keep the release's link set.
            spec = _validated(validate_leg, {**spec.dump(), "cmake": {"GGML_CUDA_NCCL": False, **spec.cmake}}, where)
        if ov.archs is not None:
            # re-validated like a spec (typed archs, duplicates), not copied unchecked; the SMs a
            # PTX-only leg states belong to its own archs, so other archs drop them (a local
            # build's bundle states the SMs of the SASS it holds, never published)
            data = {**cuda.dump(), "archs": list(ov.archs)}
            data.pop("supported_sms", None)
            cuda = _validated(partial(validate_table, type(cuda)), data, where)
        for a in cuda.archs:
            why = arch_supported(a, cuda.version.parts)
            if why:
                problems.append(f"{where}: cuda.archs: {why} ({ov.origin})")
        # re-validated like a spec file (the cross-field shape); the bundle's profile becomes
        # profile.name + "+" + the local tag (BundleSpec.profile_name)
        new[leg] = _validated(
            validate_leg,
            {
                **spec.dump(),
                "cuda": cuda.dump(),
                "local": {"tag": ov.tag(), "origin": ov.origin},
                "build": {**spec.build.dump(), "shards": shards},
            },
            where,
        )
    if problems:
        raise BundleGraphError("local overrides: " + "; ".join(problems))
    return dataclasses.replace(matrix, legs=new)


def _validated(validate: Callable[[dict[str, Any]], T], data: dict[str, Any], where: object) -> T:
    """``validate(data)`` (a leg's or ``[cuda]`` table with overrides applied, validated like a
    spec file), a pydantic error as a :class:`BundleGraphError` naming ``where`` (pydantic is
    imported only with overrides: a graph without them never needs it)."""
    from pydantic import ValidationError

    try:
        return validate(data)
    except ValidationError as e:
        raise BundleGraphError(f"local overrides: {where}: {e}") from None


def is_local(spec: BundleSpec) -> bool:
    """True for a leg the overrides made a local build (its typed ``local`` field)."""
    return spec.local is not None


def from_filters(matrix: Matrix, legs: list[str], filters: Filters) -> Matrix:
    """What the graph's loader asks every backend's ``overrides`` module: ``matrix`` with the
    overrides of ``filters`` (``archs``, ``toolkit_source``) applied to the selected ``legs``
    (:func:`parse`, :func:`apply`; raises as they do)."""
    return apply(matrix, legs, parse(filters.archs, filters.toolkit_source))
