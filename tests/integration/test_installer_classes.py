"""The installer's own code on the whole CUDA matrix (issue 43): every NVIDIA host class that the
fork's release serves with a CUDA bundle gets one from ours, of the same runtime line and the
same coverage class or a targeted one where the fork gives the portable bundle; and for every
host class the installer picks what ``bundlegraph select`` says, in the same order.

Neither release is built here (most of its 21 legs cannot be built on this machine): ours is the
release ``bundles/`` plans (:func:`bundlegraph.installer.planned.planned_manifest`, the manifest entries
the built bundles will have), the fork's is its CUDA matrix as its workflows state it
(``tests/data/fork/cuda-matrix.json``); each is served as a ``dist/`` the installer selects from
(:mod:`plannedkit`, :mod:`installerkit`). Host classes: :func:`bundlegraph.installer.selection.host_classes`
(every install kind; every SM of NVIDIA's table; every driver from CUDA 12.0 to the newest
toolkit), 1,264 of them; ~10 s for both releases on this machine.
"""

from __future__ import annotations

import json
from pathlib import Path

import graphrun
import installerkit
import plannedkit
import pytest

from bundlegraph.installer.planned import planned_manifest, planned_sizes
from bundlegraph.installer.selection import Host, host_classes, select
from bundlegraph.specs.loader import load_matrix

ROOT = Path(__file__).resolve().parents[2]
PORTABLE = "portable"


@pytest.fixture(scope="module")
def ilp():
    return installerkit.installer()


@pytest.fixture(scope="module")
def ours():
    m = load_matrix(ROOT / "bundles")
    return planned_manifest(m), {k: (v.mb, v.source) for k, v in planned_sizes(m).items()}


@pytest.fixture(scope="module")
def picks(ilp, ours, tmp_path_factory):
    """``{"ours"|"fork": {host: (choice, attempts)}}``: the installer's picks for every host class,
    each release served in turn."""
    manifest, _sizes = ours
    d = tmp_path_factory.mktemp("planned")
    dists = {
        "ours": plannedkit.write_dist(manifest, d / "ours"),
        "fork": plannedkit.write_dist(plannedkit.fork_manifest(), d / "fork"),
    }
    out: dict[str, dict[Host, tuple[str | None, list[str]]]] = {}
    for name, dist in dists.items():
        with installerkit.released(ilp, dist) as srv:
            got = {}
            for host in host_classes(manifest):
                c = installerkit.installer_choice(ilp, host.to_json(), srv.release_tag)
                got[host] = (c["choice"], c["attempts"])
            assert srv.unexpected == [], srv.unexpected
        out[name] = got
    return out


def _by_name(manifest):
    return {a.asset_name: a for a in manifest.artifacts}


def test_the_installer_picks_what_bundlegraph_select_says_for_every_host_class(ours, picks):
    manifest, sizes = ours
    disagree = []
    for host, (choice, attempts) in picks["ours"].items():
        sel = select(host, manifest, None, sizes)
        if (sel.choice, sel.attempts) != (choice, attempts):
            disagree.append(f"{host.describe()}: bundlegraph {sel.attempts}, installer {attempts}")
    # 1,264 NVIDIA and CPU host classes (4 os/arch kinds x (315 sm/driver classes + no GPU)), 8 with an
    # Intel or AMD GPU ggml's Vulkan serves (2 vendors x 4 kinds), 2 Macs, and 28 AMD hosts by gfx target
    # (the 14 targets the ROCm legs map, on Linux x64 and Windows x64)
    assert len(picks["ours"]) == 1264 + 8 + 2 + 28
    assert not disagree, f"{len(disagree)} host classes disagree:\n" + "\n".join(disagree[:20])


def test_every_host_the_fork_serves_with_cuda_gets_the_same_line_and_class_or_better(ours, picks):
    """Same line; the same class, or where the fork gives the portable bundle, a targeted class
    (the installer ranks a fitting targeted class first: a smaller download for the host)."""
    manifest, _sizes = ours
    fork = _by_name(plannedkit.fork_manifest())
    mine = _by_name(manifest)
    served = worse = 0
    lost = []
    for host, (fork_choice, _a) in picks["fork"].items():
        f = fork.get(fork_choice) if fork_choice else None
        if f is None or f.runtime_line is None:  # the fork gives no CUDA bundle (none, or CPU)
            continue
        served += 1
        ours_choice, _b = picks["ours"][host]
        o = mine.get(ours_choice) if ours_choice else None
        if o is None or o.runtime_line is None:
            lost.append(f"{host.describe()}: the fork gives {fork_choice}, ours {ours_choice or 'nothing'}")
        elif o.runtime_line != f.runtime_line or not (
            o.coverage_class == f.coverage_class or (f.coverage_class == PORTABLE and o.coverage_class != PORTABLE)
        ):
            worse += 1
            lost.append(
                f"{host.describe()}: the fork gives {f.runtime_line}-{f.coverage_class}, ours "
                f"{o.runtime_line}-{o.coverage_class}"
            )
    assert served == 328, served  # not vacuous: 328 of the 1,260 NVIDIA host classes get CUDA from the fork
    assert not lost, f"{len(lost)} of {served} host classes the fork serves ({worse} worse):\n" + "\n".join(lost[:20])


def test_maxwell_to_blackwell_hosts_get_their_class_and_its_size(picks, ours):
    """Spot checks of the table above, through the installer: what a host gets and downloads."""
    manifest, sizes = ours
    want = {
        Host("linux", "x64", (61,), (12, 4)): ("linux-x64-cuda12-legacy", 49.1),
        Host("linux", "x64", (86,), (13, 0)): ("linux-x64-cuda13-older", 173.9),
        Host("linux", "x64", (120,), (12, 8)): ("linux-x64-cuda12-newer", 215.5),
        Host("windows", "x64", (89,), (13, 1)): ("windows-x64-cuda13-older", 597.2),
        Host("windows", "x64", (70,), (13, 0)): ("windows-x64-cuda12-older", 638.8),
        Host("linux", "arm64", (121,), (13, 0)): ("linux-arm64-cuda13-blackwell", 90.7),
    }
    for host, (leg, mb) in want.items():
        choice, _attempts = picks["ours"][host]
        m = load_matrix(ROOT / "bundles")
        assert choice == m.legs[leg].bundle_name(m.release.tag, m.release.bundle_prefix), (host, choice)
        sel = select(host, manifest, None, sizes)
        assert (sel.download_mb, sel.size_from) == (mb, "estimated"), (host, sel.download_mb)


def test_select_and_coverage_answer_for_the_planned_release(tmp_path):
    """``bundlegraph select --planned`` / ``coverage --planned``: the release ``--bundles`` plans,
    with what each host downloads; a release named beside ``--planned`` is refused in one line."""
    args = ["select", "--planned", "--os", "linux", "--arch", "x64", "--sm", "61", "--driver-cuda", "12.4"]
    r = graphrun.cli(args, workdir=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "gets: app-b11642-linux-x64-cuda12-legacy.tar.gz (linux-cuda; downloads 49.1 MB estimated)" in r.stdout, (
        r.stdout
    )
    c = graphrun.cli(["coverage", "--planned", "--json"], workdir=tmp_path)
    assert c.returncode == 0, c.stderr
    out = json.loads(c.stdout)
    assert out["planned"] is True and out["bundles"] == 21 and len(out["rows"]) == 1264 + 8 + 2 + 28
    served = [row for row in out["rows"] if row["choice"]]
    assert served and all(row["size_from"] == "estimated" and row["download_mb"] > 0 for row in served)
    bad = graphrun.cli([*args, str(tmp_path)], workdir=tmp_path)
    assert bad.returncode == 2 and bad.stdout == ""
    assert f"{tmp_path}: --planned asks the specs of --bundles, not a release: leave it out" in bad.stderr
    assert "Traceback" not in bad.stderr


def test_the_coverage_summary_is_the_same_in_every_process(tmp_path):
    """``coverage --planned --summary`` joins the host classes that get the same bundle into one
    row; the vendor hosts (``amd GPU``, ``intel GPU``) of a row came out in a set's order, which
    differs per process (hash randomization), so two runs printed two tables."""
    import os
    import subprocess
    import sys

    outs = set()
    for seed in ("1", "2", "3"):
        env = dict(os.environ, PYTHONHASHSEED=seed, BUNDLEGRAPH_WORKDIR=str(tmp_path))
        r = subprocess.run(
            [sys.executable, "-m", "bundlegraph.cli", "coverage", "--planned", "--summary"],
            capture_output=True,
            text=True,
            env=env,
            cwd=Path(__file__).resolve().parents[2],
            check=False,
        )
        assert r.returncode == 0, r.stderr
        outs.add(r.stdout)
    assert len(outs) == 1
    assert "| linux-vulkan | amd GPU-intel GPU |" in outs.pop()
