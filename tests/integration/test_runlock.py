"""Two doit runs at once: the second stops with a clear message; read-only commands work."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from graphrun import doit


def hold_lock(workdir):
    code = textwrap.dedent(f"""
        import os, sys, time
        os.environ["BUNDLEGRAPH_WORKDIR"] = {str(workdir)!r}
        from bundlegraph.core.runlock import acquire
        acquire("run")
        print("locked", flush=True)
        time.sleep(60)
    """)
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "locked"
    return p


def test_second_run_stops_with_message_and_list_still_works(workdir):
    holder = hold_lock(workdir)
    try:
        r = doit(["source:linux-arm64-cpu"], workdir=workdir)
        assert r.returncode == 2
        assert f"another doit run (pid {holder.pid}, started " in r.stderr
        assert "BUNDLEGRAPH_LOCK_WAIT" in r.stderr
        assert not (workdir / "build").exists()
        lst = doit(["list"], workdir=workdir)
        assert lst.returncode == 0 and "source:linux-arm64-cpu" in lst.stdout
    finally:
        holder.kill()
        holder.wait()
    # the OS released the lock with the killed holder: runs proceed again
    again = doit(["forget", "source:linux-arm64-cpu"], workdir=workdir)  # takes the lock
    assert again.returncode == 0, again.stderr
