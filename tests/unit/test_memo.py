"""One place for the process's memo tables (issue 30): every table registered, one clear() empties all."""

from __future__ import annotations

import pytest

from bundlegraph.core import memo


def test_every_process_cache_is_a_registered_memo_table_and_clear_empties_them(tmp_path, monkeypatch):
    import importlib

    from bundlegraph.core import paths

    for mod in (
        "bundlegraph.checks.signatures",
        "bundlegraph.graph.context",
        "bundlegraph.core.gpus",
        "bundlegraph.toolchains.msvc",
    ):
        importlib.import_module(mod)  # each module registers its tables on import

    assert {
        "paths.resolved",
        "fsutil.parsed",
        "fsutil.trees",
        "gpus.probed",
        "proc.which",
        "state.stamp_files",
        "tools.found",
        "tools.versions",
        "signatures.trust_store",
        "msvc.vcvars",
    } <= set(memo.names())
    monkeypatch.setenv("BUNDLEGRAPH_WORKDIR", str(tmp_path))
    paths.workdir()
    assert paths._RESOLVED
    memo.clear()
    assert not paths._RESOLVED
    paths.workdir()
    memo.clear("paths.resolved")
    assert not paths._RESOLVED
    with pytest.raises(ValueError, match="'paths.resolved' is registered already"):
        memo.table("paths.resolved")
    with pytest.raises(KeyError):
        memo.clear("no.such.table")
