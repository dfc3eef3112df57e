"""The rules of a CUDA leg's ``[cuda]`` table (:func:`problems`, run by
:func:`bundlegraph.specs.validation.cross_field_problems` on every spec of this backend, found as
``bundlegraph.backends.<name>.rules``): its archs within its CUDA version's range, the version
its toolkit pins (a redist manifest, a wheels lock), the runtime line installers choose by, and
the PTX ISA its PTX-only archs need against the oldest driver selection sends the leg to. One
line per problem, ``<file>: <key.path>: <message>``."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...core.platforms import platform
from ...schemas.archs import CudaVersion, arch_supported, fatbin_sm
from .spec import CUDA

if TYPE_CHECKING:
    from ...schemas.records import BundleSpec
    from .spec import CudaSpec

CUDA_TARGET_SINCE: dict[tuple[str, str], tuple[tuple[int, int], str]] = {
    ("windows", "arm64"): ((13, 4), "the first redist with windows-arm64 target libraries"),
}
"""``(os, arch)`` -> the first CUDA version whose redist has target libraries for it, and why
(NVIDIA's ``redistrib_<ver>.json``: ``windows-arm64`` keys appear in 13.4); an ``(os, arch)``
not named has them in every version the specs may name."""


def problems(f: Path, s: BundleSpec, root: Path, read: list[Path]) -> list[str]:
    """Every rule of this module on the leg ``s`` of file ``f`` (lock paths are relative to the
    bundles directory ``root``; a wheels lock read is appended to ``read``)."""
    cuda = CUDA.of(s)
    out = cuda_problems(f, s.os, s.arch, cuda) + ptx_jit_problems(f, s)
    major = cuda.version.major
    tk = cuda.toolkit
    if tk.source == "redist" and tk.manifest and CudaVersion(tk.manifest).parts != cuda.version.parts:
        out.append(
            f"{f}: cuda.version: '{cuda.version}', but cuda.toolkit.manifest '{tk.manifest}' is "
            f"CUDA {'.'.join(tk.manifest.split('.')[:2])}; the toolkit installed is the manifest's: "
            f"make them agree"
        )
    if tk.source == "wheels" and tk.lock:
        out += _lock_problems(f, cuda.version, root / tk.lock)
        read.append(root / tk.lock)
    if s.profile.line is not None and s.profile.line != f"cuda{major}":
        out.append(
            f"{f}: profile.line: '{s.profile.line}', but cuda.version {cuda.version} is CUDA {major}; "
            f"installers choose the runtime line by it: set profile.line = 'cuda{major}'"
        )
    return out


def partial_problems(f: Path, data: dict[str, Any]) -> list[str]:
    """The ``[cuda]`` table's own rules (:func:`cuda_problems`) on a spec file's content ``data``
    that failed the schema elsewhere, so a typo in one key does not hide an impossible arch; a
    ``[cuda]`` table that itself fails the schema is left to the schema's report."""
    from pydantic import ValidationError

    from ...specs.validation import validate_table
    from .spec import CudaSpec

    cuda = data.get("cuda")
    if not isinstance(cuda, dict):
        return []
    try:
        c = validate_table(CudaSpec, cuda)
    except ValidationError:
        return []  # already reported with the file's other schema errors
    return cuda_problems(f, data.get("os"), data.get("arch"), c)


def cuda_problems(f: Path, os_: object, arch: object, cuda: CudaSpec) -> list[str]:
    """Each GPU arch within the CUDA version's range; Windows ARM64 needs CUDA >= 13.4."""
    out = []
    v = cuda.version.parts
    for i, a in enumerate(cuda.archs):
        why = arch_supported(a, v)
        if why:
            out.append(f"{f}: cuda.archs[{i}]: '{a.cmake}': {why}")
    since = CUDA_TARGET_SINCE.get((str(os_), str(arch)))
    if since is not None and v < since[0]:
        want = ".".join(map(str, since[0]))
        plat = platform(str(os_))
        out.append(
            f"{f}: cuda.version: a {plat.title} {str(arch).upper()} CUDA leg needs CUDA >= {want} ({since[1]}); "
            f"got {cuda.version}"
        )
    return out


def ptx_jit_problems(f: Path, s: BundleSpec) -> list[str]:
    """A leg with PTX-only archs (``61-virtual``): its toolkit's PTX ISA must be one the oldest
    driver selection sends the leg to JIT-compiles (:func:`bundlegraph.backends.cuda.oldest_driver`,
    :mod:`bundlegraph.checks.ptxisa`), the rule verify's ``ptx-isa`` row holds the built fatbin to."""
    from ...checks.ptxisa import emitted_isa, first_driver, fmt, max_isa
    from . import oldest_driver

    cuda = CUDA.of(s)
    sass = {fatbin_sm(a) for a in cuda.archs if a.sass}
    ptx_only = [a.cmake for a in cuda.archs if a.ptx and fatbin_sm(a) not in sass]
    isa, driver = emitted_isa(cuda.version.parts), oldest_driver(s.profile.line, cuda.version.major)
    top = max_isa(driver)
    if not ptx_only or isa is None or (top is not None and isa <= top):
        return []
    return [
        f"{f}: cuda.version: CUDA {cuda.version} writes PTX ISA {fmt(isa)} (which needs {first_driver(isa)}), but "
        f"the PTX-only archs {', '.join(ptx_only)} are JIT-compiled by drivers from CUDA {fmt(driver)}, the oldest "
        f"selection sends this leg to, which read PTX ISA up to {fmt(top) if top else 'none'}: build with CUDA "
        f"{fmt(driver)} or raise the leg's driver floor"
    ]


def _lock_problems(f: Path, version: str, lock_path: Path) -> list[str]:
    """A wheels lock of another CUDA version than the leg's (its ``cuda`` key); an unreadable
    lock is named."""
    try:
        cuda = tomllib.loads(lock_path.read_text(encoding="utf-8")).get("cuda")
    except FileNotFoundError:
        return [f"{f}: cuda.toolkit.lock: {lock_path} does not exist; write it with `bundlegraph lock-wheels`"]
    except (OSError, ValueError) as e:
        return [f"{f}: cuda.toolkit.lock: {lock_path} is not a lock file ({e})"]
    if cuda != version:
        return [
            f"{f}: cuda.version: '{version}', but the wheels lock {lock_path.name} is CUDA {cuda}; make them agree "
            f"(or write a lock for {version} with `bundlegraph lock-wheels`)"
        ]
    return []
