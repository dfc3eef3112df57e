"""Selection and coverage by the installer's rules (bundlegraph.installer.selection), on manifests built
as data: which bundle a host gets, why the others are rejected, which claimed host classes a
release fails. The same rules are checked against the installer's own code in
tests/integration/test_installer_contract.py."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from bundlegraph.installer.selection import DRIVERS, Host, claimed, coverage, coverage_problems, select
from bundlegraph.schemas.archs import known_sms, supported_sms_of
from bundlegraph.schemas.manifest import IndexEntry, Manifest, ManifestArtifact, ShaIndex
from bundlegraph.specs.loader import load_matrix

ROOT = Path(__file__).resolve().parents[2]
COMMIT = "0c1e57098bba43ac29e6e3b677cdceebdd22334f"
HEAD = {
    "source_repo": "ggml-org/llama.cpp",
    "source_commit": COMMIT,
    "upstream_tag": "b11642",
    "release_tag": "b11642-mix-0c1e570",
}


def art(name, kind, os, arch, klass="cpu", line=None, sass=(), rank=10, cuda=(13, 5)):
    sms = supported_sms_of(list(sass), cuda) if sass else []
    return ManifestArtifact(
        asset_name=name,
        install_kind=kind,
        os=os,
        arch=arch,
        bundle_profile=name,
        runtime_line=line,
        coverage_class=klass,
        supported_sms=sms,
        min_sm=min(sms) if sms else None,
        max_sm=max(sms) if sms else None,
        rank=rank,
        toolkit_version=f"{cuda[0]}.{cuda[1]}" if line else None,
        ggml_backend_dl=True,
    )


RELEASE = [
    art("la-cpu", "linux-arm64", "linux", "arm64"),
    art("la-bw", "linux-arm64-cuda", "linux", "arm64", "blackwell", "cuda13", ["120a", "121a"], 55),
    art("la-port", "linux-arm64-cuda", "linux", "arm64", "portable", "cuda13", ["90", "100", "120"], 60),
    art("lx-cpu", "linux-cpu", "linux", "x64"),
    art(
        "lx-port", "linux-cuda", "linux", "x64", "portable", "cuda13", ["75", "80", "86", "89", "90", "100", "120"], 60
    ),
    art("wa-cpu", "windows-arm64", "windows", "arm64"),
    art("wa-port", "windows-arm64-cuda", "windows", "arm64", "portable", "cuda13", ["120a", "121a"], 60, (13, 4)),
    art("wx-cpu", "windows-cpu", "windows", "x64"),
]


def release(arts=RELEASE, hashed=None) -> tuple[Manifest, ShaIndex]:
    m = Manifest(**HEAD, artifacts=arts)
    names = hashed if hashed is not None else [a.asset_name for a in arts]
    idx = ShaIndex(
        **HEAD, artifacts={n: IndexEntry(kind="bundle", sha256="0" * 64, source_commit=COMMIT) for n in names}
    )
    return m, idx


def test_supported_sms_follow_nvidia_binary_compatibility():
    assert supported_sms_of(["120a", "121a"], (13, 5)) == [120, 121]  # arch-specific: exactly these
    assert supported_sms_of(["100"], (13, 0)) == [100, 103]  # plain sm_100 also runs on B300
    assert supported_sms_of(["100a"], (13, 0)) == [100]
    assert supported_sms_of(["86"], (13, 0)) == [86, 87, 88, 89]
    assert supported_sms_of(["61"], (12, 9)) == [61, 62]
    # a CUDA 12.8 cubin runs on the GPUs later toolkits added (sm_103: 12.9; sm_88: 13.0)
    assert supported_sms_of(["100"], (12, 8)) == [100, 101, 103]
    assert supported_sms_of(["86"], (12, 8)) == [86, 87, 88, 89]


def test_gb10_gets_the_blackwell_bundle_then_portable():
    s = select(Host("linux", "arm64", (121,), (13, 0)), *release())
    assert (s.choice, s.attempts, s.install_kind) == ("la-bw", ["la-bw", "la-port"], "linux-arm64-cuda")
    assert ("lx-port", "install_kind linux-cuda is not asked for") in s.rejected


def test_a_host_outside_every_bundle_gets_nothing_with_the_reasons():
    s = select(Host("linux", "arm64", (87,), (13, 0)), *release())
    assert s.choice is None and s.install_kind is None
    assert ("la-bw", "sm 87 not in supported_sms [120, 121]") in s.rejected
    assert ("la-port", "sm 87 not in supported_sms [90, 100, 103, 120, 121]") in s.rejected


def test_b300_is_served_by_a_plain_sm100_cubin():
    assert select(Host("linux", "x64", (103,), (13, 0)), *release()).choice == "lx-port"


def test_old_driver_gets_no_cuda_bundle_and_no_cpu_fallback_on_linux():
    s = select(Host("linux", "x64", (86,), (12, 8)), *release())
    assert s.choice is None
    assert ("lx-port", "runtime line cuda13 is not allowed by driver CUDA 12.8") in s.rejected
    s = select(Host("linux", "x64", (86,), (13, 0), runtime_lines=("cuda12",)), *release())
    assert s.choice is None and ("lx-port", "the host has no cuda13 runtime libraries") in s.rejected


def test_windows_arm64_falls_back_to_cpu_and_old_windows_x64_driver_asks_for_cpu():
    s = select(Host("windows", "arm64", (90,), (13, 0)), *release())
    assert (s.asked, s.choice, s.install_kind) == (["windows-arm64-cuda", "windows-arm64"], "wa-cpu", "windows-arm64")
    assert select(Host("windows", "arm64", (121,), (13, 0)), *release()).choice == "wa-port"
    assert select(Host("windows", "x64", (86,), (12, 2)), *release()).choice == "wx-cpu"
    assert select(Host("windows", "x64", (86,), (13, 0)), *release()).choice is None  # no windows-cuda bundle


def test_unhashed_bundles_are_never_candidates():
    m, idx = release(hashed=[a.asset_name for a in RELEASE if a.asset_name != "la-bw"])
    s = select(Host("linux", "arm64", (121,), (13, 0)), m, idx)
    assert s.choice == "la-port" and ("la-bw", "not hashed in the SHA index") in s.rejected


def test_lower_rank_wins_a_tie_of_equal_span():
    arts = [*RELEASE, art("la-bw2", "linux-arm64-cuda", "linux", "arm64", "newer", "cuda13", ["120a", "121a"], 50)]
    s = select(Host("linux", "arm64", (120,), (13, 0)), *release(arts))
    assert s.attempts == ["la-bw2", "la-port"]


def test_coverage_rows_cover_every_kind_sm_and_driver():
    rows = coverage(*release())
    gb10 = [r for r in rows if r.host == Host("linux", "arm64", (121,), (13, 0))]
    assert len(gb10) == 1 and gb10[0].choice == "la-bw"
    # every driver from 12.0 (no 12.7) up to the release's newest toolkit, 13.5
    assert {r.host.driver_cuda for r in rows if r.host.nvidia} == set(DRIVERS) | {(13, m) for m in range(6)}
    old = [r for r in rows if r.host.os == "windows" and r.host.arch == "x64" and r.host.driver_cuda == (12, 2)]
    assert old and all(r.choice == "wx-cpu" for r in old)  # below the CUDA floor: the CPU bundle
    # every SM of NVIDIA's table, those CUDA 13 dropped (Maxwell, Pascal, Volta) included
    assert {r.host.sms[0] for r in rows if r.host.nvidia} == set(known_sms()) >= {50, 61, 70, 75, 86, 110, 121}


def test_coverage_gate_catches_a_lost_sm_and_a_dropped_leg():
    m = load_matrix(ROOT / "bundles")
    mine = {"linux-arm64-cpu", "linux-arm64-cuda13-blackwell"}
    small = dataclasses.replace(m, legs={k: v for k, v in m.legs.items() if k in mine})
    assert {(h.sms, k) for h, k, _ in claimed(small)} == {
        ((), "linux-arm64"),
        ((120,), "linux-arm64-cuda"),
        ((121,), "linux-arm64-cuda"),
    }
    ok = [RELEASE[0], RELEASE[1]]
    assert coverage_problems(small, *release(ok)) == []
    lost = art("la-bw", "linux-arm64-cuda", "linux", "arm64", "blackwell", "cuda13", ["120a"], 55)
    probs = coverage_problems(small, *release([RELEASE[0], lost]))
    assert probs == [
        "linux arm64 (sm 121, driver CUDA 13.0): gets no bundle, though linux-arm64-cuda13-blackwell "
        "claims it (la-bw: sm 121 not in supported_sms [120])"
    ]
    probs = coverage_problems(small, *release([RELEASE[1]]))
    assert probs == [
        "linux arm64 (no NVIDIA GPU): gets no bundle, though linux-arm64-cpu claims it "
        "(no bundle of linux-arm64 in the release)"
    ]


# -- Vulkan (issue 42): the installer's routes to a Vulkan bundle ---------------------------------

VULKAN = [
    *RELEASE,
    art("app-b1-linux-x64-vulkan", "linux-vulkan", "linux", "x64", "vulkan", rank=50),
    art("app-b1-windows-x64-vulkan", "windows-vulkan", "windows", "x64", "vulkan", rank=50),
]


def test_a_host_with_a_non_nvidia_gpu_gets_vulkan_then_cpu_where_it_got_cpu():
    for gpu in ("intel", "amd"):
        host = Host("linux", "x64", gpu=gpu)
        assert select(host, *release()).attempts == ["lx-cpu"]  # no Vulkan bundle: CPU, as before
        s = select(host, *release(VULKAN))
        assert (s.asked, s.attempts, s.install_kind) == (
            ["linux-vulkan", "linux-cpu"],
            ["app-b1-linux-x64-vulkan", "lx-cpu"],
            "linux-vulkan",
        )
        s = select(Host("windows", "x64", gpu=gpu), *release(VULKAN))
        assert (s.attempts, s.install_kind) == (["app-b1-windows-x64-vulkan", "wx-cpu"], "windows-vulkan")
    # a host without a GPU, and the Vulkan bundle is not asked for
    s = select(Host("linux", "x64"), *release(VULKAN))
    assert s.attempts == ["lx-cpu"]
    assert ("app-b1-linux-x64-vulkan", "install_kind linux-vulkan is not asked for") in s.rejected


def test_linux_vulkan_serves_both_arches_by_the_name_of_the_bundle():
    """One install kind for both Linux arches: an arm64 host passes over the x64 bundle (its name
    says x64) and takes the arm64 one when the release has it."""
    s = select(Host("linux", "arm64", gpu="amd"), *release(VULKAN))
    assert (s.attempts, s.install_kind) == (["la-cpu"], "linux-arm64")
    assert ("app-b1-linux-x64-vulkan", "names no arm64 (arm64/aarch64) in its profile or asset name") in s.rejected
    arm = art("app-b1-linux-arm64-vulkan", "linux-vulkan", "linux", "arm64", "vulkan", rank=50)
    s = select(Host("linux", "arm64", gpu="amd"), *release([*VULKAN, arm]))
    assert (s.attempts, s.install_kind) == (["app-b1-linux-arm64-vulkan", "la-cpu"], "linux-vulkan")
    s = select(Host("linux", "x64", gpu="intel"), *release([*VULKAN, arm]))
    assert s.attempts == ["app-b1-linux-x64-vulkan", "lx-cpu"]


def test_windows_x64_below_the_cuda_floor_asks_for_vulkan_and_nvidia_hosts_stay_as_they_were():
    s = select(Host("windows", "x64", (86,), (12, 2)), *release(VULKAN))
    assert (s.asked, s.attempts) == (["windows-vulkan", "windows-cpu"], ["app-b1-windows-x64-vulkan", "wx-cpu"])
    # an NVIDIA host with a driver the CUDA bundles take: its CUDA choice, Vulkan not asked for
    for host in (Host("linux", "arm64", (121,), (13, 0), gpu="intel"), Host("linux", "x64", (86,), (12, 8))):
        assert select(host, *release(VULKAN)).attempts == select(host, *release()).attempts
    # Linux below the floor: still nothing (the installer refuses Linux CUDA hosts a CPU bundle)
    assert select(Host("linux", "x64", (86,), (12, 2)), *release(VULKAN)).choice is None
    # Windows arm64: an Intel adapter alone does not route (the installer asks the loader there)
    assert select(Host("windows", "arm64", gpu="intel"), *release(VULKAN)).attempts == ["wa-cpu"]


def test_coverage_asks_about_vulkan_hosts_and_the_gate_about_vulkan_legs():
    rows = coverage(*release(VULKAN))
    vk = {(r.host.os, r.host.arch, r.host.gpu): r.choice for r in rows if r.host.gpu}
    assert vk == {
        ("linux", "x64", "intel"): "app-b1-linux-x64-vulkan",
        ("linux", "x64", "amd"): "app-b1-linux-x64-vulkan",
        ("linux", "arm64", "intel"): "la-cpu",
        ("linux", "arm64", "amd"): "la-cpu",
        ("windows", "x64", "intel"): "app-b1-windows-x64-vulkan",
        ("windows", "x64", "amd"): "app-b1-windows-x64-vulkan",
        ("windows", "arm64", "intel"): "wa-cpu",
        ("windows", "arm64", "amd"): "wa-cpu",
    }
    m = load_matrix(ROOT / "bundles")
    cpu = m.legs["linux-x64-cpu"]
    leg = m.legs["linux-x64-vulkan"].replace(promised=True)  # promised, as once its runner installs the SDK
    small = dataclasses.replace(m, legs={"linux-x64-cpu": cpu, "linux-x64-vulkan": leg})
    assert {(h.gpu, k) for h, k, name in claimed(small) if name == "linux-x64-vulkan"} == {
        ("intel", "linux-vulkan"),
        ("amd", "linux-vulkan"),
    }
    assert coverage_problems(small, *release(VULKAN)) == []
    assert coverage_problems(small, *release(RELEASE)) == [
        f"linux x64 (no NVIDIA GPU, {w}): gets lx-cpu (linux-cpu), though linux-x64-vulkan claims it as linux-vulkan"
        for w in ("an Intel GPU", "an AMD GPU without ROCm")
    ]


# -- the planned 21-leg matrix (bundlegraph.installer.planned): which class each NVIDIA host gets -------


def planned():
    from bundlegraph.installer.planned import planned_manifest, planned_sizes

    m = load_matrix(ROOT / "bundles")
    sizes = {k: (v.mb, v.source) for k, v in planned_sizes(m).items()}
    return planned_manifest(m), sizes


def got(host, man, sizes):
    s = select(host, man, None, sizes)
    tag = "app-b11642-"
    return [a.removeprefix(tag).rsplit(".", 2 if a.endswith(".tar.gz") else 1)[0] for a in s.attempts], s


def test_planned_matrix_gives_each_host_its_class_then_the_portable_then_the_older_line():
    man, sizes = planned()
    # RTX 3090 (sm_86), CUDA 13 driver: the narrowest class of each line, then its portable
    attempts, s = got(Host("linux", "x64", (86,), (13, 0)), man, sizes)
    assert attempts == [
        "linux-x64-cuda13-older",
        "linux-x64-cuda13-portable",
        "linux-x64-cuda12-older",
        "linux-x64-cuda12-portable",
    ]
    assert (s.download_mb, s.size_from) == (173.9, "estimated")
    # RTX 5090 (sm_120): the newer class; on a 12.8 driver only the cuda12 line
    assert got(Host("linux", "x64", (120,), (13, 0)), man, sizes)[0][0] == "linux-x64-cuda13-newer"
    assert got(Host("linux", "x64", (120,), (12, 8)), man, sizes)[0] == [
        "linux-x64-cuda12-newer",
        "linux-x64-cuda12-portable",
    ]
    # H100 (sm_90) is in no older class: the newer one
    assert got(Host("windows", "x64", (90,), (13, 0)), man, sizes)[0][0] == "windows-x64-cuda13-newer"
    # V100 (sm_70): CUDA 13 dropped it, so cuda12-older even on a CUDA 13 driver
    assert got(Host("linux", "x64", (70,), (13, 0)), man, sizes)[0] == [
        "linux-x64-cuda12-older",
        "linux-x64-cuda12-portable",
    ]


def test_planned_matrix_serves_maxwell_and_pascal_the_legacy_ptx_bundle():
    man, sizes = planned()
    for sm in (50, 52, 60, 61):
        for drv in ((12, 4), (12, 9), (13, 0)):
            for os_ in ("linux", "windows"):
                attempts, _s = got(Host(os_, "x64", (sm,), drv), man, sizes)
                assert attempts == [f"{os_}-x64-cuda12-legacy"], (sm, drv, os_, attempts)
    # sm_53/62 (Jetson Nano/TX2) and sm_37 are not promised by the legacy class
    assert got(Host("linux", "x64", (53,), (12, 4)), man, sizes)[0] == []
    # below the 12.4 floor: nothing on Linux, the CPU bundle on Windows x64
    assert got(Host("linux", "x64", (61,), (12, 2)), man, sizes)[0] == []
    assert got(Host("windows", "x64", (61,), (12, 2)), man, sizes)[0] == ["windows-x64-cpu"]


def test_coverage_reports_measured_sizes_from_the_index_over_estimates():
    m, idx = release()
    sized = ShaIndex(
        **HEAD,
        artifacts={
            k: (
                IndexEntry(kind=e.kind, sha256=e.sha256, source_commit=e.source_commit, size=90_680_399)
                if k == "la-bw"
                else e
            )
            for k, e in idx.artifacts.items()
        },
    )
    gb10 = Host("linux", "arm64", (121,), (13, 0))
    s = select(gb10, m, sized)
    assert (s.choice, s.download_mb, s.size_from) == ("la-bw", 90.7, "measured")
    s = select(gb10, m, sized, {"la-bw": (99.0, "estimated")})  # given sizes win: the caller merged them
    assert (s.download_mb, s.size_from) == (99.0, "estimated")
    assert select(Host("linux", "arm64", (121,), (13, 0)), m, idx).download_mb is None  # no size: unknown


def test_every_host_class_a_leg_claims_is_served_by_the_planned_release():
    """The coverage gate's question (:func:`coverage_problems`) asked of the release the specs
    plan: every claimed host class gets a bundle of the claiming leg's install kind; the legacy
    legs claim the SMs they state (PTX only: no SASS to claim by)."""
    from bundlegraph.installer.planned import planned_manifest

    m = load_matrix(ROOT / "bundles")
    hosts = {(h, leg) for h, _kind, leg in claimed(m)}
    for os_ in ("linux", "windows"):
        for sm in (50, 52, 60, 61):
            assert (Host(os_, "x64", (sm,), (12, 4)), f"{os_}-x64-cuda12-legacy") in hosts
    # x64: 38 per OS (legacy 4, cuda12 5+5+8, cuda13 4+5+7); arm64 8; 4 CPU (the Vulkan legs are not promised yet)
    assert len(hosts) == 88
    assert coverage_problems(m, planned_manifest(m), None) == []
