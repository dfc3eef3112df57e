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
an NVIDIA GPU has ``sms`` [] and ``driver_cuda`` null.
"""

from __future__ import annotations

import contextlib
import json
import re
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
    with serving(ilp, release, env) as srv:
        for row in rows:
            tag = srv.release_tag if pinned else ""
            got = installerkit.installer_choice(ilp, row, tag)
            keys = ("choice", "install_kind", "attempts")
            if [got[k] for k in keys] != [row[k] for k in keys]:
                why = installerkit.installer_selection(ilp, row, tag)[2]
                disagree.append(
                    f"{_host(row)}\n    bundlegraph: {row['choice']} {row['attempts']}\n"
                    f"    installer:   {got['choice']} {got['attempts']} {got['install_kind']}"
                    + (f" ({why})" if why else "")
                )
        asked = {p for _method, p in srv.requests}
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
