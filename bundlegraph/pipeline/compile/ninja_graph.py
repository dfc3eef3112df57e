"""What ninja itself says about a configured build directory: the compile steps behind a leg's
targets, and how long each step took.

- :func:`compile_steps`: the compile edges (C, C++, CUDA, ... objects) that building ``targets``
  needs, read from ninja's own graph with ``ninja -t query`` (breadth first, one ``ninja`` call
  per depth level, so a ggml-cuda closure of 155 steps costs about five calls). A step is an
  output whose rule is a CMake compiler rule (``<LANG>_COMPILER__<target>_<config>``, the names
  CMake's Ninja generator gives; ``CUDA_COMPILER__ggml-cuda_unscanned_Release``); links, custom
  commands and phony edges are not compile steps.
- :func:`read_ninja_log`: seconds per output of ninja's ``.ninja_log`` (formats v5-v7: ``start
  end mtime output hash``, milliseconds, tab-separated, the last record of an output winning;
  ninja's ``src/build_log.cc``).
- :func:`object_key`: the name a cost record stores a step under: the output relative to the
  build directory with ``/`` separators and without its object suffix (``.o``/``.obj``), so a
  Linux and a Windows build of one tree name the same translation unit alike.

``ninja -t query`` prints, per path, ``<path>:``, then ``  input: <rule>`` with the explicit
inputs indented by four spaces, implicit ones after ``| `` and order-only ones after ``|| ``,
then ``  outputs:``. Source paths are as ninja holds them (absolute for a source tree outside the
build directory, as bundlegraph's is).
"""

from __future__ import annotations

import re
from pathlib import Path

from ...core import proc
from ...core.errors import BundleGraphError
from ...core.lightclass import frozen_ordered, mutable

_COMPILER_RULE = re.compile(r"^([A-Za-z]+)_COMPILER__")
"""CMake's Ninja generator names its compile rules ``<LANG>_COMPILER__<target>_<suffix>``."""
_OBJECT_SUFFIXES = (".obj", ".o")


@frozen_ordered
class CompileStep:
    """One compile edge: ``output`` (ninja's path of the object, relative to the build
    directory), ``source`` (its first explicit input, as ninja holds it), ``lang`` (``C``,
    ``CXX``, ``CUDA``, ...: the rule's language)."""

    output: str
    source: str
    lang: str

    @property
    def key(self) -> str:
        """:func:`object_key` of the output."""
        return object_key(self.output)


def object_key(output: str) -> str:
    """``ggml\\src\\...\\argmax.cu.obj`` and ``ggml/src/.../argmax.cu.o`` -> ``ggml/src/.../argmax.cu``."""
    s = output.replace("\\", "/")
    return next((s[: -len(x)] for x in _OBJECT_SUFFIXES if s.endswith(x)), s)


@mutable
class _Node:
    rule: str | None
    inputs: list[str]


def parse_query(text: str) -> dict[str, _Node]:
    """``ninja -t query`` output -> ``{path: (rule or None for a source, explicit + implicit
    inputs)}`` (order-only inputs are left out: they order a build, they are not built into the
    object)."""
    out: dict[str, _Node] = {}
    cur: _Node | None = None
    section = ""
    for line in text.splitlines():
        if not line.startswith(" ") and line.endswith(":"):
            cur = out.setdefault(line[:-1], _Node(None, []))
            section = ""
            continue
        if cur is None:
            continue
        stripped = line.strip()
        if line.startswith("  input: "):
            cur.rule = stripped.split(":", 1)[1].strip()
            section = "input"
        elif line.startswith("  ") and not line.startswith("    "):
            section = stripped.rstrip(":")  # outputs:, validations:
        elif section == "input" and stripped:
            if stripped.startswith("|| "):
                continue
            cur.inputs.append(stripped[2:] if stripped.startswith("| ") else stripped)
    return out


def _query(ninja: str, build_dir: Path, paths: list[str]) -> dict[str, _Node]:
    r = proc.run(
        [ninja, "-C", str(build_dir), "-t", "query", *paths],
        capture=True,
        echo=False,
        check=False,
        what="ninja -t query",
    )
    if r.returncode != 0:
        raise BundleGraphError(
            f"{build_dir}: ninja -t query {' '.join(paths[:3])}{' ...' if len(paths) > 3 else ''} "
            f"failed (exit {r.returncode}): {r.output.strip().splitlines()[-1:] or ''}"
        )
    return parse_query(r.output)


def compile_steps(ninja: str, build_dir: Path, targets: list[str], *, batch: int = 400) -> list[CompileStep]:
    """The compile steps building ``targets`` needs (empty: ``all``), sorted by output. Raises
    :class:`BundleGraphError` naming the build directory when it is not configured or ninja
    fails (an unknown target among them)."""
    if not (build_dir / "build.ninja").is_file():
        raise BundleGraphError(f"{build_dir}: no build.ninja (the leg is not configured yet: run its configure task)")
    seen: set[str] = set()
    frontier = list(dict.fromkeys(targets or ["all"]))
    steps: dict[str, CompileStep] = {}
    while frontier:
        todo = [p for p in frontier if p not in seen]
        seen.update(todo)
        nxt: list[str] = []
        for i in range(0, len(todo), batch):
            for path, node in _query(ninja, build_dir, todo[i : i + batch]).items():
                if node.rule is None:
                    continue  # a source file: nothing builds it
                m = _COMPILER_RULE.match(node.rule)
                if m and node.inputs:
                    steps[path] = CompileStep(path, node.inputs[0], m.group(1).upper())
                    continue  # an object's inputs are sources and headers
                nxt += [p for p in node.inputs if p not in seen]
        frontier = nxt
    return sorted(steps.values())


def read_ninja_log(path: Path) -> dict[str, float]:
    """``{output: seconds}`` of a ``.ninja_log`` (the last record of each output). An absent
    file gives ``{}``; a file that is not a ninja log raises naming it."""
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except FileNotFoundError:
        return {}
    if not lines:
        return {}
    if not re.match(r"^# ninja log v[5-7]\s*$", lines[0]):
        raise BundleGraphError(f"{path}: not a ninja log of format v5-v7 (first line {lines[0][:60]!r})")
    out: dict[str, float] = {}
    for line in lines[1:]:
        parts = line.split("\t")
        if len(parts) < 5:
            continue
        try:
            start, end = int(parts[0]), int(parts[1])
        except ValueError:
            continue
        out[parts[3]] = max(0, end - start) / 1000.0
    return out


__all__ = ["CompileStep", "compile_steps", "object_key", "parse_query", "read_ninja_log"]
