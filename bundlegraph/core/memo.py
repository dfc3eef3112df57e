"""The process's memo tables, in one place (issue 30: they were spread over nine modules).

Planning asks the same questions many times per process (a work directory's resolved path, a
stamp's parsed content, a tool's version, the GPU probe); each module keeps its answers in a table
made here, so one call empties them all: :func:`clear` (a long-lived process that changed its
environment, a test that wants fresh answers). What each table holds and when an entry is still
valid is documented where the table is made; this module only registers them.

Plain standard library: imported on every ``doit`` no-op.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

_CLEARS: dict[str, Callable[[], None]] = {}
"""How to empty each registered table, by name (a table made here: its ``dict.clear``)."""


def table(name: str) -> dict[Any, Any]:
    """A new, empty memo table registered as ``name`` (``<module>.<what>``). Raises ValueError when
    the name is taken (two tables under one name would clear each other's)."""
    t: dict[Any, Any] = {}
    register(name, t.clear)
    return t


def register(name: str, clear_fn: Callable[[], None]) -> None:
    """Register a memo kept elsewhere (an ``functools.lru_cache``'s ``cache_clear``) under ``name``;
    ValueError when the name is taken."""
    if name in _CLEARS:
        raise ValueError(f"memo table {name!r} is registered already")
    _CLEARS[name] = clear_fn


def clear(name: str | None = None) -> None:
    """Empty the table ``name``, or every table. Raises KeyError for an unknown name."""
    for fn in _CLEARS.values() if name is None else [_CLEARS[name]]:
        fn()


def names() -> list[str]:
    """Every registered table's name, sorted."""
    return sorted(_CLEARS)


__all__ = ["clear", "names", "register", "table"]
