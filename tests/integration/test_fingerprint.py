"""The release's fingerprint (``coverage.fingerprint``) through the real graph on the stand-in:
configure stamps it into BUILD_TARGET (minillama's ``src/build-info.c.in``, as llama.cpp's
``common/build-info.cpp.in``), the built binaries hold it and print it, ``verify`` passes them
and refuses a binary without it as unbranded; the check itself on a real llama.cpp DLL. Also
``bundlegraph plan`` naming the bundle a coverage rule misses before anything builds.

Time: about 20 s (one native x86_64 CPU leg of minillama configured and built once; the real
llama.cpp linux-x64-cpu leg configured and one object of it compiled)."""

from __future__ import annotations

import shutil
import subprocess

import graphrun
from conftest import linux_only, require_input, require_tools

from bundlegraph.checks.brand import BUILD_INFO_LINE, WHOLE
from bundlegraph.verification.policy import VerifyPolicy
from bundlegraph.verification.run import verify_path

LEG = "mini-linux-x64-cpu"
MARK = "Compiled by the bundlegraph tests"

pytestmark = linux_only


def test_configure_stamps_the_fingerprint_and_verify_refuses_an_unbranded_binary(tmp_path):
    require_tools("gcc", "g++")
    bundles, work = graphrun.standin_tree(tmp_path)
    rel = bundles / "release.toml"
    rel.write_text(
        rel.read_text().replace(
            "[[coverage.required]]", f'[coverage]\nfingerprint = "{MARK}"\n\n[[coverage.required]]', 1
        )
    )
    r = graphrun.doit([f"package:{LEG}"], bundles=bundles, workdir=work, timeout=600)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-3000:]
    ran = graphrun.executed(r.stdout)
    assert {f"configure:{LEG}", f"verify:{LEG}", f"package:{LEG}"} <= set(ran), ran  # package verifies the archive
    binaries = work / "build" / LEG / "cmake" / "bin"
    log = (work / "build" / LEG / "logs" / "configure.log").read_text()
    assert f"bundlegraph: BUILD_TARGET stamped: Linux x86_64 ({MARK})" in log, log[-3000:]
    base = binaries / "libggml-base.so"
    data = base.read_bytes()
    assert BUILD_INFO_LINE in data and f"Linux x86_64 ({MARK})".encode() in data
    out = subprocess.run([str(binaries / "llama-cli"), "--version"], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0 and f" for Linux x86_64 ({MARK})\n" in out.stdout, out.stdout
    # the check on these real binaries: the stamped ones pass, a fingerprint they lack is refused by file
    ok = verify_path(binaries, VerifyPolicy(fingerprint=MARK))
    assert ok.ok, ok.lines()
    bad = verify_path(binaries, VerifyPolicy(fingerprint="Compiled by someone else"))
    assert [f.file for f in bad.failures] == ["libggml-base.so"], bad.lines()
    assert bad.failures[0].check == "brand" and bad.failures[0].reason.startswith("unbranded: it links")
    # as a finished bundle (an info file to check): no binary holding it is refused as well
    whole = verify_path(binaries, VerifyPolicy(fingerprint="Compiled by someone else", info_file="BUNDLE_INFO.json"))
    assert [f.file for f in whole.failures] == ["libggml-base.so", WHOLE], whole.lines()


def test_the_real_release_stamps_real_llama_cpp(workdir, tmp_path):
    """The real linux-x64-cpu leg of bundles/, its release declaring the fork's fingerprint, on
    real llama.cpp: configure stamps BUILD_TARGET, and build-info's object, compiled through the
    build task, holds the fingerprint beside the line that prints it."""
    require_tools("gcc", "g++")
    require_input("llama-sdist")
    bundles = tmp_path / "bundles"
    shutil.copytree(graphrun.ROOT / "bundles", bundles)
    rel = bundles / "release.toml"
    rel.write_text(
        rel.read_text().replace("[coverage]\n", '[coverage]\nfingerprint = "Compiled by the Unsloth team"\n', 1)
    )
    obj = "common/CMakeFiles/llama-common-base.dir/build-info.cpp.o"
    r = graphrun.doit(["build:linux-x64-cpu", f"build_targets={obj}"], bundles=bundles, workdir=workdir, timeout=600)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
    build = workdir / "build" / "linux-x64-cpu"
    log = (build / "logs" / "configure.log").read_text()
    assert "bundlegraph: BUILD_TARGET stamped: Linux x86_64 (Compiled by the Unsloth team)" in log, log[-3000:]
    data = (build / "cmake" / obj).read_bytes()
    assert b"Linux x86_64 (Compiled by the Unsloth team)" in data and BUILD_INFO_LINE in data


def test_a_real_llama_cpp_dll_without_the_fingerprint_is_unbranded(tmp_path):
    """node-llama-cpp's Windows x64 build of llama.cpp (MSVC 19.44), read by verify's own reader:
    llama-common.dll links build-info and holds no fingerprint; ggml-base.dll links none and is
    not judged; as a finished bundle, no binary holding it is refused too."""
    d = require_input("npm-win-x64-cuda", unpack=True) / "package" / "bins" / "win-x64-cuda"
    for n in ("llama-common.dll", "ggml-base.dll"):
        shutil.copy(d / n, tmp_path / n)

    def brand(policy: VerifyPolicy) -> list:  # the other rows judge the two DLLs without the rest
        return [f for f in verify_path(tmp_path, policy).failures if f.check == "brand"]

    r = brand(VerifyPolicy(fingerprint="Compiled by the Unsloth team"))
    assert [f.file for f in r] == ["llama-common.dll"], r
    assert r[0].reason.startswith("unbranded: it links llama.cpp's build-info")
    whole = brand(VerifyPolicy(fingerprint="Compiled by the Unsloth team", info_file="X.json"))
    assert [f.file for f in whole] == ["llama-common.dll", WHOLE], whole
    assert "none of its 2 binaries holds" in whole[1].reason
    # the same bytes with a string its build-info does hold (its compiler) pass
    assert brand(VerifyPolicy(fingerprint="MSVC 19.44.35228.0", info_file="X.json")) == []


def test_plan_names_the_bundle_a_rule_misses_before_anything_builds(tmp_path):
    bundles, work = graphrun.standin_tree(tmp_path)
    (bundles / f"{LEG}.toml").unlink()
    rel = bundles / "release.toml"
    rel.write_text(rel.read_text().replace(f', "{LEG}"]', "]"))
    r = graphrun.cli(["plan"], bundles=bundles, workdir=work)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert "the rules are broken (1 problem(s)); publish refuses" in r.stdout, r.stdout[:3000]
    assert (
        "- coverage.required[0]: app-b42-linux-x64-cpu.tar.gz is missing (profile cpu on linux-x64 is required)"
        in r.stdout
    )
