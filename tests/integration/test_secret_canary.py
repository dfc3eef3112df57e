"""No secret meets build code (issue 51, item 1): a canary build of the stand-in's x64 CPU leg.

The stand-in (``tests/data/minillama``) is changed the way an upstream commit or a pinned pull
request could change llama.cpp: a line of its ``CMakeLists.txt`` dumps cmake's environment at
configure time, a program it compiles runs during the build and dumps its own (the compilers
run with the very same environment: ninja starts both, ccache between ninja and the compiler adds
nothing to it), and ``libggml-base`` dumps the environment of every program that loads it, so
each program the smoke starts dumps its own. The test's environment holds canary values for every
secret a release job has or had: ``AZURE_*``, ``BUNDLEGRAPH_SIGN_*``, the remote compiler cache's
URL with its credential, ``GITHUB_TOKEN`` and the ``ACTIONS_*`` tokens. None may reach a dump,
nor any log, record or artifact of the work directory.

The remote cache is a real WebDAV server (:mod:`davkit`): the build must still write its
entries there, so ccache got the URL, through a channel the build code does not see.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import canarykit
import davkit
import graphrun
import pytest
from conftest import linux_only, require_tools

pytestmark = linux_only

LEG = "mini-linux-x64-cpu"

SECRETS = {
    "AZURE_CLIENT_ID": "canary-azure-client-id-5f1c",
    "AZURE_CLIENT_SECRET": "canary-azure-client-secret-9b2e",
    "AZURE_TENANT_ID": "canary-azure-tenant-7d3a",
    "BUNDLEGRAPH_SIGN_COMMAND": '["canary-signer-4e8f", "--secret", "{env:AZURE_CLIENT_SECRET}", "{file}"]',
    "BUNDLEGRAPH_SIGN_SECRETS": "AZURE_CLIENT_SECRET",
    "GITHUB_TOKEN": "canary-github-token-3c9d",
    "ACTIONS_RUNTIME_TOKEN": "canary-actions-runtime-8e4f",
    "ACTIONS_ID_TOKEN_REQUEST_TOKEN": "canary-id-token-2b7c",
    "ACTIONS_ID_TOKEN_REQUEST_URL": "https://canary.invalid/id-token?canary-id-url-6a1d",
    # the user's own variables: free for their scripts, so they may hold anything (buildenv.py)
    "BUNDLEGRAPH_EXTRA_DEPLOY_TOKEN": "canary-extra-deploy-token-7e2a",
}
CACHE_SECRET = "canary-cache-secret-1a6b"
REMOTE_FORMS = {
    "password": "http://canary-cache-user:{secret}@{host}/cache|layout=flat",
    # redis takes a password alone as the user part (ccache's HTTP storage refuses that form); no
    # redis server here: ccache counts a remote error per compile and compiles on
    "token-as-user": "redis://{secret}@127.0.0.1:9/0|connect-timeout=100",
    "bearer-token": "http://{host}/cache|layout=flat|bearer-token={secret}",
}
"""Forms of ccache's ``remote_storage`` that carry a credential (ccache's manual, "Remote storage
backends"), each with the canary secret in its place."""


def _canary_tree(root: Path, dumps: Path) -> tuple[Path, Path]:
    """The stand-in release under ``root`` with the canary lines in its ``CMakeLists.txt``."""
    bundles, work = graphrun.standin_tree(root)
    canarykit.plant(root / "minillama", dumps)
    return bundles, work


@pytest.mark.parametrize("form", sorted(REMOTE_FORMS))
def test_no_secret_reaches_cmake_a_built_program_a_smoke_program_or_a_file(tmp_path, form):
    """Each dump exists (the canary ran where build code runs) and holds no secret; the remote
    cache was written (ccache had its URL)."""
    require_tools("gcc")
    dumps = tmp_path / "dumps"
    dumps.mkdir()
    bundles, work = _canary_tree(tmp_path / "release", dumps)
    with davkit.webdav(tmp_path / "dav", "cache") as url:
        host = url.split("://", 1)[1]
        remote = REMOTE_FORMS[form].format(secret=CACHE_SECRET, host=host)
        values = {**SECRETS, "BUNDLEGRAPH_CACHE_REMOTE": remote, "the cache credential": CACHE_SECRET}
        r = graphrun.doit(
            [f"smoke:{LEG}"],
            bundles=bundles,
            workdir=work,
            timeout=900,
            BUNDLEGRAPH_ONLY_LEG=LEG,
            BUNDLEGRAPH_LAUNCHER="ccache",
            BUNDLEGRAPH_CACHE_REMOTE=remote,
            CCACHE_DIR=str(tmp_path / "ccache"),
            **SECRETS,
        )
        assert r.returncode == 0, r.stdout[-6000:] + r.stderr[-3000:]
    kinds = sorted({re.sub(r"(-\d+)?\.env$", "", f.name) for f in dumps.glob("*.env")})
    assert kinds == canarykit.DUMP_KINDS, kinds
    found = canarykit.findings(dumps, work, values)
    report = tmp_path / f"canary-findings-{form}.txt"
    report.write_text("".join(f"{line}\n" for line in found), encoding="utf-8")
    print(f"canary findings, remote storage form {form} ({len(found)}):", *found, sep="\n")
    assert not found, f"{len(found)} secrets reached build code or a file:\n" + "\n".join(found)
    # the residual risk, measured: the compilers' environment names ccache's private configuration
    # file (outside the work directory and the source tree), and the file is gone after the build
    conf = {
        line.partition("=")[2]
        for f in dumps.glob("build-program-*.env")
        for line in f.read_text(encoding="utf-8").splitlines()
        if line.startswith("CCACHE_CONFIGPATH=")
    }
    assert len(conf) == 1, conf
    path = Path(conf.pop())
    assert not path.is_relative_to(tmp_path / "release") and not path.exists(), path
    entries = [p for p in (tmp_path / "dav" / "cache").rglob("*") if p.is_file()]
    if form != "token-as-user":
        assert entries, "the remote compiler cache got no entry: ccache never saw its URL"
    assert os.environ.get("AZURE_CLIENT_SECRET") is None  # the canaries went to the child only
