"""bundlegraph on a Windows CPython (python.org's embeddable 3.12 under wine 8, :mod:`winekit`):
the plan-level commands a Windows x64 runner starts with, and the Windows-only code paths
(host detection, ``.exe`` resolution, ``cmd.exe`` and ``set`` output, case-insensitive
environment names, the vswhere lookup) on a real Windows runtime.

What does not run here, and why: a configure or build (no MSVC, no vswhere under wine); anything
whose stdout is a file (wine 8 aborts the program in ``init_sys_streams``, so every run pipes)."""

from __future__ import annotations

import json

import graphrun
import pytest
import winekit
from conftest import ROOT, require_input, require_tools

LEG = "windows-arm64-cuda13-portable"


@pytest.fixture(scope="module")
def win(tmp_path_factory):
    require_tools("wine")
    require_input(winekit.EMBED)
    import realinputs

    try:
        wp = winekit.windows_python(tmp_path_factory.mktemp("winpy"))
    except realinputs.MissingInput as e:
        pytest.fail(str(e), pytrace=False)
    yield wp
    winekit.stop(wp)


def _cli(win, args, tmp_path, **extra):
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    return win.run(
        ["-m", "bundlegraph.cli", "--bundles", winekit.winpath(ROOT / "bundles"), *args],
        cwd=tmp_path,
        BUNDLEGRAPH_WORKDIR=winekit.winpath(work),
        BUNDLEGRAPH_CACHE=winekit.winpath(tmp_path / "cache"),
        **extra,
    )


def test_matrix_on_windows_is_the_matrix_on_linux(win, tmp_path):
    r = _cli(win, ["matrix"], tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    linux = graphrun.cli(["matrix"], workdir=tmp_path / "linux")
    assert linux.returncode == 0, linux.stderr
    assert json.loads(r.stdout) == json.loads(linux.stdout)
    assert {x["id"] for x in json.loads(r.stdout)["include"]} >= {LEG, "windows-arm64-cpu"}


def test_plan_on_a_windows_x64_host_plans_the_arm64_cross_build_without_refusing_it(win, tmp_path):
    r = _cli(win, ["plan", LEG, "--json"], tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    leg = json.loads(r.stdout)["legs"][LEG]
    st = {s["task"]: s for s in leg["stages"]}[f"configure:{LEG}"]
    # this host is the leg's build machine: nothing is refused, as on Linux it is
    assert "on_this_host" not in st, st["on_this_host"]
    assert st["cuda_host_flags"]["-Xcompiler=/Zc:preprocessor"].startswith("bundlegraph-hooks.cmake")
    assert st["cuda_host_flags"]["-target-dir=arm64"].startswith("toolchain file: CMAKE_CUDA_FLAGS_INIT")
    # paths are the Windows runner's: the work directory on drive Z: (written with forward slashes,
    # which cmake and every Windows API take)
    work = winekit.winpath(tmp_path / "work").replace("\\", "/")
    assert st["toolchain_file_path"] == f"{work}/build/{LEG}/toolchain.cmake", st["toolchain_file_path"]
    linux = graphrun.cli(["plan", LEG, "--json"], workdir=tmp_path / "linux")
    lst = {s["task"]: s for s in json.loads(linux.stdout)["legs"][LEG]["stages"]}[f"configure:{LEG}"]
    assert lst["on_this_host"].startswith("refused before any download")  # the contrast


def test_plan_of_the_cpu_leg_and_doit_list_run_there(win, tmp_path):
    r = _cli(win, ["plan", "windows-arm64-cpu"], tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "== windows-arm64-cpu  ->  app-" in r.stdout and "toolchain clang-arm64-windows" in r.stdout
    work = tmp_path / "work"
    d = win.run(
        ["-m", "doit", "-f", winekit.winpath(ROOT / "dodo.py"), "list"],
        cwd=tmp_path,
        BUNDLEGRAPH_WORKDIR=winekit.winpath(work),
        BUNDLEGRAPH_CACHE=winekit.winpath(tmp_path / "cache"),
    )
    assert d.returncode == 0, d.stderr[-3000:]
    linux = graphrun.doit(["list"], workdir=tmp_path / "linux")
    assert linux.returncode == 0, linux.stderr
    names = lambda out: sorted(l.split()[0] for l in out.splitlines() if l.strip())
    assert names(d.stdout) == names(linux.stdout)


PROBE = r"""
import json, os, sys
from bundlegraph.core import proc
from bundlegraph.core.errors import BundleGraphError
from bundlegraph.toolchains import msvc
from bundlegraph.toolchains.base import this_host

out = {"os.name": os.name, "host": list(this_host())}
here = os.path.dirname(sys.executable)
out["which_python"] = proc.which("python", {"PATH": here})
out["which_python_mixed_case_path"] = proc.which("python", {"Path": here})
out["which_cmd"] = proc.which("cmd")
r = proc.run(["cmd.exe", "/d", "/c", "set"], capture=True, echo=False, env=dict(os.environ, BgProbeVar="x1"),
             what="cmd set")
env = msvc.parse_set_output(r.output)
out["set_has"] = {k: k in env for k in ("PATH", "PATHEXT", "BgProbeVar", "BGPROBEVAR")}
os.environ["VCToolsInstallDir"] = "C:\\fake\\"
out["environ_keys"] = [k for k in dict(os.environ) if k.upper() == "VCTOOLSINSTALLDIR"]
out["canonical"] = [k for k in msvc.canonical(dict(os.environ)) if k.upper() == "VCTOOLSINSTALLDIR"]
del os.environ["VCToolsInstallDir"]
try:
    msvc.developer_env("amd64_arm64")
    out["developer_env"] = "no error"
except BundleGraphError as e:
    out["developer_env"] = f"{type(e).__name__}: {e}"
from bundlegraph.core.oslock import FileLock, Timeout
a, b = FileLock("probe.lock"), FileLock("probe.lock")
a.acquire(timeout=0)
try:
    b.acquire(timeout=0.2)
    out["lock"] = "taken twice"
except Timeout:
    a.release()
    b.acquire(timeout=0)
    out["lock"] = "exclusive, then free" if b.is_locked else "not taken after release"
    b.release()
out["filelock_imported"] = "filelock" in sys.modules
print(json.dumps(out))
"""


def test_windows_code_paths_on_a_windows_runtime(win, tmp_path):
    r = win.run(["-c", PROBE], cwd=tmp_path)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    got = json.loads(r.stdout.strip().splitlines()[-1])
    assert got["os.name"] == "nt" and got["host"] == ["windows", "x64"]
    # the run lock and the cache locks are msvcrt.locking there: exclusive, released, no filelock
    assert got["lock"] == "exclusive, then free" and got["filelock_imported"] is False, got
    # .exe found from the bare name, on a PATH however its name is spelled
    assert got["which_python"].lower().endswith("\\python.exe"), got
    assert got["which_python_mixed_case_path"] == got["which_python"]
    assert got["which_cmd"].lower().endswith("cmd.exe"), got
    # cmd's `set` (what vcvarsall's capture parses) keeps the names' case; Windows' os.environ does not
    assert (
        got["set_has"] == {"PATH": True, "PATHEXT": True, "BgProbeVar": False, "BGPROBEVAR": True}
        or got["set_has"]["BgProbeVar"]
    ), got["set_has"]
    assert got["environ_keys"] == ["VCTOOLSINSTALLDIR"]  # why msvc.canonical exists
    assert got["canonical"] == ["VCToolsInstallDir"]
    # no developer shell and no Visual Studio: refused, naming where vswhere was looked for
    assert got["developer_env"].startswith(
        "ToolMissing: MSVC: no developer shell is initialised and vswhere.exe "
        "is not at C:\\Program Files (x86)\\Microsoft Visual Studio\\Installer"
    ), got


OBSERVE_PROBE = r"""
import json, os, shutil, sys, time
from pathlib import Path
from bundlegraph.graph import noop_memo, observe

here = Path.cwd()
f = here / "input.txt"
f.write_text("one")
(here / "d").mkdir()
(here / "d" / "e.txt").write_text("e")
old = 1_600_000_000
os.utime(f, (old, old))
with observe.Observer() as o:
    seen = {
        "pathlib_exists": f.exists(),
        "os_path_isfile": os.path.isfile(f),
        "os_path_exists_missing": os.path.exists(here / "missing.txt"),
        "read": f.read_text(),
        "which": (shutil.which("python", path=os.path.dirname(sys.executable)) or "").lower(),
        "scandir": sorted(e.name for e in os.scandir(here / "d")),
        "resolve": str((here / "d").resolve()),
    }
out = {"seen": seen, "kinds": sorted({k for k, _ in o.seen}), "spoiled": o.spoiled, "before": o.changed()}
out["missing_seen"] = o.seen.get(("stat", str(here / "missing.txt")), "not seen")
f.write_text("two")  # another size
(here / "missing.txt").write_text("now here")
(here / "d" / "new.txt").write_text("n")
out["after"] = sorted(o.changed())
out["run_key"] = len(noop_memo.run_key([], here / "dodo.py"))
print(json.dumps(out))
"""


def test_the_no_op_memos_observer_sees_windows_file_checks(win, tmp_path):
    """Windows' Python 3.12 answers ``os.path.exists``/``isfile`` in C (``nt._path_exists``),
    not through ``os.stat``: the observer wraps them too, so a change to what they checked is
    seen there (issue 53 item 5: a memo must never miss one)."""
    r = win.run(["-c", OBSERVE_PROBE], cwd=tmp_path)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    got = json.loads(r.stdout.strip().splitlines()[-1])
    assert got["seen"]["pathlib_exists"] and got["seen"]["os_path_isfile"] and got["seen"]["read"] == "one"
    assert got["seen"]["which"].endswith("python.exe") and got["seen"]["scandir"] == ["e.txt"]
    assert got["spoiled"] is None and got["before"] == [] and got["missing_seen"] is None, got
    assert {"stat", "scan"} <= set(got["kinds"]), got["kinds"]
    after = " ".join(got["after"])
    assert "input.txt" in after and "missing.txt" in after and any(a.startswith("scan ") for a in got["after"]), got
    assert got["run_key"] == 64
