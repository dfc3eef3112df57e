"""``DOIT_CONFIG`` of a bundlegraph dodo, and the check that doit's own database can be read.
Kept apart from :mod:`bundlegraph.graph.context` so a no-op that recalls its memo
(:mod:`bundlegraph.graph.noop_memo`) builds the same configuration without loading the graph."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from ..core import paths, report


def doit_config(default_tasks: list[str], untouched: bool) -> dict[str, Any]:
    """``DOIT_CONFIG``: doit's database ``.bundlegraph/doit.sqlite3`` (created with its folder;
    when ``untouched``, used only where it exists and is readable, else ``:memory:``, sqlite's
    in-memory database), subtasks listed, verbosity 2, ``default_tasks``."""
    sd = paths.state_dir()
    db = sd / "doit.sqlite3"
    if untouched:
        dep_file = str(db) if db.is_file() and usable_db(db, move=False) else ":memory:"
    else:
        sd.mkdir(parents=True, exist_ok=True)
        usable_db(db)
        dep_file = str(db)
    return {
        "backend": "sqlite3",
        "dep_file": dep_file,
        "subtasks": True,  # plain `doit list` shows every <stage>:<leg> task
        "verbosity": 2,
        "default_tasks": default_tasks,
    }


def usable_db(db: Path, move: bool = True) -> bool:
    """Whether doit's own state file ``db`` (absent: True) can be read. It is a cache beside the
    stamps (which alone decide what is up to date): when it is unreadable, say so and, with
    ``move``, move it aside and let doit start a new one, instead of doit's ``DatabaseException``
    traceback."""
    import sqlite3

    if not db.is_file():
        return True
    try:
        con = sqlite3.connect(f"file:{db.as_posix()}?mode=ro", uri=True)
        try:
            con.execute("SELECT name FROM sqlite_master LIMIT 1").fetchall()
        finally:
            con.close()
    except sqlite3.DatabaseError as e:
        if not move:
            return False
        aside = db.with_name(f"{db.name}.unreadable-{int(time.time())}")
        db.replace(aside)
        report.warn(
            f"{db}: unreadable ({e}); moved to {aside.name}, doit starts a new one "
            f"(the stamps in {db.parent / 'stamps'} still say what is up to date)"
        )
        return False
    return True
