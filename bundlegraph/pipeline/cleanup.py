"""What ``doit clean TASK`` removes: what the task wrote in the work directory, never the cache.

For a task ``<stage>:<leg>`` that is:

- the files its stamp records as outputs (``.bundlegraph/stamps/<task>.json``: the bundle in
  ``dist/``, the stage's record, ...), kept to ``build/``, ``dist/`` and ``.bundlegraph/`` of the work
  directory (a toolkit's outputs live in the download cache, which is shared and never cleaned);
- the stage's other files and folders under ``build/<leg>/`` (:data:`STAGE_PATHS`: logs, the
  CMake build tree, the merged tree, ...) and in ``dist/`` (:data:`DIST_PATHS`);
- the stamp itself, so the task runs again.

The per-leg cost records (``.bundlegraph/costs/``) are measured data that the shard split carries
from run to run; no task's clean removes them. ``doit clean -a`` removes every task's share, so
the next ``doit`` starts over with the cache kept.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from ..core import paths

STAGE_PATHS: dict[str, tuple[str, ...]] = {
    "source": ("source.json",),
    "configure": (
        "cmake",
        "configure.json",
        "toolchain.cmake",
        "bundlegraph-hooks.cmake",
        "logs/configure.log",
        "launcher-check",
    ),
    "build": ("build.json", "compiler-cache.json", "logs/build.log", "logs/compiler-cache-stats.log", "shard"),
    "verify": ("verify.json",),
    "merge": ("merge.json", "merged"),
    "package": ("package.json",),
    "smoke": ("smoke.json", "logs/smoke.log", "smoke-failed"),
    "smoke-tools": ("smoke-tools",),
}
"""Files and folders under ``build/<leg>/`` each stage writes besides its stamped outputs
(``smoke-tools``: the task ``smoke:tools-<leg>``)."""

DIST_PATHS: dict[str, tuple[str, ...]] = {
    "manifest": (
        "llama-prebuilt-manifest.json",
        "llama-prebuilt-sha256.json",
        "llama-prebuilt-provenance.json",
        "release-assets.txt",
    ),
}
"""Files in ``dist/`` a shared task writes besides its stamped outputs."""

_OWNED = ("build", "dist", ".bundlegraph")


def owned_paths(task: str, stage: str, leg: str | None) -> list[Path]:
    """Every path ``doit clean <task>`` would remove now that exists (module docstring), sorted."""
    from ..core import state

    work = paths.workdir()
    found: set[Path] = {state.stamp_path(task)}
    stamp = state.load(task)
    recorded = [*stamp.outputs, *stamp.present] if stamp is not None else []
    for rel in recorded:
        p = Path(rel) if Path(rel).is_absolute() else work / rel
        try:
            inside = p.resolve().relative_to(work.resolve()).parts[:1]
        except ValueError:
            continue  # the cache, or anything else outside the work directory
        if inside and inside[0] in _OWNED:
            found.add(p)
    kind = "smoke-tools" if task.startswith("smoke:tools-") else stage
    if leg is not None and kind in STAGE_PATHS:
        found |= {paths.build_dir(leg) / rel for rel in STAGE_PATHS[kind]}
        if kind == "smoke":
            found |= _smoke_files(leg)
    found |= {paths.dist_dir() / rel for rel in DIST_PATHS.get(stage, ())}
    present = sorted(p for p in found if p.exists())
    folders = [p for p in present if p.is_dir()]
    return [p for p in present if not any(f in p.parents for f in folders)]  # a folder covers its files


def _smoke_files(leg: str) -> set[Path]:
    """``dist/<bundle>.smoke.json`` of ``leg``'s packaged bundle (from its package stamp)."""
    from ..core import state

    stamp = state.load(f"package:{leg}")
    if stamp is None:
        return set()
    work = paths.workdir()
    return {work / f"{rel}.smoke.json" for rel in stamp.outputs if rel.startswith("dist/")}


def remove(found: list[Path]) -> None:
    """Remove ``found`` (files and folder trees)."""
    for p in found:
        if p.is_dir() and not p.is_symlink():
            shutil.rmtree(p, ignore_errors=True)
        else:
            p.unlink(missing_ok=True)


def describe(found: list[Path]) -> str:
    """``found`` as one line of paths relative to the work directory."""
    work = paths.workdir()
    rels = []
    for p in found:
        try:
            rels.append(p.relative_to(work).as_posix() + ("/" if p.is_dir() else ""))
        except ValueError:
            rels.append(p.as_posix())
    return ", ".join(rels) or "nothing (it wrote nothing that is still there)"


__all__ = ["DIST_PATHS", "STAGE_PATHS", "describe", "owned_paths", "remove"]
