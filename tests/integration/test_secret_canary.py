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
SECRET_PREFIXES = ("AZURE_", "BUNDLEGRAPH_SIGN_", "ACTIONS_", "BUNDLEGRAPH_CACHE_REMOTE")

CANARY_C = r"""
#include <stdio.h>
#include <unistd.h>
extern char ** environ;
static void canary_dump(const char * who) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s-%ld.env", CANARY_DIR, who, (long) getpid());
    FILE * f = fopen(path, "w");
    if (!f) return;
    for (char ** e = environ; *e; e++) fprintf(f, "%s\n", *e);
    fclose(f);
}
#ifdef CANARY_MAIN
int main(void) { canary_dump("build-program"); return 0; }
#else
__attribute__((constructor)) static void canary_loaded(void) { canary_dump("smoke-program"); }
#endif
"""


def _canary_tree(root: Path, dumps: Path) -> tuple[Path, Path]:
    """The stand-in release under ``root`` with the canary lines in its ``CMakeLists.txt``."""
    bundles, work = graphrun.standin_tree(root)
    src = root / "minillama"
    (src / "src" / "canary.c").write_text(CANARY_C, encoding="utf-8")
    d = dumps.as_posix()
    cmake = (src / "CMakeLists.txt").read_text(encoding="utf-8")
    cmake += f"""
# the canary (tests/integration/test_secret_canary.py): what build code sees
execute_process(COMMAND "${{CMAKE_COMMAND}}" -E environment OUTPUT_FILE "{d}/configure-cmake.env")
add_executable(canary-env src/canary.c)
set_target_properties(canary-env PROPERTIES RUNTIME_OUTPUT_DIRECTORY "${{CMAKE_BINARY_DIR}}/canary")
target_compile_definitions(canary-env PRIVATE CANARY_MAIN CANARY_DIR="{d}")
add_custom_command(OUTPUT "${{CMAKE_BINARY_DIR}}/canary/ran.txt"
    COMMAND canary-env
    COMMAND "${{CMAKE_COMMAND}}" -E touch "${{CMAKE_BINARY_DIR}}/canary/ran.txt"
    VERBATIM)
add_custom_target(canary ALL DEPENDS "${{CMAKE_BINARY_DIR}}/canary/ran.txt")
target_sources(ggml-base PRIVATE src/canary.c)
target_compile_definitions(ggml-base PRIVATE CANARY_DIR="{d}")
"""
    (src / "CMakeLists.txt").write_text(cmake, encoding="utf-8")
    return bundles, work


def _findings(dumps: Path, work: Path, values: dict[str, str]) -> list[str]:
    """One line per secret found: ``env <dump>: NAME=VALUE`` for a variable a dump holds that is
    a secret by name or by value, ``file <path>: NAME's value`` for a file of the work directory
    that holds a secret's value."""
    out = []
    for f in sorted(dumps.glob("*.env")):
        for line in f.read_text(encoding="utf-8", errors="replace").splitlines():
            name, _, value = line.partition("=")
            by_name = name in values or name.startswith(SECRET_PREFIXES)
            if by_name or any(v in value for v in values.values()):
                out.append(f"env  {f.name}: {line}")
    for f in sorted(p for p in work.rglob("*") if p.is_file() and p.stat().st_size < 64 << 20):
        data = f.read_bytes()
        out += [f"file {f.relative_to(work)}: {n}'s value" for n, v in values.items() if v.encode() in data]
    return out


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
    assert kinds == ["build-program", "configure-cmake", "smoke-program"], kinds
    found = _findings(dumps, work, values)
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
