"""Settings: every BUNDLEGRAPH_* variable the code reads is in bundlegraph/core/settings.py, the
README's table is generated from it, and a bad value is one line naming the variable."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bundlegraph.core import settings
from bundlegraph.core.errors import SettingError

ROOT = Path(__file__).resolve().parents[2]


def test_readme_table_is_the_generated_one():
    text = (ROOT / "README.md").read_text(encoding="utf-8").replace("\r\n", "\n")
    start = text.index("<!-- settings table:")
    table = text[text.index("\n", start) + 1 : text.index("<!-- end of settings table -->")].strip()
    assert table == settings.markdown_table(), "regenerate the README table from settings.markdown_table()"


def test_every_variable_the_code_names_is_a_setting():
    named = set()
    for f in (ROOT / "bundlegraph").rglob("*.py"):
        named |= set(re.findall(r"BUNDLEGRAPH_([A-Z][A-Z_]*[A-Z])", f.read_text(encoding="utf-8")))
    named -= {"EXTRA"}  # the pass-through prefix (settings.PASS_PREFIX), no variable
    # BUNDLEGRAPH_FINGERPRINT is a CMake cache entry (the release's fingerprint), not an environment variable
    named -= {"FINGERPRINT"}
    known = {s.name for s in settings.SETTINGS}
    assert named <= known, f"undocumented: {sorted(named - known)}"
    assert known <= named | {"DOWNLOAD_JOBS"}, f"documented but never read: {sorted(known - named)}"


@pytest.mark.parametrize(
    "var,value,expected",
    [
        ("LOCK_WAIT", "abc", "BUNDLEGRAPH_LOCK_WAIT='abc': expected a number of seconds >= 0"),
        ("RETRIES", "x", "BUNDLEGRAPH_RETRIES='x': expected an integer >= 0"),
        ("CONNECT_TIMEOUT", "x", "BUNDLEGRAPH_CONNECT_TIMEOUT='x': expected a number of seconds >= 0.1"),
        ("JOBS", "0", "BUNDLEGRAPH_JOBS='0': expected an integer >= 1"),
        ("LAUNCHER", "distcc", "BUNDLEGRAPH_LAUNCHER='distcc': expected one of ccache, sccache, none"),
        ("ALLOW_HTTP", "yes", "BUNDLEGRAPH_ALLOW_HTTP='yes': expected 1 or 0"),
    ],
)
def test_a_bad_value_is_one_line_naming_the_variable(var, value, expected):
    with pytest.raises(SettingError) as e:
        settings.get(var, {f"BUNDLEGRAPH_{var}": value})
    assert str(e.value).startswith(expected) and "\n" not in str(e.value)


def test_typed_values_and_defaults():
    env = {"BUNDLEGRAPH_LOCK_WAIT": "2.5", "BUNDLEGRAPH_JOBS": "3", "BUNDLEGRAPH_BUILD_TARGETS": "a, b;c"}
    assert settings.get("LOCK_WAIT", env) == 2.5 and settings.get("JOBS", env) == 3
    assert settings.get("BUILD_TARGETS", env) == ["a", "b", "c"]
    assert settings.get("RETRIES", {}) == 4 and settings.get("DOWNLOAD_JOBS", {}) == 3
    assert settings.get("JOBS", {}) is None and settings.get("ALLOW_HTTP", {}) is False
    # build jobs and download parallelism are separate
    assert settings.get("DOWNLOAD_JOBS", {"BUNDLEGRAPH_JOBS": "1"}) == 3


def test_a_run_is_refused_at_once_listing_every_bad_value():
    from bundlegraph.core.errors import SettingError
    from bundlegraph.core.settings import check_environment

    check_environment({"BUNDLEGRAPH_JOBS": "4", "BUNDLEGRAPH_TOOLS": "system", "BUNDLEGRAPH_EXTRA_MINE": "x"})
    with pytest.raises(SettingError) as e:
        check_environment({"BUNDLEGRAPH_JOBS": "0", "BUNDLEGRAPH_TOOLS": "foo", "BUNDLEGRAPH_DOWNLOAD_JOBS": "abc"})
    msg = str(e.value)
    assert "BUNDLEGRAPH_JOBS='0': expected an integer >= 1" in msg and "BUNDLEGRAPH_TOOLS='foo': expected one of" in msg
    assert "BUNDLEGRAPH_DOWNLOAD_JOBS='abc'" in msg


def test_an_unknown_BUNDLEGRAPH_name_is_refused_with_the_closest_known_one():
    """Issue 29: ``BUNDLEGRAPH_ONLY_LEGS`` (a typo of ``BUNDLEGRAPH_ONLY_LEG``) was ignored, so a
    bare ``doit`` would have started the whole main job."""
    from bundlegraph.core.errors import SettingError
    from bundlegraph.core.settings import check_environment

    with pytest.raises(SettingError) as e:
        check_environment({"BUNDLEGRAPH_ONLY_LEGS": "linux-arm64-cpu", "BUNDLEGRAPH_JOBS": "4"})
    msg = str(e.value)
    lines = msg.splitlines()
    assert lines[0] == "BUNDLEGRAPH_ONLY_LEGS: unknown variable (did you mean BUNDLEGRAPH_ONLY_LEG?)"
    assert lines[-1].startswith("known: BUNDLEGRAPH_WORKDIR, ") and "BUNDLEGRAPH_ONLY_PROFILE" in lines[-1]
    assert lines[-1].endswith("names under BUNDLEGRAPH_EXTRA_ pass through unread")
    with pytest.raises(SettingError) as e:
        check_environment({"BUNDLEGRAPH_UNRELATED": "x", "BUNDLEGRAPH_JOBS": "0"})
    lines = str(e.value).splitlines()
    assert lines[0] == "BUNDLEGRAPH_UNRELATED: unknown variable" and lines[1].startswith("known: ")
    assert lines[2].startswith("BUNDLEGRAPH_JOBS='0': expected an integer >= 1")
    check_environment({"BUNDLEGRAPH_EXTRA_ANYTHING": "x", "OTHER_VARIABLE": "y"})


def test_a_cache_or_work_directory_that_names_a_file_is_refused_in_one_line(tmp_path):
    """``BUNDLEGRAPH_CACHE`` naming a file (or a path under one) stops the run before anything
    starts, naming the variable and the file (issue 51: a NotADirectoryError traceback in
    ``configure:`` before); a directory, or one still to be made, passes."""
    f = tmp_path / "cache.txt"
    f.write_text("not a directory\n", encoding="utf-8")
    for var, value, where in (
        ("BUNDLEGRAPH_CACHE", f, f"{f} is a file"),
        ("BUNDLEGRAPH_CACHE", f / "sub", f"its parent {f} is a file"),
        ("BUNDLEGRAPH_WORKDIR", f, f"{f} is a file"),
    ):
        with pytest.raises(SettingError) as e:
            settings.check_environment({var: str(value)})
        assert str(e.value) == (
            f"{var}={str(value)!r}: not a directory ({where}); expected a directory (created when missing) "
            f"({settings.setting(var).doc})"
        )
    settings.check_environment({"BUNDLEGRAPH_CACHE": str(tmp_path), "BUNDLEGRAPH_WORKDIR": str(tmp_path / "new" / "w")})
