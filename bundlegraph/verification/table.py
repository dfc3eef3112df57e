"""The verify table: the generic rows (:data:`.rows.ROWS`) plus every backend's own rows
(:data:`BACKEND_ROWS`), in phase order (:func:`rows_for`).

A backend's rows are keyed by its spec name in :data:`bundlegraph.backends.BACKENDS`; they live
in this package (:mod:`.cuda`), not in the backend module, because the backends table sits below
:mod:`bundlegraph.checks` (the checks read the drivers from it; ``[tool.importlinter]`` in
pyproject.toml). Every row applies to every policy its gate accepts: a CUDA row gates on the
fields a CUDA leg sets (promised archs, a runtime major).

Adding a check: a row in :data:`.rows.ROWS` (generic) or in its backend's module, plus its test.
"""

from __future__ import annotations

from dataclasses import fields

from ..backends import BACKEND_NAMES
from . import cuda, rows
from .policy import VerifyPolicy
from .rows import PHASES, READ_KEY, AnyRow

BACKEND_ROWS: dict[str, tuple[AnyRow, ...]] = {"cpu": (), "cuda": cuda.ROWS, "vulkan": ()}
"""Backend spec name -> its verify rows (every backend of the registry has an entry)."""


def rows_for(
    generic: tuple[AnyRow, ...] | None = None, backend_rows: dict[str, tuple[AnyRow, ...]] | None = None
) -> list[AnyRow]:
    """The generic rows (default :data:`.rows.ROWS`) and every backend's (default
        :data:`BACKEND_ROWS`), ordered by :data:`.rows.PHASES`: within a phase the generic rows first,
        then the backends' in registry order. Rows whose gate refuses a policy are skipped by the
        caller (:func:`.run.verify_path`). Raises RuntimeError on a bad table (:func:`table_problems`:
    a bug, not a bundle problem)."""
    generic = rows.ROWS if generic is None else generic
    backend_rows = BACKEND_ROWS if backend_rows is None else backend_rows
    if probs := table_problems(generic, backend_rows):
        raise RuntimeError("verify table: " + "; ".join(probs))
    table = [*generic, *(r for name in backend_rows for r in backend_rows[name])]
    return sorted(table, key=lambda r: PHASES.index(r.phase))


def table_problems(generic: tuple[AnyRow, ...], backend_rows: dict[str, tuple[AnyRow, ...]]) -> list[str]:
    """What is wrong with a verify table, one line each (empty: nothing): a backend the registry
    does not know (or one missing), two rows of one name, a phase outside :data:`.rows.PHASES`, a
    key naming no :class:`~.policy.VerifyPolicy` field. Checked on the real table when this module
    loads (a bad table is a bug: RuntimeError)."""
    probs = []
    if set(backend_rows) != set(BACKEND_NAMES):
        probs.append(f"backend rows for {sorted(backend_rows)}: expected one entry per backend {sorted(BACKEND_NAMES)}")
    rows = [*generic, *(r for rs in backend_rows.values() for r in rs)]
    names = [r.name for r in rows]
    if len(set(names)) != len(names):
        probs.append(f"two verify rows share a name: {sorted(n for n in set(names) if names.count(n) > 1)}")
    known = {f.name for f in fields(VerifyPolicy)}
    for r in rows:
        if r.phase not in PHASES:
            probs.append(f"verify row {r.name}: phase {r.phase!r}: expected one of {', '.join(PHASES)}")
        if bad := [k for k in r.key if k not in known]:
            probs.append(f"verify row {r.name}: key {bad}: not verify policy fields")
    if bad := [k for k in READ_KEY if k not in known]:
        probs.append(f"the reader's key {bad}: not verify policy fields")
    return probs


if _probs := table_problems(rows.ROWS, BACKEND_ROWS):
    raise RuntimeError("bundlegraph.verification.table: " + "; ".join(_probs))

__all__ = ["BACKEND_ROWS", "rows_for", "table_problems"]
