"""Exit statuses by error class (issue 30): user error 2, refused input 3, tool failed 4, bug 70."""

from __future__ import annotations

import pytest

from bundlegraph import cli
from bundlegraph.core import errors


@pytest.mark.parametrize(
    "error,code",
    [
        (errors.SpecError(["a.toml: x: bad"]), 2),
        (errors.SettingError("BUNDLEGRAPH_JOBS='0'"), 2),
        (errors.StateError("held"), 2),
        (errors.BundleGraphError("no task"), 2),
        (errors.HashMismatch("sha256 differs"), 3),
        (errors.UnsafeArchive("../x"), 3),
        (errors.VerifyError(["machine"]), 3),
        (errors.HostMismatch("needs windows"), 3),
        (errors.ToolFailed("cmake exited 1"), 4),
        (errors.ToolMissing("no nvcc"), 4),
        (errors.DownloadError("HTTP 503"), 4),
        (errors.ToolkitError("lacks cublas"), 4),
        (RuntimeError("oops"), 70),
        (KeyError("x"), 70),
    ],
)
def test_each_error_class_has_its_exit_status(error, code):
    assert errors.exit_code(error) == code


def test_the_command_returns_the_class_status_and_says_a_bug_is_one(monkeypatch, capsys):
    from bundlegraph.commands import fatbin

    def refused(args):
        raise errors.HashMismatch("x.whl: sha256 abc, expected def")

    def bug(args):
        raise ZeroDivisionError("division by zero")

    monkeypatch.setattr(fatbin, "run", refused)
    assert cli.main(["fatbin", "x"]) == 3
    assert "bundlegraph: x.whl: sha256 abc, expected def" in capsys.readouterr().err
    monkeypatch.setattr(fatbin, "run", bug)
    assert cli.main(["fatbin", "x"]) == 70
    err = capsys.readouterr().err
    assert "Traceback" in err and "this is a bug in bundlegraph (ZeroDivisionError)" in err
