"""Shared fixtures and the suite's skip policy.

- Every test gets its own ``BUNDLEGRAPH_WORKDIR``; the cache is shared (``BUNDLEGRAPH_CACHE`` or
  ``~/.cache/bundlegraph``) so large real inputs download once.
- Real inputs (NVIDIA's wheels, npm packages, the llama.cpp sdist) are fetched by the tests that
  need them (:mod:`realinputs`), pinned by sha256. Offline with an empty cache those tests
  *fail* saying what to fetch; they never skip.
- A test may skip only for what this host lacks and cannot get (an NVIDIA GPU, Windows, Linux,
  the CUDA toolkit in /usr/local/cuda): its reason starts with ``this host``. Any other skip
  turns the run red, and the run ends with the count of skips by reason.
- A CI runner's hand-off variables (``GITHUB_STEP_SUMMARY``, ``GITHUB_ACTIONS``, ...) are cleared
  for the whole run, so no test writes into the job's summary or annotations; a test that checks
  them sets them to its own file.
"""

from __future__ import annotations

import collections
import os
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

IS_LINUX = sys.platform.startswith("linux")
HOST_SKIP = "this host"
"""The prefix of every allowed skip reason (a real absence on this host)."""

CI_HANDOFF = (
    "GITHUB_ACTIONS",
    "GITHUB_STEP_SUMMARY",
    "GITHUB_OUTPUT",
    "GITHUB_ENV",
    "GITHUB_PATH",
    "GITHUB_STATE",
    "GITHUB_REF",
    "GITHUB_REF_NAME",
)
for _v in CI_HANDOFF:  # before any fixture or subprocess: module and session fixtures too
    os.environ.pop(_v, None)

# Debian packages ./dev.sh test installs, by program
DEBIAN = {
    "aarch64-linux-gnu-gcc": "g++-aarch64-linux-gnu",
    "aarch64-linux-gnu-g++": "g++-aarch64-linux-gnu",
    "gcc": "gcc",
    "cc": "gcc",
    "clang": "clang",
    "hipcc": "hipcc",
    "lld-link": "lld",
    "llvm-dlltool": "llvm",
    "osslsigncode": "osslsigncode",
    "openssl": "openssl",
    "npm": "npm",
    "wine": "wine64",
    "glslc": "glslc",
}


@pytest.fixture(autouse=True)
def _no_ci_handoff(monkeypatch):
    for v in CI_HANDOFF:
        monkeypatch.delenv(v, raising=False)


def _forbidden(what: str):
    def refuse(*a, **kw):
        raise AssertionError(f"a unit test may not {what}; move it to tests/integration")

    return refuse


@pytest.fixture(autouse=True)
def _unit_tests_start_no_process_and_open_no_connection(request, monkeypatch):
    """Under tests/unit: starting a process or opening a network connection fails loudly (a
    test that needs them belongs in tests/integration). One conftest for the whole suite: a
    second ``conftest.py`` would shadow this module's helpers for ``from conftest import``."""
    path = Path(str(request.node.path))
    if not path.is_relative_to(ROOT / "tests" / "unit"):
        return
    import socket
    import subprocess

    monkeypatch.setattr(subprocess.Popen, "__init__", _forbidden("start a process"))
    monkeypatch.setattr(socket.socket, "connect", _forbidden("open a network connection"))
    monkeypatch.setattr(socket, "create_connection", _forbidden("open a network connection"))


@pytest.fixture
def workdir(tmp_path, monkeypatch) -> Path:
    """A fresh work directory (build/, dist/, .bundlegraph/) for one test."""
    wd = tmp_path / "work"
    wd.mkdir()
    monkeypatch.setenv("BUNDLEGRAPH_WORKDIR", str(wd))
    for v in (
        "BUNDLEGRAPH_ONLY_PROFILE",
        "BUNDLEGRAPH_ONLY_LEG",
        "BUNDLEGRAPH_ARTIFACTS",
        "BUNDLEGRAPH_ARCHS",
        "BUNDLEGRAPH_TOOLKIT_SOURCE",
        "BUNDLEGRAPH_BUNDLES",
    ):
        monkeypatch.delenv(v, raising=False)
    return wd


@pytest.fixture
def bundles_copy(tmp_path) -> Path:
    """A private copy of the real bundles/ directory to edit."""
    dst = tmp_path / "bundles"
    shutil.copytree(ROOT / "bundles", dst)
    return dst


def require_input(name: str, unpack: bool = False):
    """The real input ``name`` (:mod:`realinputs`), fetched on a cold cache; fails the test
    (never skips) with what to fetch when it cannot be had."""
    import realinputs

    try:
        return realinputs.unpacked(name) if unpack else realinputs.get(name)
    except realinputs.MissingInput as e:
        missing = str(e)
    pytest.fail(missing, pytrace=False)


def npm_bins(name: str, sub: str) -> Path:
    """``package/bins/<sub>`` of the unpacked npm input ``name`` (where node-llama-cpp's
    prebuilt packages keep their binaries, e.g. ``npm-mac-x64`` -> ``mac-x64``), fetched as
    :func:`require_input` fetches."""
    return require_input(name, unpack=True) / "package" / "bins" / sub


@pytest.fixture
def real_input():
    """``real_input(name, unpack=False)`` -> the verified cached input (see :func:`require_input`)."""
    return require_input


def require_tools(*programs: str, linux_only: bool = True) -> None:
    """Fail the calling test unless every program is on PATH (``./dev.sh test`` installs them);
    on a host that is not Linux (where the Debian packages do not exist) skip instead."""
    from bundlegraph.core.proc import which

    if linux_only and not IS_LINUX:
        pytest.skip(f"{HOST_SKIP} is not Linux (needs {', '.join(programs)} from Debian)")
    missing = [p for p in programs if which(p) is None]
    if missing:
        pkgs = sorted({DEBIAN.get(p, p) for p in missing})
        pytest.fail(
            f"{', '.join(missing)} not installed: `apt-get install {' '.join(pkgs)}` (./dev.sh test does it)",
            pytrace=False,
        )


HOST_NVCC = Path("/usr/local/cuda/bin/nvcc")
needs_host_cuda = pytest.mark.cuda
"""A test that runs the host's nvcc (skipped where /usr/local/cuda has none: see the hook below)."""
linux_only = pytest.mark.skipif(not IS_LINUX, reason=f"{HOST_SKIP} is not Linux")


# -- markers derived from what a test uses ------------------------------------------------------
#
# Nobody writes `network` or `cuda` by hand (hand-written marks drifted: most tests that fetch
# real inputs had none). A test gets `network` when it, one of its fixtures, or a helper of the
# test modules they call reaches a fetch of a real input, and `cuda` when it reaches the host's
# nvcc. `-m "not network"` then really selects the tests that need no registry.

_FETCHERS = ("require_input", "real_input", "fetch_wheel", "install_vulkan_sdk", "require_deb")
"""Names whose use means a real input is fetched (tests/realinputs.py, tests/installerkit.py,
tests/integration/test_vulkan_sdk_debs.py, tests/debkit.py)."""
_HOST_CUDA = ("HOST_NVCC", "needs_host_cuda")
TESTS = Path(__file__).resolve().parent


def _reaches(fn, seen: set, within: Path) -> set[str]:
    """The global names ``fn`` uses, following the functions under ``within`` it calls (any depth)."""
    code = getattr(fn, "__code__", None)
    if code is None or fn in seen:
        return set()
    seen.add(fn)
    names: set[str] = set()
    stack = [code]
    while stack:
        c = stack.pop()
        names |= set(c.co_names)
        stack += [k for k in c.co_consts if hasattr(k, "co_names")]
    for n in list(names):
        g = getattr(fn, "__globals__", {}).get(n)
        src = getattr(getattr(g, "__code__", None), "co_filename", "")
        if src and Path(src).resolve().is_relative_to(within):
            names |= _reaches(g, seen, within)
    return names


def derived_marks(item, within: Path = TESTS) -> set[str]:
    """``network``/``cuda`` for one collected test, from its function, its fixtures' functions and
    the names they reach through functions defined under ``within`` (see above)."""
    seen: set = set()
    funcs = [getattr(item, "function", None)]
    info = getattr(item, "_fixtureinfo", None)
    for defs in info.name2fixturedefs.values() if info else ():
        funcs += [d.func for d in defs]
    names: set[str] = set(getattr(item, "fixturenames", ()))
    for f in funcs:
        names |= _reaches(f, seen, within)
    marks = set()
    if names & set(_FETCHERS):
        marks.add("network")
    if names & set(_HOST_CUDA) or item.get_closest_marker("cuda"):
        marks.add("cuda")
    return marks


def pytest_collection_modifyitems(config, items):
    for item in items:
        for m in sorted(derived_marks(item)):
            if not item.get_closest_marker(m):
                item.add_marker(m)
        if item.get_closest_marker("cuda") and not HOST_NVCC.is_file():
            item.add_marker(pytest.mark.skip(reason=f"{HOST_SKIP} has no CUDA toolkit at /usr/local/cuda"))


# -- skip policy --------------------------------------------------------------------------------

_skips: collections.Counter[str] = collections.Counter()


def _reason(report) -> str:
    lr = report.longrepr
    text = lr[2] if isinstance(lr, tuple) and len(lr) == 3 else str(lr)
    return text.removeprefix("Skipped: ")


_seconds: collections.Counter[str] = collections.Counter()


def _part(nodeid: str) -> str:
    if nodeid.startswith("tests/unit/"):
        return "unit"
    if "test_incremental.py" in nodeid:
        return "incremental (stand-in graph)"
    return "integration"


def pytest_runtest_logreport(report):
    _seconds[_part(report.nodeid)] += report.duration
    if report.skipped and not hasattr(report, "wasxfail"):
        _skips[_reason(report)] += 1


def _bad_skips() -> list[str]:
    return [r for r in _skips if not r.startswith(HOST_SKIP)]


def home_cache() -> Path:
    """The user's default bundlegraph cache (what ``BUNDLEGRAPH_CACHE`` unset would use)."""
    import platformdirs

    return Path(platformdirs.user_cache_dir("bundlegraph", appauthor=False)).expanduser().resolve()


def cache_listing(d: Path) -> dict[str, int]:
    """``{path: mtime_ns}`` of ``d`` and its entries two levels down: a file added or removed
    anywhere three levels down changes a listed directory's mtime (spec-cache/<entry>,
    blobs/sha256/<hex>, ...). Empty when ``d`` does not exist."""
    if not d.is_dir():
        return {}
    out = {".": d.stat().st_mtime_ns}
    for a in d.iterdir():
        out[a.name] = a.stat().st_mtime_ns
        if a.is_dir():
            for b in a.iterdir():
                out[f"{a.name}/{b.name}"] = b.stat().st_mtime_ns
    return out


_HOME = {}
"""With ``BUNDLEGRAPH_CACHE`` pointing elsewhere: the home cache and its listing at the start."""


_LITTER_EXEMPT = ("__pycache__/", ".pytest_cache/", ".mypy_cache/", ".ruff_cache/")
"""Paths a run may add to the checkout: Python's and the test, type and lint tools' own caches."""

_CHECKOUT: dict[str, set[str]] = {}
"""``git status`` of the checkout at the start (``before``) and what the run added (``littered``)."""


def checkout_status() -> set[str] | None:
    """The checkout's new files by ``git status --porcelain --ignored --untracked-files=all``
    (untracked and ignored, one by one; ``.venv`` and :data:`_LITTER_EXEMPT` left out), or None where this is
    no git checkout or git is missing. A test run must leave this set as it found it (issue 41:
    ``build/lib/`` of ``pip wheel <checkout>``, ``.bundlegraph/tool-versions.json`` of a test
    without a work directory)."""
    git = shutil.which("git")
    if git is None or not (ROOT / ".git").exists():
        return None
    import subprocess

    r = subprocess.run(
        [git, "-C", str(ROOT), "status", "--porcelain", "--ignored", "--untracked-files=all", "-z"]
        + ["--", ".", ":(exclude).venv"],
        capture_output=True,
        timeout=120,
    )
    if r.returncode != 0:
        return None
    entries = r.stdout.decode("utf-8", "surrogateescape").split("\0")
    # new files only (untracked ``??``, ignored ``!!``): a tracked file edited while the run goes on
    # is the developer's work, not the run's litter
    return {e for e in entries if e[:3] in ("?? ", "!! ") and not any(x in e for x in _LITTER_EXEMPT)}


def xdist_worker(config) -> str | None:
    """The pytest-xdist worker ``config`` is of (``gw0``, ``gw1``, ...), or None in the controller
    of a distributed run or in a run without workers (``-n 0``). The run-wide checks (the
    checkout, the home cache, the skip policy's exit status) belong to the controller: it sees
    every test's report and the whole run's start and end. (Not ``PYTEST_XDIST_WORKER``: a
    pytest that a test starts inherits it, and is no worker.)"""
    return getattr(config, "workerinput", {}).get("workerid")


def pytest_sessionstart(session):
    if xdist_worker(session.config):
        return
    before = checkout_status()
    if before is not None:
        _CHECKOUT["before"] = before
    own = os.environ.get("BUNDLEGRAPH_CACHE")
    if own and Path(own).expanduser().resolve() != home_cache():
        _HOME["dir"] = home_cache()
        _HOME["before"] = cache_listing(_HOME["dir"])


def home_cache_changes() -> list[str]:
    """What the run changed in the user's home cache although ``BUNDLEGRAPH_CACHE`` named another
    (issue 29: the act jobs wrote its spec cache); empty when unchanged or not watched."""
    if "dir" not in _HOME:
        return []
    after = cache_listing(_HOME["dir"])
    before = _HOME["before"]
    return sorted(
        f"{k} ({'new' if k not in before else 'gone' if k not in after else 'changed'})"
        for k in set(before) | set(after)
        if before.get(k) != after.get(k)
    )


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session, exitstatus):
    if xdist_worker(session.config):
        import realinputs

        # handed to the controller (pytest_testnodedown), which prints the run's total
        session.config.workeroutput["fetch_seconds"] = realinputs.FETCH_SECONDS[0]
        return
    if _bad_skips() and session.exitstatus in (0, 5):
        session.exitstatus = 1
    changed = home_cache_changes()
    if changed:
        _HOME["changed"] = changed
        if session.exitstatus in (0, 5):
            session.exitstatus = 1
    after = checkout_status() if "before" in _CHECKOUT else None
    if after is not None:
        _CHECKOUT["littered"] = after - _CHECKOUT["before"]
        if _CHECKOUT["littered"] and session.exitstatus in (0, 5):
            session.exitstatus = 1


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    """A pytest-xdist worker ended: add the seconds it spent fetching real inputs."""
    import realinputs

    realinputs.FETCH_SECONDS[0] += getattr(node, "workeroutput", {}).get("fetch_seconds", 0.0)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    import realinputs

    parts = ", ".join(f"{k} {v:.0f} s" for k, v in sorted(_seconds.items()))
    terminalreporter.write_line(
        f"time by part (the tests' own seconds, summed over the workers): {parts}; "
        f"of which fetching real inputs {realinputs.FETCH_SECONDS[0]:.0f} s"
    )
    if "dir" in _HOME:
        changed = _HOME.get("changed", [])
        terminalreporter.write_line(
            f"home cache {_HOME['dir']}: "
            + (
                "untouched (BUNDLEGRAPH_CACHE names another)"
                if not changed
                else f"FAILED: written although BUNDLEGRAPH_CACHE names another: {', '.join(changed[:10])}"
            ),
            red=bool(changed),
        )
    if "littered" in _CHECKOUT:
        littered = sorted(_CHECKOUT["littered"])
        terminalreporter.write_line(
            "checkout: as git status found it"
            if not littered
            else f"FAILED: the run left in the checkout (git status): {', '.join(littered[:10])}",
            red=bool(littered),
        )
    if not _skips:
        terminalreporter.write_line("skips by reason: none")
        return
    terminalreporter.section("skips by reason")
    for reason, n in _skips.most_common():
        terminalreporter.write_line(f"{n:4d}  {reason}")
    bad = _bad_skips()
    if bad:
        terminalreporter.write_line(
            f"FAILED: {len(bad)} skip reason(s) are not an absence on this host (a reason must start "
            f"with {HOST_SKIP!r}); a test must fetch what it needs or fail",
            red=True,
        )


# the stand-in release, built once per session (tests/releasekit.py)
@pytest.fixture(scope="session")
def release(tmp_path_factory, pytestconfig):
    """The stand-in release, built once through the real graph (doit, dodo.py).

    ``BUNDLEGRAPH_EXTRA_CONTRACT_RELEASE=<checkout>`` runs the same tests on a release built before,
    e.g. the main job's: ``<checkout>/bundles`` and ``<checkout>/dist`` (a work directory that
    is the checkout, as `./dev.sh main` leaves it)."""
    import installerkit
    import releasekit

    other = os.environ.get("BUNDLEGRAPH_EXTRA_CONTRACT_RELEASE")
    if other:
        rel = releasekit.Release(Path(other).resolve())
        if not (rel.dist / installerkit.INDEX_NAME).is_file():
            pytest.fail(
                f"BUNDLEGRAPH_EXTRA_CONTRACT_RELEASE={other}: no dist/{installerkit.INDEX_NAME} there", pytrace=False
            )
        return rel
    require_input("cuda-13.5-sbsa-cross")
    require_tools("aarch64-linux-gnu-gcc", "aarch64-linux-gnu-g++", "gcc", "g++")
    if xdist_worker(pytestconfig):
        # one build for every worker of the run: the first builds it under a lock in the run's
        # shared temp folder, the others wait and read it (the tests only read the release)
        from bundlegraph.core.fsutil import locked

        shared = tmp_path_factory.getbasetemp().parent
        rel = releasekit.Release(shared / "installer-contract")
        with locked(shared / "installer-contract.lock", what="the stand-in release"):
            if not (rel.root / ".built").is_file():
                shutil.rmtree(rel.root, ignore_errors=True)
                rel.root.mkdir()
                _build_release(rel)
                (rel.root / ".built").write_text("ok\n")
        return rel
    rel = releasekit.Release(tmp_path_factory.mktemp("installer-contract"))
    _build_release(rel)
    return rel


def _build_release(rel) -> None:
    """Build the stand-in release into ``rel.root`` (an empty folder) through the real graph."""
    import graphrun
    import installerkit

    DATA = ROOT / "tests" / "data"
    shutil.copytree(DATA / "minillama", rel.root / "minillama")
    shutil.copytree(DATA / "bundles", rel.bundles)
    shutil.copytree(ROOT / "bundles" / "locks", rel.bundles / "locks", dirs_exist_ok=True)
    rel.work.mkdir()
    r = graphrun.doit([], bundles=rel.bundles, workdir=rel.work, timeout=900)
    assert r.returncode == 0, r.stdout[-6000:] + r.stderr[-3000:]
    names = sorted(p.name for p in rel.dist.iterdir())
    assert len([n for n in names if n.startswith("app-") and n.endswith(".tar.gz")]) == 3, names
    # each bundle smoke-tested before the manifest, its result beside it
    assert len([n for n in names if n.endswith(".smoke.json")]) == 3, names
    assert {installerkit.MANIFEST_NAME, installerkit.INDEX_NAME} <= set(names), names
