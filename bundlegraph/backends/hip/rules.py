"""The rules of a HIP leg's ``[hip]`` table (:func:`problems`, run by
:func:`bundlegraph.specs.validation.cross_field_problems` on every spec of this backend, found as
``bundlegraph.backends.<name>.rules``). One line per problem, ``<file>: <key.path>: <message>``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ...core.errors import did_you_mean
from .spec import HIP

if TYPE_CHECKING:
    from ...schemas.records import BundleSpec


def _cmake_list(v: object) -> list[str] | None:
    """A CMake list entry as a list (``"a;b"`` or ``["a", "b"]``); None when unset."""
    if v is None:
        return None
    return [str(x) for x in v] if isinstance(v, list) else [x for x in str(v).split(";") if x]


def problems(f: Path, s: BundleSpec, root: Path, read: list[Path]) -> list[str]:
    """A HIP leg's ``[hip]`` against the fork's families (:data:`bundlegraph.backends.FAMILIES`),
    its ``GPU_TARGETS`` and its TheRock lock (:func:`bundlegraph.backends.hip.sdk.load_lock`), one
    line each. The lock is appended to ``read``. A tarball the lock does not pin is not a spec
    problem: the SDK stage refuses it when it runs, so plan and keys work before it is pinned."""
    from ...core.errors import ToolkitError
    from . import FAMILIES, ROCBLAS_FOLDER, RUNTIME_REQUIRED
    from .sdk import load_lock

    hip = HIP.of(s)
    out = []
    want = FAMILIES.get(hip.gfx_target)
    if want is None:
        out.append(
            f"{f}: hip.gfx_target: '{hip.gfx_target}' is not one of the fork's families "
            f"({', '.join(FAMILIES)}){did_you_mean(hip.gfx_target, FAMILIES)}"
        )
    elif list(hip.mapped_targets) != list(want):
        out.append(
            f"{f}: hip.mapped_targets: {hip.mapped_targets}, but family {hip.gfx_target} is {list(want)} "
            f"(the installer serves a host by this list)"
        )
    gpu = _cmake_list(s.cmake.get("GPU_TARGETS"))
    if gpu != list(hip.mapped_targets):
        out.append(
            f"{f}: cmake.GPU_TARGETS: {gpu}, but hip.mapped_targets is {hip.mapped_targets}: the bundle must "
            f"hold code objects for exactly the targets it promises"
        )
    # what verify must refuse: a bundle without the runtime ggml-hip imports (a Windows one without
    # hipblas.dll: ggml-org/llama.cpp#26996) or without a rocBLAS kernel file of one of its targets
    want_req = [*RUNTIME_REQUIRED[s.os], *(f"{ROCBLAS_FOLDER}/*{t}*" for t in hip.mapped_targets)]
    if missing := [r for r in want_req if r not in s.required]:
        out.append(
            f"{f}: required: lacks {', '.join(missing)}: a HIP bundle must hold the runtime ggml-hip imports "
            f"and a rocBLAS kernel file for every mapped target"
        )
    lock = root / hip.sdk.lock
    read.append(lock)
    try:
        got = load_lock(lock)
    except ToolkitError as e:
        out.append(f"{f}: hip.sdk.lock: {e}")
    else:
        if got.therock != hip.sdk.version:
            out.append(f"{f}: hip.sdk.version: '{hip.sdk.version}', but {hip.sdk.lock} pins TheRock {got.therock}")
    return out
