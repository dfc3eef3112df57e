"""The suite's ``network``/``cuda`` marks are derived from what a test reaches (conftest), not
written by hand: a helper two calls away from a fetch still marks the test."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from conftest import HOST_NVCC, derived_marks, require_input

# the sample helpers are compiled as a module of another tree (SAMPLE_TREE), so the walk over this
# module's own tests does not follow them: these tests stay unmarked
_SAMPLE = """
def fetch_twice_removed():
    return helper()

def helper():
    return require_input("cudart-win-arm64")

def pure():
    return 1 + 1

def nvcc():
    return str(HOST_NVCC)
"""
_ns: dict = {"require_input": require_input, "HOST_NVCC": HOST_NVCC}
SAMPLE_TREE = Path("/sample-tests")
exec(compile(_SAMPLE, str(SAMPLE_TREE / "test_sample.py"), "exec"), _ns)
_fetch_twice_removed, _helper, _pure, _nvcc = (_ns[n] for n in ("fetch_twice_removed", "helper", "pure", "nvcc"))


def _item(fn, fixtures: dict | None = None) -> SimpleNamespace:
    defs = {k: [SimpleNamespace(func=f)] for k, f in (fixtures or {}).items()}
    return SimpleNamespace(
        function=fn,
        fixturenames=list(defs),
        _fixtureinfo=SimpleNamespace(name2fixturedefs=defs),
        get_closest_marker=lambda name: None,
    )


def test_a_fetch_reached_through_helpers_marks_network():
    assert derived_marks(_item(_fetch_twice_removed), SAMPLE_TREE) == {"network"}


def test_a_fixture_that_fetches_marks_its_users():
    assert derived_marks(_item(_pure, {"kit": _helper}), SAMPLE_TREE) == {"network"}
    assert derived_marks(_item(_pure, {"real_input": _pure}), SAMPLE_TREE) == {"network"}  # the fixture by name


def test_plain_tests_get_no_mark_and_nvcc_marks_cuda():
    assert derived_marks(_item(_pure), SAMPLE_TREE) == set()
    assert derived_marks(_item(_nvcc), SAMPLE_TREE) == {"cuda"}
