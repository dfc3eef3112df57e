"""The workflows, run for real under act.

.github/workflows/release.yml on the stand-in release: plan -> the two
base legs on their own "runners" and, at the same time, the CUDA leg's two shards (its spec says
``shards = 2``: each compiles half of its objects into ccache and uploads the entries it added)
-> the CUDA leg's own job merges the shards' entries, links from cache hits (0 misses) and merges
into the base bundle it downloads as an artifact -> manifest + coverage gate -> the release
artifact -> the upload to a GitHub releases API on 127.0.0.1 (a tag push). The CUDA bundle it
publishes is byte-identical to an unsharded local build's. A second run, with one shard's source
broken, fails that shard and publishes nothing. The workflow file is used as it is; actions that
cannot be fetched here are the stand-ins of ``tests/act/`` (:mod:`actkit`).

The stand-in's Windows legs (``tests/data/windows-legs``: ARM64 CPU + CUDA, ``compile_runner =
"windows-2022"``) ride along: act cannot run the workflow's ``compile`` job on a Windows runner,
so the test keeps only the rows of the ubuntu runner (act's ``--matrix runner:ubuntu-24.04``)
and puts what the Windows rows upload (artifacts ``built-<leg>``: :mod:`winbuild`'s real ARM64
files) into act's artifact store, and the legs' own jobs import it (``built=built``), install
the CUDA 13.4 toolkit from a Windows redist pool on 127.0.0.1 (:mod:`winredist`), sign with
osslsigncode (a throwaway CA, the workflow's ``BUNDLEGRAPH_SIGN_COMMAND`` secret), merge and
package; the SHA index hashes the paired runtime from the upstream release (served on
127.0.0.1 too).

.github/workflows/tests.yml, its Linux job, dispatched with ``pytest-args`` selecting the unit
tests (never these act tests: no recursion)."""

from __future__ import annotations

import hashlib
import io
import json
import re
import shutil
import subprocess
import tarfile
import tomllib
import zipfile
from pathlib import Path

import actkit
import binkit
import canarykit
import graphrun
import pytest
import winbuild
import winredist
from bundlekit import npm_bins
from conftest import linux_only, require_input, require_tools
from githubkit import FakeGitHub
from redistserver import RedistServer

from bundlegraph.toolchains.compiler import compiler_of
from bundlegraph.toolchains.registry import TOOLCHAINS

INDEX = "llama-prebuilt-sha256.json"
MANIFEST = "llama-prebuilt-manifest.json"
PROVENANCE = "llama-prebuilt-provenance.json"
SIGSTORE = "llama-prebuilt-attestation.sigstore.json"
"""The attestation's Sigstore bundle the publish job adds to the release (issue 51)."""

pytestmark = linux_only


def _artifact_files(store: Path, name: str) -> dict[str, bytes]:
    """The files of artifact ``name`` in act's artifact store (one zip per v4 artifact)."""
    zips = sorted(
        p
        for p in store.rglob("*")
        if (p.is_file() and name in p.relative_to(store).parts[:3]) or p.name in (f"{name}.zip",)
    )
    assert zips, f"no artifact {name} in {store}: {[str(p.relative_to(store)) for p in store.rglob('*')]}"
    out: dict[str, bytes] = {}
    for z in zips:
        with zipfile.ZipFile(z) as f:
            out |= {i.filename: f.read(i) for i in f.infolist() if not i.is_dir()}
    return out


CANARY_SECRETS = {
    "AZURE_CLIENT_ID": "canary-azure-client-id-5f1c",
    "AZURE_CLIENT_SECRET": "canary-azure-client-secret-9b2e",
    "AZURE_TENANT_ID": "canary-azure-tenant-7d3a",
    "BUNDLEGRAPH_SIGN_SECRETS": "AZURE_CLIENT_SECRET",
}
"""The release's signing secrets, canary values (``secrets.*`` in release.yml's sign job)."""
CANARY_ENV = {
    "AZURE_CLIENT_SECRET": CANARY_SECRETS["AZURE_CLIENT_SECRET"],
    "ACTIONS_ID_TOKEN_REQUEST_TOKEN": "canary-id-token-2b7c",
    "ACTIONS_ID_TOKEN_REQUEST_URL": "https://canary.invalid/id-token?canary-id-url-6a1d",
}
"""Secrets in *every* step's environment (``act --env``), as a workflow that set them at its top
or a runner that exports them would: bundlegraph's allow-list, not only the workflow, keeps them
from build code."""


def _release_run(
    root: Path,
    *,
    windows_legs: bool,
    broken: str | None = None,
    extra_env: dict[str, str] | None = None,
    canary: Path | None = None,
    one_leg: str | None = None,
) -> dict:
    """release.yml under act over a stand-in repository in ``root`` (a tag push); ``broken``: a
    source file of the stand-in whose compile must fail (a line of ``#error`` appended);
    ``extra_env``: more variables for every step (``ACT_ATTEST_FAIL``: the attest stand-in fails);
    ``canary``: a folder for the secret canary's dumps (:mod:`canarykit` planted in the stand-in,
    :data:`CANARY_SECRETS` set as act secrets); ``one_leg``: the release cut to that leg
    (:func:`actkit.keep_only_leg`: a run about the jobs after the compiles needs only one)."""
    repo = actkit.standin_repo(root / "repo", windows_legs=windows_legs)
    if one_leg:
        actkit.keep_only_leg(repo, one_leg)
    if canary:
        canary.mkdir(parents=True, exist_ok=True)
        canarykit.plant(repo / "minillama", canary)
        subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
        subprocess.run(["git", "-C", str(repo), "commit", "-qm", "upstream dumps what build code sees"], check=True)
    if broken:
        src = repo / "minillama" / broken
        src.write_text(src.read_text() + "\n#error deliberately broken by the test\n")
        subprocess.run(["git", "-C", str(repo), "commit", "-qam", "break one shard's source"], check=True)
    rel = tomllib.loads((repo / "bundles" / "release.toml").read_text())
    tag = rel["tag"]
    store = root / "artifacts"
    if windows_legs:  # what the Windows compile rows would upload (act runs only the ubuntu rows)
        built = root / "built"
        x64_bins = next((require_input("npm-win-x64-cuda", unpack=True) / "package" / "bins").iterdir())
        actkit.seed_artifact(
            store, "built-mini-windows-arm64-cpu", winbuild.cpu_tree(built / "cpu", npm_bins(require_input))
        )
        actkit.seed_artifact(
            store, "built-mini-windows-arm64-cuda", winbuild.cuda_tree(built / "cuda", x64_bins / "ggml-cuda.dll")
        )
    (root / "upstream").mkdir()
    paired = winredist.paired_runtime_zip(root / "upstream", "arm64")
    ca = binkit.make_ca(root / "ca")
    sign = [
        "osslsigncode",
        "sign",
        "-certs",
        str(ca.leaf_pem),
        "-key",
        str(ca.leaf_key),
        "-h",
        "sha256",
        "-in",
        "{file}",
        "-out",
        "{out}",
    ]
    with FakeGitHub(actkit.REPO, token="act-t0ken") as gh, RedistServer() as pool:
        pool.files.update(winredist.windows_pool(("windows-arm64",)))
        if windows_legs:  # the stand-in pool's manifest pinned as a maintainer pins NVIDIA's (issue 51)
            pin = graphrun.cli(
                ["lock-redist"], bundles=repo / "bundles", workdir=root, BUNDLEGRAPH_REDIST_URL=pool.url("/")
            )
            assert pin.returncode == 0, pin.stdout + pin.stderr
            subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
            subprocess.run(["git", "-C", str(repo), "commit", "-qm", "pin the redist manifest"], check=True)
        gh.publish_upstream(rel["source_repo"], rel["paired_runtime_tag"], {paired.name: paired.read_bytes()})
        r, seconds = actkit.run_act(
            repo,
            ".github/workflows/release.yml",
            event="push",
            event_json={"ref": f"refs/tags/{tag}", "ref_name": tag, "repository": {"full_name": actkit.REPO}},
            artifacts=store,
            secrets={
                "GITHUB_TOKEN": "act-t0ken",
                "BUNDLEGRAPH_SIGN_COMMAND": json.dumps(sign),
                **(CANARY_SECRETS if canary else {}),
            },
            matrix=("runner:ubuntu-24.04",),
            env={
                "BUNDLEGRAPH_EXTRA_ACT_PYTHON": actkit.base_python(),
                "BUNDLEGRAPH_EXTRA_ACT_WHEELS": str(actkit.wheelhouse()),
                "BUNDLEGRAPH_GITHUB_API": gh.api,
                "BUNDLEGRAPH_CACHE": str(actkit.shared_cache()),
                "BUNDLEGRAPH_REDIST_URL": pool.url("/"),
                "BUNDLEGRAPH_TRUST_ROOTS": str(ca.root_pem),
                **(CANARY_ENV if canary else {}),
                **(extra_env or {}),
            },
        )
        log = root / "act.log"
        log.write_text(r.stdout + r.stderr)
        published = gh.release(tag)
        calls = list(gh.calls)
    return {
        "repo": repo,
        "store": store,
        "tag": tag,
        "out": r.stdout + r.stderr,
        "seconds": seconds,
        "rc": r.returncode,
        "log": log,
        "published": published,
        "calls": calls,
        "paired": paired,
        "canary": canary,
    }


def _tools() -> None:
    require_tools("aarch64-linux-gnu-gcc", "aarch64-linux-gnu-g++", "gcc", "g++", "npm", "git", "jq", "flock")
    require_tools("clang", "lld-link", "llvm-dlltool", "osslsigncode", "openssl")
    require_input("cuda-13.5-sbsa-cross")  # warms the toolkit blobs the CUDA leg's job installs


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    _tools()
    root = tmp_path_factory.mktemp("act-release")
    r = _release_run(root, windows_legs=True, canary=root / "canary")
    assert r["rc"] == 0, f"act failed after {r['seconds']:.0f} s (log {r['log']}):\n" + r["out"][-8000:]
    return r


def _job_lines(out: str, job: str) -> str:
    """The lines act printed for the rows of ``job`` (``[release/<job> <row>...]``)."""
    return "\n".join(l for l in out.splitlines() if l.startswith(f"[release/{job}"))


def test_every_job_ran_in_its_wave_on_its_own_runner(run):
    out = run["out"]
    for job in (
        "plan",
        "compile mini-linux-arm64-cuda shard 1/2",
        "compile mini-linux-arm64-cuda shard 2/2",
        "base mini-linux-arm64-cpu",
        "base mini-linux-x64-cpu",
        "base mini-windows-arm64-cpu",
        "backend mini-linux-arm64-cuda",
        "backend mini-windows-arm64-cuda",
        "sign",
        "manifest",
        "attest",
        "publish",
    ):
        assert f"[release/{job}" in out, job
    assert "Job succeeded" in out and "Job failed" not in out
    # the Windows legs' compile rows are a Windows runner's: act ran only the ubuntu rows, and
    # their own jobs imported what those rows upload (seeded)
    assert "[release/compile mini-windows" not in out
    # the shards started with the base legs, not after them: the CUDA leg's compile is in the first wave
    first_shard = out.index("[release/compile mini-linux-arm64-cuda shard")
    assert first_shard < out.index("build:mini-linux-arm64-cpu: targets"), "a shard waited for a base leg"
    print(f"act ran release.yml in {run['seconds']:.0f} s")


def test_no_secret_of_the_release_reached_build_code_a_smoke_or_an_artifact(run):
    """The secret canary under act (issue 51, item 1): the release's signing secrets and the
    GitHub token are set as the workflow sets them, and a signing secret and the OIDC token
    request's token and URL in every step (:data:`CANARY_ENV`); cmake, a program the build
    runs and every smoke program dumped their environment (each Linux leg's compile and smoke
    ran the canary) and no dump, file of the artifact store or line of act's log holds a secret.
    (The remote compiler cache's URL, in each form ccache takes, is the local canary's:
    tests/integration/test_secret_canary.py; a release run with remote storage changes which
    steps run, see the ccache test below.)"""
    dumps = run["canary"]
    kinds = sorted({re.sub(r"(-\d+)?\.env$", "", f.name) for f in dumps.glob("*.env")})
    assert kinds == canarykit.DUMP_KINDS, kinds
    count = {k: sum(1 for f in dumps.glob(f"{k}-*.env")) for k in kinds}
    # three Linux legs and two shards configure; the x64 leg runs the build program; the smoke
    # of each Linux leg (the arm64 ones under qemu) loads libggml-base
    assert count["configure-cmake"] >= 5 and count["smoke-program"] >= 3, count
    values = {**CANARY_SECRETS, **CANARY_ENV, "GITHUB_TOKEN": "act-t0ken"}
    found = canarykit.findings(dumps, run["store"], values)
    for zipped in sorted(run["store"].rglob("*.zip")):  # the artifacts, as uploaded
        with zipfile.ZipFile(zipped) as z:
            for i in z.infolist():
                data = z.read(i)
                found += [
                    f"artifact {zipped.name}:{i.filename}: {n}'s value" for n, v in values.items() if v.encode() in data
                ]
    found += [f"act log: {n}'s value" for n, v in values.items() if v in run["out"] and n != "BUNDLEGRAPH_SIGN_SECRETS"]
    print(f"canary findings under act ({len(found)}):", *found, sep="\n")
    assert not found, f"{len(found)} secrets reached build code, an artifact or the log:\n" + "\n".join(found)


SHARD_STEPS = {1: 3, 2: 2}
"""Compile steps of each shard of the CUDA leg: the stand-in's four and the secret canary's
``canary.c`` in ``ggml-base`` (the canary's build program is no cross build's)."""


def test_the_shards_compiled_half_each_and_the_final_compile_missed_nothing(run):
    out = run["out"]
    total = sum(SHARD_STEPS.values())
    for i, n in SHARD_STEPS.items():
        lines = _job_lines(out, f"compile mini-linux-arm64-cuda shard {i}/2")
        assert re.search(rf"build:mini-linux-arm64-cuda: shard {i}/2: {n} of {total} compile steps", lines), lines[
            -3000:
        ]
        assert "links nothing" in lines and "Linking" not in lines
        assert re.search(rf"shard {i}/2 compiled {n} object\(s\) in [\d.]+s; [1-9]\d* cache entries", lines), lines[
            -3000:
        ]
        files = _artifact_files(run["store"], f"shard-mini-linux-arm64-cuda-{i}")
        shard = json.loads(files["shard.json"])
        assert shard["shard"] == f"{i}/2" and len(shard["objects"]) == n and shard["cache"]["misses"] == n
        assert any(n.startswith("ccache/") for n in files), sorted(files)
    final = _job_lines(out, "backend mini-linux-arm64-cuda")
    assert "shard-merge: mini-linux-arm64-cuda: 2 of 2 shards" in final, final[-3000:]
    assert re.search(
        rf"build:mini-linux-arm64-cuda: ccache 4\.14\.2: {total} hits \(0 remote, {total} local\), 0 misses", final
    )
    assert "the final compile of 2 shards found every compiled object in the cache" in final
    # the cost records the final compile measured go to the manifest job (artifact costs-<leg>);
    # the release saves no cache (only the default branch's warm-caches.yml does: test_cache_carry_under_act)
    record = json.loads(_artifact_files(run["store"], "costs-mini-linux-arm64-cuda")["mini-linux-arm64-cuda.json"])
    assert record["format"] == "bundlegraph-costs/1" and len(record["objects"]) == total, record
    assert actkit.cache_entries(run["repo"], f"refs/tags/{run['tag']}") == []
    manifest = _job_lines(out, "manifest")
    assert "critical path (*): plan ->" in manifest and "gantt" in manifest


def test_the_sharded_bundle_is_byte_identical_to_an_unsharded_build(run, tmp_path):
    """The CUDA bundle the release published (two shards, then a final compile of cache hits in
    another job) has the bytes of one unsharded local build of the same tree."""
    files = _artifact_files(run["store"], "release")
    name = next(n for n in files if n.endswith("-linux-arm64-cuda13-blackwell.tar.gz"))
    local = tmp_path / "local"
    shutil.copytree(run["repo"], local, ignore=shutil.ignore_patterns(".git"))
    r = graphrun.doit(
        ["package:mini-linux-arm64-cuda"],
        bundles=local / "bundles",
        workdir=local,
        timeout=900,
        CCACHE_DIR=str(tmp_path / "ccache"),
    )
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-3000:]
    assert "shard" not in "\n".join(graphrun.executed(r.stdout))
    assert hashlib.sha256((local / "dist" / name).read_bytes()).hexdigest() == hashlib.sha256(files[name]).hexdigest()


def test_a_failing_shard_stops_the_release_before_anything_is_published(tmp_path_factory):
    _tools()
    r = _release_run(tmp_path_factory.mktemp("act-broken-shard"), windows_legs=False, broken="src/ggml-cuda/scale.cu")
    out = r["out"]
    assert r["rc"] != 0, out[-4000:]
    # (act marks every row of a matrix job failed once one failed: the failing step tells them apart)
    failed = [
        i
        for i in (1, 2)
        if "Failure - Main compile mini-linux-arm64-cuda shard"
        in _job_lines(out, f"compile mini-linux-arm64-cuda shard {i}/2")
    ]
    assert len(failed) == 1, out[-6000:]
    assert "scale.cu" in _job_lines(out, f"compile mini-linux-arm64-cuda shard {failed[0]}/2")
    assert "[release/backend" not in out or "Job succeeded" not in _job_lines(out, "backend")
    assert "[release/manifest" not in out, "the manifest job ran after a failed shard"
    assert r["published"] is None and not [c for c in r["calls"] if c.startswith(("POST", "PATCH"))], r["calls"]


def test_a_failed_attestation_leaves_a_draft_and_publishes_nothing(tmp_path_factory):
    """The attest job fails (the stand-in is told to): the draft the manifest job uploaded stays
    a draft, whole, and the publish job does not run (issue 40, item 1)."""
    _tools()
    root = tmp_path_factory.mktemp("act-attest-fails")
    told = root / "attest-failed.txt"
    # one leg: what is tested happens after every compile (about half the time of three legs)
    r = _release_run(root, windows_legs=False, extra_env={"ACT_ATTEST_FAIL": str(told)}, one_leg="mini-linux-x64-cpu")
    out = r["out"]
    assert r["rc"] != 0, out[-4000:]
    # the stand-in's own word, from the file it wrote (act can drop a step's last log lines)
    assert told.is_file() and "failing as asked" in told.read_text(encoding="utf-8"), out[-6000:]
    assert "Job 'attest' failed" in out
    assert "[release/publish" not in out or "publish-release" not in _job_lines(out, "publish")
    rel = r["published"]
    assert rel is not None and rel.draft and rel.assets, r["calls"]
    assert not any(c.startswith("PATCH") for c in r["calls"]), r["calls"]


def test_each_linux_legs_build_used_ccache_and_the_release_saved_no_cache(run):
    """No remote storage is set here: the workflow restores ``CCACHE_DIR`` with the cache action
    (our stand-in) and never saves it (a release is no trusted writer of what the next one
    restores); each Linux compile went through ccache and the job printed its figures."""
    out = run["out"]
    for leg in ("mini-linux-arm64-cpu", "mini-linux-arm64-cuda", "mini-linux-x64-cpu"):
        assert re.search(rf"build:{leg}: ccache 4\.14\.2: \d+ hits \(0 remote, \d+ local\), [1-9]\d* misses", out), leg
    assert "cache stand-in: saved" not in out
    assert actkit.cache_entries(run["repo"], f"refs/tags/{run['tag']}") == []
    assert "local compiler cache (only without remote storage)" in out


def test_release_artifact_is_the_whole_verified_release(run):
    files = _artifact_files(run["store"], "release")
    index = json.loads(files[INDEX])
    manifest = json.loads(files[MANIFEST])
    bundles = sorted(n for n in files if n.startswith("app-") and not n.endswith(".smoke.json"))
    assert len(bundles) == 5, sorted(files)
    assert index["release_tag"] == manifest["release_tag"] == run["tag"]
    # the SHA index is the bytes: every listed asset present with that sha256 and size
    for name, e in index["artifacts"].items():
        if e["kind"] == "manifest":
            assert hashlib.sha256(files[MANIFEST]).hexdigest() == e["sha256"]
            continue
        if e["kind"] == "runtime":  # the upstream release's asset, hashed from there
            assert name == run["paired"].name and name not in files
            assert e["sha256"] == hashlib.sha256(run["paired"].read_bytes()).hexdigest()
            continue
        assert name in files, name
        assert hashlib.sha256(files[name]).hexdigest() == e["sha256"] and len(files[name]) == e["size"], name
    assert {a["asset_name"] for a in manifest["artifacts"]} == set(bundles)
    # each Linux bundle was smoke-tested in its own job (the aarch64 ones under qemu-user) and the
    # result travelled beside it; the Windows ARM64 ones say in their specs why no runner can
    smoke = {a["asset_name"]: a["smoke"] for a in manifest["artifacts"]}
    for name in bundles:
        if "-linux-" in name:
            assert smoke[name] == (
                "passed (native)"
                if "-x64-" in name
                else f"passed (qemu-aarch64 -L <{compiler_of(TOOLCHAINS['gcc-cross-linux-aarch64']).task}>/usr/aarch64-linux-gnu)"
            )
            assert f"{name}.smoke.json" in files, name
        else:
            assert smoke[name].startswith("waived: "), (name, smoke[name])  # the spec's reason, published
    # what the upload step publishes: every asset of ours and the SHA index; the paired runtime
    # is the upstream release's asset, hashed but never uploaded again
    ours = [n for n, e in index["artifacts"].items() if e["kind"] != "runtime"]
    listed = files["release-assets.txt"].decode().split()
    assert sorted(listed) == sorted([*ours, INDEX, PROVENANCE]), listed
    # the workflow checked its own output as a consumer would
    # (before the attest job signs it: every other check, said "not authenticated")
    assert (
        "verify-release: every check that ran passed, but not authenticated (--no-authenticate): "
        "nothing proves who built it"
    ) in _job_lines(run["out"], "manifest")

    # the CUDA bundle (built and merged on its own runner) holds every file of its base
    def members(name: str) -> set[str]:
        with tarfile.open(fileobj=io.BytesIO(files[name])) as t:
            return {m.name.split("/", 1)[-1] for m in t.getmembers() if m.isfile()}

    cuda = next(b for b in bundles if "linux" in b and "cuda" in b)
    base = next(b for b in bundles if "linux-arm64-cpu" in b)
    own = {"BUNDLE_INFO.json", "THIRD_PARTY_LICENSES.txt"}
    assert members(base) - own <= members(cuda), members(base) - members(cuda)
    assert any("libggml-cuda.so" in m for m in members(cuda))


def test_the_windows_legs_were_imported_signed_and_merged_on_linux(run):
    files = _artifact_files(run["store"], "release")
    cuda = next(n for n in files if n.startswith("app-") and n.endswith("-windows-arm64-cuda13-portable.zip"))
    with zipfile.ZipFile(io.BytesIO(files[cuda])) as z:
        info = json.loads(z.read("BUNDLE_INFO.json"))
        names = set(z.namelist())
    assert [i["leg"] for i in info["imported_builds"]] == ["mini-windows-arm64-cpu", "mini-windows-arm64-cuda"]
    seeded = _artifact_files(run["store"], "built-mini-windows-arm64-cuda")
    own = info["imported_builds"][1]
    assert own["files"]["ggml-cuda.dll"] == hashlib.sha256(seeded["ggml-cuda.dll"]).hexdigest()
    assert info["signing"] == "signed" and info["supported_sms"] == [120, 121] and info["toolkit_version"] == "13.4"
    # the leg's own job packaged it unsigned (no signing secret there); the sign job signed it (issue 51)
    unsigned = _artifact_files(run["store"], "bundle-mini-windows-arm64-cuda")
    with zipfile.ZipFile(io.BytesIO(unsigned[cuda])) as z:
        assert json.loads(z.read("BUNDLE_INFO.json"))["signing"] == "pending"
    signed = json.loads(_artifact_files(run["store"], "bundles-signed")["signed-bundles.json"])
    assert {b["asset"]: b["sha256"] for b in signed["bundles"]}[cuda] == hashlib.sha256(files[cuda]).hexdigest()
    assert info["verify"]["passed"] and info["verify"]["machine"] == "arm64"
    assert {"ggml-cuda.dll", "ggml-base.dll", "llama-server.exe", "cudart64_13.dll"} <= names
    manifest = json.loads(files[MANIFEST])
    assert {"windows-arm64", "windows-arm64-cuda"} <= {a["install_kind"] for a in manifest["artifacts"]}
    out = run["out"]  # the legs' own jobs imported what the compile runner uploaded (built=built)
    assert re.search(
        r"build:mini-windows-arm64-cpu: imported \d+ files built elsewhere from \S+/built/mini-windows-arm64-cpu", out
    )
    assert re.search(
        r"build:mini-windows-arm64-cuda: imported 1 file built elsewhere from \S+/built/mini-windows-arm64-cuda", out
    )


def test_the_tag_push_published_the_release_as_a_draft_first(run):
    rel = run["published"]
    assert rel is not None and not rel.draft
    files = _artifact_files(run["store"], "release")
    index = json.loads(files[INDEX])
    ours = {n for n, e in index["artifacts"].items() if e["kind"] != "runtime"}  # paired: upstream's asset
    # and the attestation's Sigstore bundle, published beside what it signs (issue 51; the act
    # stand-in's is unsigned), which verify-release authenticates the release with
    assert {a.name for a in rel.assets} == {*ours, INDEX, PROVENANCE, SIGSTORE}
    for a in rel.assets:
        if a.name == SIGSTORE:
            continue
        want = hashlib.sha256(files[a.name]).hexdigest() if a.name in files else None
        assert hashlib.sha256(a.data).hexdigest() == want, a.name
    posts = [c for c in run["calls"] if c.startswith("POST /uploads/")]
    assert len(posts) == len(rel.assets) and run["calls"][-1].startswith("PATCH ")
    assert sum(c.startswith("PATCH ") for c in run["calls"]) == 1


def test_every_published_asset_was_attested_by_a_job_that_built_nothing_before_publishing(run):
    """Issue 40, item 1: the manifest job left a draft; the attest job (the actions/attest
    stand-in: it prints what it was given) signed every asset the release holds, the provenance
    among them, and installed nothing; only then did the publish job make the draft public."""
    out = run["out"]
    manifest, attest, publish = (_job_lines(out, j) for j in ("manifest", "attest", "publish"))
    assert "a draft, not published" in manifest and "PATCH" not in manifest
    subjects = dict(re.findall(r"attest stand-in: subject (\S+) sha256:([0-9a-f]{64})", attest))
    rel = run["published"]
    # every asset but the attestation's own Sigstore bundle, published after it was made
    assert subjects == {a.name: hashlib.sha256(a.data).hexdigest() for a in rel.assets if a.name != SIGSTORE}, (
        sorted(subjects),
        attest[-3000:],
    )
    assert PROVENANCE in subjects and INDEX in subjects and MANIFEST in subjects
    assert "pip install" not in attest and "doit" not in attest
    assert "its " in publish and "assets are the attested subjects" in publish, publish[-3000:]
    assert out.index("attest stand-in: subject") < out.index("assets are the attested subjects")


def test_the_tests_workflow_linux_job_runs_a_selected_part(tmp_path):
    require_tools("npm", "git", "flock")
    repo = actkit.standin_repo(tmp_path / "repo", standin_release=False)
    r, seconds = actkit.run_act(
        repo,
        ".github/workflows/tests.yml",
        event="workflow_dispatch",
        event_json={"inputs": {"pytest-args": "tests/unit -q -p no:cacheprovider"}},
        artifacts=tmp_path / "artifacts",
        labels=("ubuntu-latest",),
        matrix=("os:ubuntu-latest",),
        env={
            "BUNDLEGRAPH_EXTRA_ACT_PYTHON": actkit.base_python(),
            "BUNDLEGRAPH_EXTRA_ACT_WHEELS": str(actkit.wheelhouse()),
        },
    )
    out = r.stdout + r.stderr
    (tmp_path / "act.log").write_text(out)
    assert r.returncode == 0, f"act failed after {seconds:.0f} s:\n" + out[-8000:]
    assert "setup-python stand-in: Python" in out and "(a copy of " in out, "the job venv template was not used"
    for step in ("ruff check", "mypy", "lint-imports", "python -m pytest -ra tests/unit"):
        assert f"Success - Main {step}" in out, step
    import re

    m = re.search(r"(\d+) passed", out)
    assert m and int(m.group(1)) >= 100, out[-3000:]
    assert "windows" not in " ".join(l for l in out.splitlines() if "Set up job" in l).lower()
    print(f"act ran tests.yml (Linux, tests/unit) in {seconds:.0f} s: {m.group(0)}")
