"""The verify table: the generic rows (:data:`.rows.ROWS`) plus every backend's own rows
(:func:`registry_rows`), in phase order (:func:`rows_for`).

A backend's rows are the ``ROWS`` of the ``verify`` module of its package
(``bundlegraph.backends.vulkan.verify``), found through the registry
(:data:`bundlegraph.schemas.backend.BY_NAME`): a backend without one has none. They sit beside the
backend's facts but are imported only here, by name (they call :mod:`bundlegraph.checks`, which
sits above the facts). Every row applies to every policy its gate accepts: a CUDA row gates on
the fields a CUDA leg sets (promised archs, a runtime major), a Vulkan row on ``backend``.

Adding a check: a row in :data:`.rows.ROWS` (generic) or in its backend's ``verify`` module, plus
its test. Adding a backend's rows: ``bundlegraph/backends/<name>/verify.py`` with ``ROWS``, plus
its test; nothing here changes.
"""

from __future__ import annotations

import functools
from dataclasses import fields

from ..schemas import backend as backends
from ..schemas.backend import BACKEND_NAMES
from . import rows
from .policy import VerifyPolicy
from .rows import PHASES, READ_KEY, AnyRow


def backend_rows(names: tuple[str, ...] = BACKEND_NAMES) -> dict[str, tuple[AnyRow, ...]]:
    """Backend spec name -> the ``ROWS`` of its package's ``verify`` module
    (``bundlegraph.backends.<name>.verify``), or ``()`` for a backend without one (or one that is
    a plain module, or a name the registry does not hold). Raises RuntimeError for such a module without ``ROWS`` (a bug)."""
    out: dict[str, tuple[AnyRow, ...]] = {}
    for name in names:
        b = backends.BY_NAME.get(name)
        mod = backends.plug_in(b, "verify") if b is not None else None
        if mod is None:
            out[name] = ()
            continue
        found = getattr(mod, "ROWS", None)
        if not isinstance(found, tuple):
            raise RuntimeError(f"verify table: {mod.__name__} has no ROWS tuple (the backend {name!r}'s verify rows)")
        out[name] = found
    return out


@functools.cache
def registry_rows() -> dict[str, tuple[AnyRow, ...]]:
    """Backend spec name -> its verify rows (every backend of the registry has an entry), loaded
    on first use and checked with the generic rows (:func:`table_problems`; a bad table is a bug:
    RuntimeError).

    Loaded on first use, not at import: a backend's ``verify`` module imports :mod:`.rows`, which
    runs this package's ``__init__``; loading the rows there would import that module while it is
    half-initialised (an import circle)."""
    found = backend_rows()
    if probs := table_problems(rows.ROWS, found):
        raise RuntimeError("bundlegraph.verification.table: " + "; ".join(probs))
    return found


def rows_for(
    generic: tuple[AnyRow, ...] | None = None, backend_rows: dict[str, tuple[AnyRow, ...]] | None = None
) -> list[AnyRow]:
    """The generic rows (default :data:`.rows.ROWS`) and every backend's (default
        :func:`registry_rows`), ordered by :data:`.rows.PHASES`: within a phase the generic rows first,
        then the backends' in registry order. Rows whose gate refuses a policy are skipped by the
        caller (:func:`.run.verify_path`). Raises RuntimeError on a bad table (:func:`table_problems`:
    a bug, not a bundle problem)."""
    generic = rows.ROWS if generic is None else generic
    backend_rows = registry_rows() if backend_rows is None else backend_rows
    if probs := table_problems(generic, backend_rows):
        raise RuntimeError("verify table: " + "; ".join(probs))
    table = [*generic, *(r for name in backend_rows for r in backend_rows[name])]
    return sorted(table, key=lambda r: PHASES.index(r.phase))


def table_problems(generic: tuple[AnyRow, ...], backend_rows: dict[str, tuple[AnyRow, ...]]) -> list[str]:
    """What is wrong with a verify table, one line each (empty: nothing): a backend the registry
    does not know (or one missing), two rows of one name, a phase outside :data:`.rows.PHASES`, a
    key naming no :class:`~.policy.VerifyPolicy` field. Checked on the real table by
    :func:`registry_rows` (a bad table is a bug: RuntimeError)."""
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


__all__ = ["backend_rows", "registry_rows", "rows_for", "table_problems"]
