"""The environment the act tests run act in (issue 29, item 8): the test run's cache goes with it."""

from __future__ import annotations

from actkit import act_process_env


def test_act_keeps_the_test_runs_cache_and_drops_the_rest_of_bundlegraphs_settings():
    env = act_process_env(
        {
            "BUNDLEGRAPH_CACHE": "/c",
            "BUNDLEGRAPH_JOBS": "3",
            "BUNDLEGRAPH_ONLY_LEG": "x",
            "GITHUB_ACTIONS": "true",
            "RUNNER_TEMP": "/t",
            "PATH": "/bin",
            "HOME": "/h",
        }
    )
    assert env == {"BUNDLEGRAPH_CACHE": "/c", "PATH": "/bin", "HOME": "/h"}


def test_the_home_cache_listing_sees_a_file_added_three_levels_down(tmp_path):
    from conftest import cache_listing

    (tmp_path / "spec-cache").mkdir()
    before = cache_listing(tmp_path)
    (tmp_path / "spec-cache" / "entry.pickle").write_bytes(b"x")
    after = cache_listing(tmp_path)
    assert set(after) - set(before) == {"spec-cache/entry.pickle"}
    assert cache_listing(tmp_path / "absent") == {}
