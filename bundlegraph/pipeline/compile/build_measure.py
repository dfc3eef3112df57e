"""What one build measured, read back after ninja ran: the seconds each step took (the lines the
build appended to ``.ninja_log``), which compile steps the compiler cache really compiled (its
stats log: :func:`~.compiler_cache.results_by_source`), and so the figures a cost record may
take (:mod:`.costs`) and the objects a final compile missed.

Only a real compile measures a step's cost: a cache hit takes a fraction of a second and would
make a heavy template instance look free, so hits are never recorded.
"""

from __future__ import annotations

import os
from dataclasses import field
from pathlib import Path

from ...core.lightclass import frozen
from .ninja_graph import CompileStep, object_key


def log_size(cmake_dir: Path) -> int:
    """Bytes of ``.ninja_log`` now (0 when absent): read before a build, so
    :func:`log_since` gives only that build's lines."""
    try:
        return (cmake_dir / ".ninja_log").stat().st_size
    except FileNotFoundError:
        return 0


def log_since(cmake_dir: Path, offset: int) -> dict[str, float]:
    """``{output: seconds}`` of the ``.ninja_log`` records written after byte ``offset`` (all of
    them when ninja rewrote the file smaller, e.g. after a recompaction)."""
    from .ninja_graph import read_ninja_log

    log = cmake_dir / ".ninja_log"
    try:
        raw = log.read_bytes()
    except FileNotFoundError:
        return {}
    if offset > len(raw) or offset <= 0:
        return read_ninja_log(log)
    header = raw.split(b"\n", 1)[0] + b"\n"
    tmp = log.with_name(".ninja_log.bundlegraph-since")
    tmp.write_bytes(header + raw[offset:])
    try:
        return read_ninja_log(tmp)
    finally:
        tmp.unlink(missing_ok=True)


def _norm(path: str, cwd: Path) -> str:
    p = path.replace("\\", "/")
    if not os.path.isabs(p) and not (len(p) > 1 and p[1] == ":"):
        p = (cwd / p).as_posix()
    return os.path.normpath(p).replace("\\", "/").lower() if os.name == "nt" else os.path.normpath(p)


def _in_build_dir(output: str, cmake_dir: Path) -> str:
    """``output`` with ``/`` separators, relative to ``cmake_dir`` where it is an absolute path
    inside it: a committed cost record names no machine's build folder."""
    p = output.replace("\\", "/")
    base = cmake_dir.as_posix().rstrip("/") + "/"
    return p[len(base) :] if p.startswith(base) else p


@frozen
class Measured:
    """One build's figures: ``objects`` (seconds by object key, real compiles only), ``other``
    (seconds of the non-compile steps it ran, by output), ``missed`` / ``hit`` (outputs of the
    compile steps the cache missed / hit; empty without a cache), ``compiled`` (outputs of every
    compile step ninja ran)."""

    objects: dict[str, float] = field(default_factory=dict)
    other: dict[str, float] = field(default_factory=dict)
    missed: list[str] = field(default_factory=list)
    hit: list[str] = field(default_factory=list)
    compiled: list[str] = field(default_factory=list)


def measure(
    steps: list[CompileStep], ran: dict[str, float], results: dict[str, str] | None, cmake_dir: Path
) -> Measured:
    """The figures of a build that ran the steps ``ran`` (:func:`log_since`) with the cache
    results ``results`` (None: no compiler cache, so every compile was real)."""
    by_output = {s.output.replace("\\", "/"): s for s in steps}
    by_source = {_norm(src, cmake_dir): what for src, what in (results or {}).items()}
    out = Measured()
    for output, seconds in sorted(ran.items()):
        step = by_output.get(output.replace("\\", "/"))
        if step is None:
            key = _in_build_dir(output, cmake_dir)
            # one step can be logged under its absolute and its relative name (a custom command
            # whose OUTPUT is absolute, as ggml-opencl's kernel headers): one key, one cost
            out.other[key] = max(seconds, out.other.get(key, 0.0))
            continue
        out.compiled.append(step.output)
        what = "miss" if results is None else by_source.get(_norm(step.source, cmake_dir), "unknown")
        if what in ("miss", "uncacheable"):  # compiled for real: its seconds are its cost
            out.objects[object_key(step.output)] = seconds
        if what == "miss" and results is not None:
            out.missed.append(step.output)
        elif what == "hit":
            out.hit.append(step.output)
    return out


__all__ = ["Measured", "log_since", "log_size", "measure"]
