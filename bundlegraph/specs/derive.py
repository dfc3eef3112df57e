"""What a spec file need not say: the keys that follow from its ``backend``, ``os`` and ``arch``
(and a HIP leg's gfx family), filled into the file's table before it is validated (issue 53:
state each choice once).

A key a spec file leaves out gets (:func:`fill`):

- ``install_kind``: the installer's kind for the leg's os, arch and backend
  (:func:`bundlegraph.schemas.installer.kind_for`);
- ``cmake.GGML_<BACKEND>`` = true: the backend's CMake option (:attr:`bundlegraph.schemas.backend.Backend.CMAKE_OPTION`);
- ``build.targets``: a backend-only leg (it has ``[merge]``) builds its backend's library alone
  (``ggml-cuda``);
- what follows from the backend's own table (its ``table_targets`` verb) and the GPU targets it
  names, in the backend's targets entry (``CMAKE_TARGETS_KEY``): a HIP leg's ``hip.mapped_targets``
  and ``cmake.GPU_TARGETS``, its gfx family's targets (:data:`bundlegraph.backends.hip.FAMILIES`);
- ``required``: a backend-only leg, its backend's library and the runtime files the bundle must
  hold (:func:`backend_required`); a whole bundle, every file the installer requires of its kind
  plus the programs the smoke runs (:func:`whole_required`).

A key the file does say is left as written (an override: validation holds it to the same rules).
The values are exactly what the specs wrote before, so each spec's JSON form (its action keys, the
plan, every bundle) is unchanged: ``tests/unit/test_derived_keys.py`` holds the real specs to it.
"""

from __future__ import annotations

from typing import Any

from ..core.platforms import platform
from ..schemas import backend as backends

SMOKE_PROGRAMS = ("llama-cli",)
"""Programs a whole bundle must hold beyond the installer's: the smoke runs ``llama-cli``
(``--version``, ``--list-devices``: :mod:`bundlegraph.pipeline.smoke`)."""

DERIVED = (
    "install_kind",
    "required",
    "build.targets",
    "cmake.GGML_<BACKEND>",
    "hip.mapped_targets",
    "cmake.GPU_TARGETS",
)
"""The keys :func:`fill` derives, as a spec file would spell them."""


def backend_required(b: backends.Backend, os_name: str, gpu_targets: list[str]) -> list[str]:
    """What a backend-only leg's bundle must hold of its own: the backend's library, the runtime
    files the installer checks when a bundle carries them (``RUNTIME_GLOBS``), and what the
    backend ships beside it for ``gpu_targets`` (``required_files``: HIP's runtime and one rocBLAS
    kernel file per target)."""
    return [
        platform(os_name).library_glob(b.LIBRARY),
        *b.RUNTIME_GLOBS.get(os_name, ()),
        *b.required_files(os_name, tuple(gpu_targets)),
    ]


def whole_required(kind: str, os_name: str, promised: bool) -> list[str]:
    """What a whole bundle (a leg without ``[merge]``) must hold: the installer's files of
    ``kind`` (:func:`bundlegraph.schemas.installer.required_patterns`, the build number unknown:
    the newest rules) with :data:`SMOKE_PROGRAMS` after its two entry points."""
    from ..schemas.installer import required_patterns

    wanted = required_patterns(kind, None, programs=promised)
    p = platform(os_name)
    return [*wanted[:2], *(p.program(n) for n in SMOKE_PROGRAMS), *wanted[2:]]


def fill(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` (a spec file's table) with the keys it leaves out that follow from its
    ``backend``, ``os`` and ``arch`` (module docstring). A table whose ``backend``, ``os`` or
    ``arch`` is missing or unknown is returned as it is: validation names what is wrong."""
    from ..schemas.installer import kind_for

    b_name, os_name, arch = data.get("backend"), data.get("os"), data.get("arch")
    if not (isinstance(b_name, str) and isinstance(os_name, str) and isinstance(arch, str)):
        return data
    b = backends.BY_NAME.get(b_name)
    if b is None:
        return data
    try:
        platform(os_name)
    except KeyError:
        return data
    out = dict(data)
    if "install_kind" not in out:
        try:
            out["install_kind"] = kind_for(os_name, arch, b_name)
        except KeyError:
            pass  # validation says the key is missing; selection has no kind for it
    targets: list[str] = []
    if b.SPEC_TABLE and b.SPEC_TABLE in out:  # the backend's own table: what follows from it (HIP's targets)
        out[b.SPEC_TABLE], found = b.table_targets(out[b.SPEC_TABLE])
        targets = list(found)
    cmake = out.get("cmake", {})
    if isinstance(cmake, dict):
        cmake = dict(cmake)
        if b.CMAKE_OPTION and b.CMAKE_OPTION not in cmake:
            cmake[b.CMAKE_OPTION] = True
        if targets and b.CMAKE_TARGETS_KEY and b.CMAKE_TARGETS_KEY not in cmake:
            cmake[b.CMAKE_TARGETS_KEY] = list(targets)
        if cmake or "cmake" in out:
            out["cmake"] = cmake
    merged = isinstance(out.get("merge"), dict)
    build = out.get("build", {})
    if merged and b.GPU and isinstance(build, dict) and "targets" not in build:
        out["build"] = {**build, "targets": [b.LIBRARY]}
    if "required" not in out:
        if merged and b.GPU:
            out["required"] = backend_required(b, os_name, targets)
        elif not merged and isinstance(out.get("install_kind"), str):
            try:
                out["required"] = whole_required(out["install_kind"], os_name, out.get("promised", True) is not False)
            except KeyError:
                pass  # an install kind the installer does not know: validation names it
    return out


__all__ = ["DERIVED", "SMOKE_PROGRAMS", "backend_required", "fill", "whole_required"]
