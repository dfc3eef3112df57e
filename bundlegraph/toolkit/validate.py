"""Validation of a toolkit prefix before any CMake runs: every required file of both roles
(:func:`bundlegraph.toolkit.components.required_files`) must exist. A miss names the file,
the component (and platform) that should provide it and, when the spec does not list that
component, the spec key to add it to.
"""

from __future__ import annotations

from pathlib import Path

from ..core.errors import ToolkitError
from .components import Required, required_files
from .identity import ComponentSet


def required(cs: ComponentSet) -> list[Required]:
    """:func:`~bundlegraph.toolkit.components.required_files` of ``cs``: its platforms and CUDA
    major, the Linux driver stub from the generated stub (wheels) or the cudart archive, and no
    cublas files when ``cuda.toolkit.target`` does not list ``libcublas``."""
    stub = "generated stub" if cs.source == "wheels" else "cuda_cudart"
    major, cublas = cs.cuda_version.major, "libcublas" in cs.target
    return required_files(cs.host_platform, cs.target_platform, major, driver_stub_from=stub, cublas=cublas)


def problems(prefix: Path, cs: ComponentSet) -> list[str]:
    """One line per missing required file (empty: valid)."""
    out = []
    for r in required(cs):
        p = prefix / r.path
        if p.exists():  # follows links: a dangling unversioned link is a miss
            continue
        listed = r.component in (cs.host if r.role == "host" else cs.target) or r.component == "generated stub"
        hint = "" if listed else (f"; {cs.spec_file or 'the spec'}: cuda.toolkit.{r.role} does not list {r.component}")
        out.append(f"missing {r.path} (should come from component {r.component} for {r.platform}{hint})")
    return out


def required_paths(prefix: Path, cs: ComponentSet) -> list[Path]:
    """Every required file of ``prefix`` for ``cs`` (redist or wheels source): what the toolkit
    task's stamp records by presence, so a toolkit whose files were deleted after install is
    not up to date."""
    return [prefix / r.path for r in required(cs)]


def check(prefix: Path, cs: ComponentSet, *, what: str) -> None:
    """Raise :class:`ToolkitError` listing every missing file of ``prefix``."""
    miss = problems(prefix, cs)
    if miss:
        raise ToolkitError(f"toolkit {what} failed validation ({len(miss)} missing):\n  " + "\n  ".join(miss))
