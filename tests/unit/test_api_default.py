"""The commands that talk to GitHub use GitHub's API when BUNDLEGRAPH_GITHUB_API is not set (the
setting has no default of its own: each caller falls back to github_release.DEFAULT_API)."""

from __future__ import annotations

from bundlegraph.commands import operations
from bundlegraph.release.github_release import DEFAULT_API


def test_the_operations_default_to_githubs_api(monkeypatch):
    monkeypatch.delenv("BUNDLEGRAPH_GITHUB_API", raising=False)
    gh = operations._gh("owner/repo")
    try:
        assert gh.api == DEFAULT_API.rstrip("/") and gh.repo == "owner/repo"
    finally:
        gh.c.close()
    monkeypatch.setenv("BUNDLEGRAPH_GITHUB_API", "http://127.0.0.1:9/")
    gh = operations._gh("owner/repo")
    try:
        assert gh.api == "http://127.0.0.1:9"
    finally:
        gh.c.close()
