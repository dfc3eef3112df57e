"""The one process runner: missing programs, failures with the log's tail, and no child
outliving an interrupted or killed parent (SIGINT, SIGTERM, SIGKILL)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from bundlegraph import proc
from bundlegraph.errors import ToolFailed, ToolMissing

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process-group checks are Linux-specific")


def test_missing_program_names_it():
    with pytest.raises(ToolMissing, match="configure: program 'no-such-compiler-x' was not found on the PATH"):
        proc.run(["no-such-compiler-x", "--version"], what="configure")


def test_failure_carries_exit_code_log_and_tail(tmp_path):
    log = tmp_path / "logs" / "build.log"
    with pytest.raises(ToolFailed) as ei:
        proc.run(["sh", "-c", "echo step-1; echo boom >&2; exit 7"], log=log, what="build")
    e = ei.value
    assert e.returncode == 7 and e.log == str(log)
    assert "build: command failed with exit code 7" in str(e) and "boom" in str(e)
    text = log.read_text()
    assert "step-1" in text and "boom" in text and "[exit 7]" in text


def test_on_line_and_secrets(tmp_path, capsys):
    seen = []
    proc.run(["sh", "-c", "echo '[1/3] a'; echo '[3/3] c'", "token-s3cret"], on_line=seen.append,
             secrets=["token-s3cret"])
    assert seen == ["[1/3] a", "[3/3] c"]
    out = capsys.readouterr().out
    assert "***" in out and "token-s3cret" not in out


def _alive(pattern: str) -> list[str]:
    """Live `sleep` processes whose command line is exactly ``pattern``."""
    r = subprocess.run(["pgrep", "-a", "-x", "sleep"], capture_output=True, text=True)
    return [l for l in r.stdout.splitlines() if l.split(" ", 1)[1] == pattern]


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL])
def test_no_grandchild_outlives_the_parent(sig, tmp_path):
    marker = f"{int(time.time() * 1000) % 100000 + 400000}"
    code = textwrap.dedent(f"""
        import signal, sys
        signal.signal(signal.SIGINT, signal.default_int_handler)
        from bundlegraph import proc
        proc.run(["sh", "-c", "sleep {marker} & sleep {marker}; wait"])
    """)
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 20
    while len(_alive(f"sleep {marker}")) < 2 and time.time() < deadline:
        time.sleep(0.1)
    assert len(_alive(f"sleep {marker}")) == 2
    os.kill(parent.pid, sig)
    parent.wait(10)
    deadline = time.time() + 10
    while _alive(f"sleep {marker}") and time.time() < deadline:
        time.sleep(0.1)
    assert _alive(f"sleep {marker}") == [], f"children outlived a {sig.name}"


def test_a_child_ignoring_sigterm_is_killed_after_the_grace_period(tmp_path):
    """The supervisor's SIGKILL escalation: a group member that traps SIGTERM still ends."""
    from bundlegraph import _supervise

    marker = f"{int(time.time() * 1000) % 100000 + 500000}"
    ready = tmp_path / "ready"
    script = f"trap '' TERM; touch {ready}; sleep {marker} & sleep {marker}; wait"
    sup = subprocess.Popen([sys.executable, "-m", "bundlegraph._supervise", "--", "sh", "-c", script])
    deadline = time.time() + 20
    while (not ready.exists() or len(_alive(f"sleep {marker}")) < 2) and time.time() < deadline:
        time.sleep(0.1)
    assert len(_alive(f"sleep {marker}")) == 2
    t0 = time.monotonic()
    sup.send_signal(signal.SIGTERM)
    rc = sup.wait(_supervise.KILL_AFTER_S + 10)
    assert time.monotonic() - t0 >= _supervise.KILL_AFTER_S - 0.5, "SIGKILL came before the grace period"
    assert rc == 128 + signal.SIGKILL, f"the trapping shell should end by SIGKILL, exit {rc}"
    deadline = time.time() + 10
    while _alive(f"sleep {marker}") and time.time() < deadline:
        time.sleep(0.1)
    assert _alive(f"sleep {marker}") == [], "a group member outlived SIGKILL"
