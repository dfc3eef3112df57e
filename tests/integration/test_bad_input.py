"""Bad input on the command line stops at once with one line and exit 2, nothing started (issue
17, running): an unknown doit variable, filters that select no leg."""

from __future__ import annotations

from pathlib import Path

import graphrun

ROOT = Path(__file__).resolve().parents[2]


def test_an_unknown_doit_variable_is_refused_not_ignored(tmp_path):
    for arg, hint in (("only-leg=linux-x64-cpu", "only_leg"), ("only_lg=linux-x64-cpu", "only_leg"),
                      ("build_target=ggml", "build_targets")):
        r = graphrun.doit([arg], bundles=ROOT / "bundles", workdir=tmp_path)
        assert r.returncode == 2, (arg, r.stdout[-2000:])
        assert f"{arg}: unknown doit variable '{arg.split('=')[0]}' (did you mean '{hint}'?)" in r.stderr, r.stderr
        assert graphrun.executed(r.stdout) == [] and not (tmp_path / "build").exists()


def test_filters_that_select_no_leg_are_refused_everywhere(tmp_path):
    r = graphrun.doit(["only_profile=cpu", "only_leg=windows-arm64-cuda13-portable"], bundles=ROOT / "bundles",
                      workdir=tmp_path)
    want = ("only_profile=cpu only_leg=windows-arm64-cuda13-portable: together they select no leg "
            "(the profile of windows-arm64-cuda13-portable is cuda13-portable)")
    assert r.returncode == 2 and want in r.stderr and "Traceback" not in r.stderr, r.stderr
    m = graphrun.cli(["matrix", "--only-profile", "cpu", "--only-leg", "windows-arm64-cuda13-portable"],
                     workdir=tmp_path)
    assert m.returncode != 0 and want in m.stderr and '"include": []' not in m.stdout, (m.stdout, m.stderr)
