"""The installer's own code against a release we build: for every host row of
``bundlegraph coverage --json`` Unsloth's installer (``unsloth==2026.10.9``,
``studio/install_llama_prebuilt.py``, fetched at test time by :mod:`installerkit`) must choose
the same bundle, in the same attempt order, as bundlegraph says it will; every chosen bundle and
the source archive must pass the installer's sha256 verification against our index.

The release is the stand-in of ``tests/data/bundles`` (``tests/data/minillama`` built by its
three legs through the real graph: aarch64 CPU, aarch64 CUDA 13 Blackwell merged into it,
x86_64 CPU), built once per module. It is served on 127.0.0.1 as the GitHub release
``unslothai/llama.cpp@<tag>``; the installer's downloads are redirected there, and its host
probes answer from each row (see :mod:`installerkit`).

Row shape (``bundlegraph coverage --json DIST`` -> ``{"rows": [...]}``)::

    {"os": "linux"|"windows", "arch": "x64"|"arm64", "sms": [121], "driver_cuda": "13.0"|null,
     "runtime_lines": ["cuda13"]|null, "choice": "app-b42-linux-arm64-cuda13-blackwell.tar.gz"|null,
     "install_kind": "linux-arm64-cuda"|null (the choice's), "attempts": [asset, ...], ...}

``runtime_lines`` null: every CUDA line the driver allows is on the host's disk. A host without
an NVIDIA GPU has ``sms`` [] and ``driver_cuda`` null; ``gpu`` (``intel``, ``amd``: an AMD GPU
without ROCm, or null) is the other GPU the installer's own probe reports.

The Vulkan release (:func:`vulkan_release`) is that release plus a ``linux-x64-vulkan`` bundle:
the x86_64 CPU bundle with npm's real ``libggml-vulkan.so`` beside its libraries, listed in the
manifest and the SHA index as the graph lists a leg merged into that base.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import shutil
import tarfile
from pathlib import Path

import installerkit
import pytest
import releasekit
from conftest import linux_only

from bundlegraph.core.fsutil import sha256_file

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"

GB10 = {"os": "linux", "arch": "arm64", "sms": [121], "driver_cuda": "13.0", "runtime_lines": None}
"""A DGX Spark / GB10: Linux aarch64, sm_121, a CUDA 13.0 driver, CUDA 13 runtime on disk."""

# the legs build on a Linux x86_64 host with Debian's cross compiler
pytestmark = linux_only


@pytest.fixture(scope="module")
def ilp():
    """The installer module (fetched and verified on a cold cache)."""
    return installerkit.installer()


@pytest.fixture(scope="module")
def rows(release) -> list[dict]:
    """bundlegraph's coverage rows for the built dist (``bundlegraph coverage --json DIST``)."""
    out = release.cli_json("coverage", "--json", str(release.dist))["rows"]
    assert out, "bundlegraph coverage listed no host rows"
    return out


@contextlib.contextmanager
def serving(ilp, release: releasekit.Release, env: dict | None = None):
    """The dist served as ``unslothai/llama.cpp@<index release_tag>``, the installer patched to
    it; afterwards, no request left that release and no URL left github.com."""
    with installerkit.released(ilp, release.dist, env=env) as srv:
        yield srv
        assert srv.unexpected == [], srv.unexpected
        assert srv.opener.stray() == [], srv.opener.stray()


@pytest.fixture
def served(ilp, release):
    """:func:`serving` for one test."""
    with serving(ilp, release) as srv:
        yield srv


# how the installer finds the release: the download host with the tag pinned (what we ask for),
# "latest" through github.com's /releases/latest redirect (a plain install), the REST API (its
# fallback when the download host fails)
PATHS = {
    "pinned": ({}, True),
    "latest": ({}, False),
    "rest-api": ({"UNSLOTH_LLAMA_DISABLE_DOWNLOAD_HOST_RESOLVE": "1"}, True),
}


def _host(row: dict) -> str:
    sms = ",".join(f"sm_{s}" for s in row.get("sms") or []) or "no GPU"
    return (
        f"{row['os']}/{row['arch']} {sms} driver={row.get('driver_cuda')} "
        f"lines={row.get('runtime_lines')} [{row.get('install_kind')}]"
    )


@pytest.mark.parametrize("path", PATHS)
def test_installer_chooses_what_coverage_says_for_every_row(ilp, release, rows, path):
    """Every coverage row: the installer's first choice, its install kind and its attempt order
    equal the row's (the release found by each of the installer's paths to it)."""
    env, pinned = PATHS[path]
    disagree = []
    kinds = {
        a["install_kind"] for a in json.loads((release.dist / installerkit.MANIFEST_NAME).read_text())["artifacts"]
    }
    with serving(ilp, release, env) as srv:
        asked_by: dict[str, set[str]] = {}
        for row in rows:
            tag = srv.release_tag if pinned else ""
            before = len(srv.requests)
            got = installerkit.installer_choice(ilp, row, tag)
            # a host of a kind the release has no bundle of (an AMD or Apple host of the stand-in
            # release) may look through older releases, which the installer lists by the REST API
            if set(row["asked"]) & kinds:
                asked_by.setdefault("served", set()).update(p for _m, p in srv.requests[before:])
            keys = ("choice", "install_kind", "attempts")
            if [got[k] for k in keys] != [row[k] for k in keys]:
                why = installerkit.installer_selection(ilp, row, tag)[2]
                disagree.append(
                    f"{_host(row)}\n    bundlegraph: {row['choice']} {row['attempts']}\n"
                    f"    installer:   {got['choice']} {got['attempts']} {got['install_kind']}"
                    + (f" ({why})" if why else "")
                )
        asked = asked_by.get("served", set())
    assert any(q.startswith("/repos/") for q in asked) == (path == "rest-api"), sorted(asked)
    assert any(q.endswith("/releases/latest") for q in asked) == (path == "latest"), sorted(asked)
    assert not disagree, f"{len(disagree)} of {len(rows)} rows disagree:\n" + "\n".join(disagree)


def test_every_bundle_is_chosen_for_some_host(rows, release):
    """No bundle in the dist is dead weight: some coverage row's host gets it."""
    bundles = {p.name for p in release.dist.glob("app-*.tar.gz")}
    chosen = {r["choice"] for r in rows} | {a for r in rows for a in r["attempts"]}
    assert bundles <= chosen, f"no host row gets {sorted(bundles - chosen)}"


def test_chosen_bundles_pass_and_tampered_fail_the_installers_hash_check(ilp, rows, release, served, tmp_path):
    """Each distinct chosen asset, downloaded through the installer's ``download_file_verified``
    with the sha256 the installer took from our index: accepted as published, refused when the
    served bytes differ."""
    choices = {}
    for row in rows:
        _sel, attempts, _why = installerkit.installer_selection(ilp, row, served.release_tag)
        for a in attempts[:1]:
            choices.setdefault(a.name, a)
    assert choices, "no row chose a bundle"
    for name, a in sorted(choices.items()):
        published = sha256_file(release.dist / name)
        assert a.expected_sha256 == release.index["artifacts"][name]["sha256"] == published, name
        assert a.url == served.download_url(name), a.url
        assert installerkit.verify_download(ilp, a.url, a.expected_sha256, tmp_path / "ok" / name) == published
        served.overrides[name] = (release.dist / name).read_bytes() + b"tampered"
        with pytest.raises(ilp.PrebuiltFallback, match="checksum mismatch"):
            installerkit.verify_download(ilp, a.url, a.expected_sha256, tmp_path / "bad" / name)
        del served.overrides[name]


def test_chosen_bundles_install_and_pass_the_installers_health_check(ilp, rows, served, tmp_path):
    """Each distinct chosen bundle, installed by the installer's ``install_from_archives`` (it
    refuses a bundle without ``llama-server`` and ``llama-quantize``), passes its
    ``runtime_payload_is_healthy`` (the shared libraries of the install kind's health groups)."""
    done = set()
    for row in rows:
        _sel, attempts, _why = installerkit.installer_selection(ilp, row, served.release_tag)
        if not attempts or attempts[0].name in done:
            continue
        choice, host = attempts[0], installerkit.make_host(ilp, row)
        done.add(choice.name)
        stage, work = tmp_path / choice.name / "stage", tmp_path / choice.name / "work"
        work.mkdir(parents=True)
        ilp.install_from_archives(choice, host, stage, work)
        assert ilp.runtime_payload_is_healthy(stage, host, choice), (
            f"{choice.name}: the installer finds a required runtime file missing: "
            f"{sorted(p.name for p in stage.rglob('*') if p.is_file())}"
        )
    assert done, "no row chose a bundle"


def test_installer_finds_and_verifies_our_source_archive(ilp, release, rows, served, tmp_path):
    """The installer's source lookup (``preferred_source_archive``) takes the exact-commit
    archive ``llama.cpp-source-commit-<commit>.tar.gz`` from our release (not a codeload tarball
    of the upstream tag) and its hash check accepts it (and refuses a tampered copy)."""
    commit = release.index.get("source_commit") or ""
    assert re.fullmatch(r"[0-9a-f]{40}", commit), f"index source_commit {commit!r}"
    name = f"llama.cpp-source-commit-{commit}.tar.gz"
    host = next(r for r in rows if r["choice"])  # any host the release serves
    sel, attempts, why = installerkit.installer_selection(ilp, host, served.release_tag)
    assert attempts, f"the installer refused the release for {_host(host)}: {why}"
    src = installerkit.source_archive(ilp, sel.release_plans[0])
    assert src["exact"] and src["asset"] == name, (
        f"the installer's source lookup does not take {name} from our release but {src} (it needs "
        f"that name in the index and source_repo + source_commit in the index header)"
    )
    assert src["ref"] == commit, src
    assert src["url"] == served.download_url(name), src
    published = sha256_file(release.dist / name)
    assert src["sha256"] == release.index["artifacts"][name]["sha256"] == published
    assert installerkit.verify_download(ilp, src["url"], src["sha256"], tmp_path / "ok" / name) == published
    served.overrides[name] = b"not the source"
    with pytest.raises(ilp.PrebuiltFallback, match="checksum mismatch"):
        installerkit.verify_download(ilp, src["url"], src["sha256"], tmp_path / "bad" / name)


def test_gb10_gets_the_blackwell_bundle_through_the_installer(ilp, release, served):
    """Linux arm64, sm_121, driver 13.0: the installer's first choice is the Blackwell bundle."""
    got = installerkit.installer_choice(ilp, GB10, served.release_tag)
    tag = release.index["release_tag"]
    assert got["choice"] == f"app-{tag}-linux-arm64-cuda13-blackwell.tar.gz", got
    assert got["install_kind"] == "linux-arm64-cuda", got
    assert (release.dist / got["choice"]).is_file()


# hosts beyond coverage's one-GPU rows: several GPUs, a mixed pair, SMs unknown, a newer driver,
# only the older runtime line on disk
HOSTS = {
    "gb10": GB10,
    "two-blackwell-gpus": {
        "os": "linux",
        "arch": "arm64",
        "sms": [120, 121],
        "driver_cuda": "13.1",
        "runtime_lines": None,
    },
    "gh200+gb10": {"os": "linux", "arch": "arm64", "sms": [90, 121], "driver_cuda": "13.0", "runtime_lines": None},
    "sms-unknown": {"os": "linux", "arch": "arm64", "sms": [], "driver_cuda": "13.0", "runtime_lines": None},
    "gb10-cuda12-libs-only": {
        "os": "linux",
        "arch": "arm64",
        "sms": [121],
        "driver_cuda": "13.0",
        "runtime_lines": ["cuda12"],
    },
    "x64-rtx5090": {"os": "linux", "arch": "x64", "sms": [120], "driver_cuda": "13.0", "runtime_lines": None},
    "windows-arm64-gb10": {
        "os": "windows",
        "arch": "arm64",
        "sms": [121],
        "driver_cuda": "13.0",
        "runtime_lines": None,
    },
}


@pytest.mark.parametrize("host", HOSTS)
def test_select_cli_agrees_with_the_installer(ilp, release, served, host):
    """``bundlegraph select --os .. --arch .. [--sm N]... [--driver-cuda M.m] [--runtime-line L]...
    --json DIST`` -> ``{"choice", "install_kind", "attempts", "rejected": [{"asset", "reason"}]}``:
    the same choice, install kind and attempts as the installer (for ``gb10``: ``bundlegraph
    select --os linux --arch arm64 --sm 121 --driver-cuda 13.0 --json DIST``)."""
    row = HOSTS[host]
    args = ["select", "--os", row["os"], "--arch", row["arch"]]
    args += [a for sm in row["sms"] for a in ("--sm", str(sm))]
    args += ["--driver-cuda", row["driver_cuda"]] if row["driver_cuda"] else []
    args += [a for line in row["runtime_lines"] or [] for a in ("--runtime-line", line)]
    r = release.cli(*args, "--json", str(release.dist))
    got = installerkit.installer_choice(ilp, row, served.release_tag)
    assert r.returncode == (0 if got["choice"] else 1), r.stdout[-3000:] + r.stderr[-3000:]  # 1: no bundle
    ours = json.loads(r.stdout)
    assert (ours["choice"], ours["install_kind"], ours["attempts"]) == (
        got["choice"],
        got["install_kind"],
        got["attempts"],
    ), (ours, got)
    assert isinstance(ours["rejected"], list)
    assert all({"asset", "reason"} <= set(r) for r in ours["rejected"]), ours["rejected"]


def test_without_the_diffusion_pull_request_every_second_run_downloads_again(ilp, release, rows, served, tmp_path):
    """The installer expects the fork's published bundles to hold
    ``llama-diffusion-gemma-visual-server`` (from a pull request the fork merges; upstream has no
    such target) and backfills it on every run when it is missing: a release built without that
    pull request is downloaded and extracted again on each install run, on every host class
    (docs/installer-contract.md). The mix release with the pull request does not
    (``tests/integration/test_mix_source.py``)."""
    got = installerkit.backfill_after_install(ilp, rows, served, tmp_path)
    assert got and all(got.values()), got
    # and bundlegraph coverage says so, for each bundle
    again = release.cli_json("coverage", "--json", str(release.dist))["redownloaded_every_run"]
    assert again == dict.fromkeys(again, True) and set(got) <= set(again)
    text = release.cli("coverage", str(release.dist)).stdout
    assert f"note: {next(iter(got))} has no llama-diffusion-gemma-visual-server: the installer" in text


# -- Vulkan (issue 42) ------------------------------------------------------------------------------


def test_required_files_cover_the_installers_health_groups_for_every_kind(ilp):
    """For every install kind bundlegraph knows (:data:`~bundlegraph.schemas.installer.INSTALL_KINDS`,
    from the backends' registry), each group of the installer's health check of a published
    bundle (``runtime_payload_health_groups``; a build after the impl split, and one before) is
    met by a file :func:`~bundlegraph.schemas.installer.required_patterns` requires: verify refuses
    what the installer's health check would (the Vulkan kinds require the DiffusionGemma visual
    server too)."""
    from bundlegraph.schemas.installer import INSTALL_KINDS, required_patterns
    from bundlegraph.schemas.records import IMPL_SPLIT_BUILD

    assert {"linux-vulkan", "windows-vulkan", "windows-arm64-vulkan"} <= set(INSTALL_KINDS)
    short = []
    for kind in INSTALL_KINDS:
        for build in (None, IMPL_SPLIT_BUILD - 1):
            tag = None if build is None else f"b{build}"
            groups = ilp.runtime_payload_health_groups(kind, source_label="published", tag=tag)
            ours = required_patterns(kind, build)
            short += [f"{kind} (build {build}): {g}" for g in groups if not any(_within(p, g) for p in ours)]
    assert not short, "the installer requires files our required_patterns do not:\n" + "\n".join(short)
    assert "llama-diffusion-gemma-visual-server" in required_patterns("linux-vulkan", None)
    assert "llama-diffusion-gemma-visual-server" not in required_patterns("linux-cpu", None)


def _within(pattern: str, group: list[str]) -> bool:
    """Whether every file ``pattern`` (one of our required entries) accepts meets the installer's
    ``group`` (any of its globs): the same glob, or an exact name one of them matches (our
    ``ggml-hip.dll`` meets the installer's ``ggml-hip*.dll``; ``libllama.dylib`` its
    ``['libllama.dylib', 'libllama.*.dylib']``)."""
    import fnmatch

    if pattern in group:
        return True
    return not any(c in pattern for c in "*?[") and any(fnmatch.fnmatchcase(pattern, g) for g in group)


def _add_member(src: Path, dest: Path, beside: str, name: str, data: bytes) -> None:
    """``src`` (a .tar.gz bundle) rewritten to ``dest`` with ``data`` added as ``name`` in the
    folder of member ``beside`` (same mode and mtime as it)."""
    with tarfile.open(src, "r:gz") as tin, tarfile.open(dest, "w:gz", compresslevel=1) as tout:
        members = tin.getmembers()
        ref = next(m for m in members if m.name.rsplit("/", 1)[-1] == beside)
        for m in members:
            tout.addfile(m, tin.extractfile(m) if m.isfile() else None)
        new = tarfile.TarInfo(f"{ref.name.rsplit('/', 1)[0]}/{name}" if "/" in ref.name else name)
        new.size, new.mode, new.mtime = len(data), ref.mode, ref.mtime
        tout.addfile(new, io.BytesIO(data))


@pytest.fixture(scope="module")
def vulkan_release(release, tmp_path_factory) -> releasekit.Release:
    """A copy of the stand-in release with ``app-<tag>-linux-x64-vulkan.tar.gz`` added: the
    x86_64 CPU bundle plus npm @node-llama-cpp/linux-x64-vulkan's real ``libggml-vulkan.so``
    beside its ``libggml-base.so``, in the manifest as the CPU artifact with the Vulkan leg's
    install kind, profile and rank (``linux-vulkan``, ``vulkan``, 50), and hashed in the index
    (:func:`releasekit.reseal`). It has no DiffusionGemma visual server: the stand-in builds none."""
    from conftest import require_input

    lib = require_input("npm-linux-x64-vulkan", unpack=True) / "package/bins/linux-x64-vulkan/libggml-vulkan.so"
    root = tmp_path_factory.mktemp("vulkan-release")
    shutil.copytree(release.bundles, root / "bundles")
    shutil.copytree(release.dist, root / "work" / "dist")
    rel = releasekit.Release(root)
    tag = rel.index["release_tag"]
    cpu_name, vk_name = f"app-{tag}-linux-x64-cpu.tar.gz", f"app-{tag}-linux-x64-vulkan.tar.gz"
    _add_member(rel.dist / cpu_name, rel.dist / vk_name, "libggml-base.so", "libggml-vulkan.so", lib.read_bytes())
    mp = rel.dist / installerkit.MANIFEST_NAME
    manifest = json.loads(mp.read_text())
    cpu = next(a for a in manifest["artifacts"] if a["asset_name"] == cpu_name)
    vk = {**cpu, "asset_name": vk_name, "install_kind": "linux-vulkan", "bundle_profile": "vulkan", "rank": 50}
    manifest["artifacts"] = sorted([*manifest["artifacts"], vk], key=lambda a: a["asset_name"])
    mp.write_text(json.dumps(manifest, indent=2) + "\n")
    ip = rel.dist / installerkit.INDEX_NAME
    index = json.loads(ip.read_text())
    index["artifacts"][vk_name] = dict(index["artifacts"][cpu_name])
    index["artifacts"] = dict(sorted(index["artifacts"].items()))
    ip.write_text(json.dumps(index, indent=2) + "\n")
    releasekit.reseal(rel.dist)
    return rel


NON_NVIDIA = {
    f"{os_}-{arch}-{gpu}": {"os": os_, "arch": arch, "sms": [], "driver_cuda": None, "runtime_lines": None, "gpu": gpu}
    for os_, arch in (("linux", "x64"), ("linux", "arm64"))
    for gpu in ("intel", "amd")
}


def test_a_non_nvidia_gpu_host_gets_the_vulkan_bundle_where_it_got_cpu(ilp, release, vulkan_release):
    """Linux hosts with an Intel GPU or an AMD GPU without ROCm, through the installer's own
    selection and ``bundlegraph select --gpu``: from the stand-in release the CPU bundle (it has
    no Vulkan bundle), from the Vulkan release the Vulkan bundle then the CPU bundle on x64, and
    still the CPU bundle on arm64 (the one Vulkan bundle's name says x64)."""
    seen = {}
    for name, rel in (("before", release), ("after", vulkan_release)):
        tag = rel.index["release_tag"]
        with serving(ilp, rel) as srv:
            for host, row in NON_NVIDIA.items():
                got = installerkit.installer_choice(ilp, row, srv.release_tag)
                r = rel.cli(
                    "select", "--os", row["os"], "--arch", row["arch"], "--gpu", row["gpu"], "--json", str(rel.dist)
                )
                ours = json.loads(r.stdout)
                assert (ours["choice"], ours["install_kind"], ours["attempts"]) == (
                    got["choice"],
                    got["install_kind"],
                    got["attempts"],
                ), (name, host, ours, got)
                seen[(name, host)] = got["attempts"]
    for gpu in ("intel", "amd"):
        assert seen[("before", f"linux-x64-{gpu}")] == [f"app-{tag}-linux-x64-cpu.tar.gz"]
        assert seen[("after", f"linux-x64-{gpu}")] == [
            f"app-{tag}-linux-x64-vulkan.tar.gz",
            f"app-{tag}-linux-x64-cpu.tar.gz",
        ]
        assert seen[("after", f"linux-arm64-{gpu}")] == seen[("before", f"linux-arm64-{gpu}")]
        assert seen[("after", f"linux-arm64-{gpu}")] == [f"app-{tag}-linux-arm64-cpu.tar.gz"]


def test_the_installer_chooses_what_coverage_says_from_the_vulkan_release(ilp, vulkan_release):
    """Every coverage row of the Vulkan release (the NVIDIA rows, unchanged, and the Intel/AMD
    rows of every Vulkan kind): the installer's choice, install kind and attempts are the row's."""
    rows = vulkan_release.cli_json("coverage", "--json", str(vulkan_release.dist))["rows"]
    assert any(r["install_kind"] == "linux-vulkan" for r in rows), rows
    disagree = []
    with serving(ilp, vulkan_release) as srv:
        for row in rows:
            got = installerkit.installer_choice(ilp, row, srv.release_tag)
            keys = ("choice", "install_kind", "attempts")
            if [got[k] for k in keys] != [row[k] for k in keys]:
                disagree.append(f"{_host(row)} gpu={row.get('gpu')}: bundlegraph {row['attempts']}, installer {got}")
    assert not disagree, f"{len(disagree)} of {len(rows)} rows disagree:\n" + "\n".join(disagree)


def test_the_installer_installs_the_vulkan_bundle_and_wants_its_visual_server(ilp, vulkan_release, tmp_path):
    """The installer downloads (hash-checked) and installs the Vulkan bundle it chose, with npm's
    ``libggml-vulkan.so`` in place; its health check of a published Vulkan bundle then asks for
    ``llama-diffusion-gemma-visual-server``, which the stand-in does not build, and for nothing
    else: what :func:`~bundlegraph.schemas.installer.required_patterns` requires of the kind."""
    row = NON_NVIDIA["linux-x64-intel"]
    with serving(ilp, vulkan_release) as srv:
        _sel, attempts, why = installerkit.installer_selection(ilp, row, srv.release_tag)
        assert attempts and attempts[0].install_kind == "linux-vulkan", why
        choice, host = attempts[0], installerkit.make_host(ilp, row)
        stage, work = tmp_path / "stage", tmp_path / "work"
        work.mkdir()
        ilp.install_from_archives(choice, host, stage, work)
    names = {p.name for p in stage.rglob("*") if p.is_file()}
    assert "libggml-vulkan.so" in names, sorted(names)
    groups = ilp.runtime_payload_health_groups(choice.install_kind, source_label=choice.source_label, tag=choice.tag)
    unmet = [g for g in groups if not any(next(stage.rglob(x), None) for x in g)]
    assert unmet == [["llama-diffusion-gemma-visual-server"]], unmet
    assert not ilp.runtime_payload_is_healthy(stage, host, choice)
