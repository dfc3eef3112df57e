"""Is every ``[cmake]`` key of a spec one the configured tree declares? (configure's check.)

CMake's own warning, "Manually-specified variables were not used by the project", is not enough:
llama.cpp's ``ggml/CMakeLists.txt`` reads every variable (``get_cmake_property(all_variables
VARIABLES)``), so CMake never names a ``GGML_*`` key there, and ``GGML_OPENMPP = true`` would
configure silently (``GGML_OPENMPP:UNINITIALIZED=ON`` in the cache, the real option at its
default). So a key is judged by what the configured tree declares:

- **declared**: a ``CMakeCache.txt`` entry of a real type (``BOOL``, ``STRING``, ``PATH``,
  ``FILEPATH``: what ``option()`` and ``set(... CACHE ...)`` give an entry, also one first set on
  the command line), or a deprecated option of the source tree (``llama_option_depr(TYPE OLD
  [NEW])`` in its ``CMakeLists.txt`` files: accepted, with a warning that says what the tree does
  with it);
- **a typo**: an ``UNINITIALIZED`` entry that only the spec set (no ``option()`` or cache ``set``
  gave it a type), or a key CMake itself reports as unused. CMake's own variables (``CMAKE_*``)
  are not the project's to declare and are judged by CMake's warning alone.

A typo fails the configure naming the spec file, the key and the closest declared option (a
deprecated one said to be deprecated). Sources: CMake's cache format (``cmake(1)``,
"CMakeCache.txt": ``NAME:TYPE=VALUE``) and llama.cpp's top-level ``CMakeLists.txt`` (the
``llama_option_depr`` transition helper).
"""

from __future__ import annotations

import re
from pathlib import Path

from ...core.lightclass import frozen
from ...schemas.cmake_rules import BOOL_WORDS

UNUSED_HEAD = "Manually-specified variables were not used by the project:"
"""The head line of CMake's unused-variable warning in a configure log."""

REAL_TYPES = ("BOOL", "STRING", "PATH", "FILEPATH")
"""Cache entry types an ``option()`` or ``set(... CACHE <type> ...)`` gives (``INTERNAL`` and
``STATIC`` entries are CMake's and the project's bookkeeping, not options)."""

_DEPR = re.compile(r"^\s*\w*option_depr\s*\(\s*(\w+)\s+(\w+)(?:\s+(\w+))?\s*\)", re.M | re.I)


@frozen
class Deprecated:
    """A deprecated option of the tree: ``name``, ``replacement`` (None: ignored) and ``level``
    (CMake's message type: ``WARNING`` or ``FATAL_ERROR``)."""

    name: str
    replacement: str | None
    level: str

    def says(self) -> str:
        """What the tree does with it, in a few words."""
        if self.level.upper() == "FATAL_ERROR":
            return f"deprecated: this tree refuses it{f', use {self.replacement}' if self.replacement else ''}"
        return (
            f"deprecated: this tree turns on {self.replacement}"
            if self.replacement
            else "deprecated: this tree ignores it"
        )


def read_typed_cache(cmake_dir: Path) -> dict[str, tuple[str, str]]:
    """``CMakeCache.txt`` of ``cmake_dir`` as ``{NAME: (TYPE, value)}``. Raises OSError when absent."""
    out: dict[str, tuple[str, str]] = {}
    for line in (cmake_dir / "CMakeCache.txt").read_text(encoding="utf-8", errors="replace").splitlines():
        if not line or line.startswith(("#", "//")) or "=" not in line:
            continue
        head, _, value = line.partition("=")
        name, _, kind = head.partition(":")
        out[name] = (kind.upper(), value)
    return out


def deprecated_options(source_tree: Path) -> dict[str, Deprecated]:
    """``{OLD: Deprecated}`` from every ``*_option_depr(TYPE OLD [NEW])`` call in the
    ``CMakeLists.txt`` files of the source tree's top two levels (llama.cpp keeps them in the
    top-level file)."""
    out: dict[str, Deprecated] = {}
    for f in [source_tree / "CMakeLists.txt", *sorted(source_tree.glob("*/CMakeLists.txt"))]:
        try:
            text = f.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        for m in _DEPR.finditer(text):
            level, old, new = m.group(1), m.group(2), m.group(3)
            if level.upper() in ("TYPE", "OLD"):  # the helper's own definition line
                continue
            out.setdefault(old, Deprecated(old, new, level))
    return out


def unused_by_cmake(log: str) -> list[str]:
    """The names CMake listed under :data:`UNUSED_HEAD` in a configure log."""
    unused: list[str] = []
    lines = log.splitlines()
    for i, line in enumerate(lines):
        if UNUSED_HEAD not in line:
            continue
        for nxt in lines[i + 1 :]:
            if not nxt.strip():
                if unused:
                    break
                continue
            if not nxt.startswith("    "):
                break
            unused.append(nxt.strip())
    return unused


def judge(
    spec_keys: tuple[str, ...],
    spec_file: str,
    cache: dict[str, tuple[str, str]],
    log: str,
    deprecated: dict[str, Deprecated],
) -> tuple[list[str], list[str]]:
    """``(problems, warnings)`` for the spec's ``[cmake]`` keys (module docstring), one line each
    naming ``spec_file`` and the key: a problem fails the configure, a warning (a deprecated key)
    is printed. A key the tree declares BOOL whose value is not one of CMake's boolean words
    (:data:`~bundlegraph.schemas.cmake_rules.BOOL_WORDS`: ``"nope"`` would read as true) is a problem."""
    import difflib

    reported = set(unused_by_cmake(log))
    declared = {k for k, (kind, _) in cache.items() if kind in REAL_TYPES and not k.startswith("CMAKE_")}
    problems, warnings = [], []
    for k in spec_keys:
        if k in deprecated:
            warnings.append(f"{spec_file}: cmake.{k}: {deprecated[k].says()}")
            continue
        kind, value = cache.get(k, ("", ""))
        if kind == "BOOL" and value.strip().upper() not in BOOL_WORDS:
            problems.append(
                f"{spec_file}: cmake.{k}: the configured tree declares a BOOL option, and {value!r} is not one of "
                f"CMake's boolean words ({'/'.join(BOOL_WORDS)}, any case): CMake reads it as true; write true or false"
            )
            continue
        if k in reported:
            why = f'the project does not use it (CMake: "{UNUSED_HEAD[:-1]}")'
        elif not k.startswith("CMAKE_") and kind not in REAL_TYPES:
            why = (
                "the configured tree declares no such option (its cache holds it as "
                f"{kind or 'nothing'}, set only by the spec)"
            )
        else:
            continue
        pool = sorted(declared - {k}) + sorted(deprecated)
        close = difflib.get_close_matches(k, pool, n=1, cutoff=0.6)
        if close:
            hint = close[0]
            note = f" ({deprecated[hint].says()})" if hint in deprecated else ""
            why += f"; did you mean {hint}?{note}"
        else:
            why += "; no option of this tree is close"
        problems.append(f"{spec_file}: cmake.{k}: {why}")
    return problems, warnings


__all__ = [
    "REAL_TYPES",
    "UNUSED_HEAD",
    "Deprecated",
    "deprecated_options",
    "judge",
    "read_typed_cache",
    "unused_by_cmake",
]
