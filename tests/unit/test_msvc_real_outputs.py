"""The Windows-only MSVC code on real outputs of Microsoft's programs, published by others
(``tests/data/windows/msvc``, each file's source in its ``SOURCES.md``; none written by hand):
vswhere's JSON and the ``set`` output of developer command prompts."""

from pathlib import Path

import pytest

from bundlegraph.core.errors import BundleGraphError, ToolMissing
from bundlegraph.toolchains import msvc
from bundlegraph.toolchains.cuda import msc_ver_of

MSVC = Path(__file__).resolve().parents[1] / "data" / "windows" / "msvc"
VSWHERE_2022 = MSVC / "vswhere-vs2022-17.5-community-flutter.json"
SET_2022_X64 = MSVC / "devprompt-vs2022-17.10-x64-set-hoiv-llama.txt"
SET_2017_X64 = MSVC / "devprompt-vs2017-15.0-x64-set-slickedit.txt"


def _text(p: Path) -> str:
    return p.read_text(encoding="utf-8").replace("\r\n", "\n")


def test_every_fixture_cites_its_source():
    sources = _text(MSVC / "SOURCES.md")
    for f in MSVC.iterdir():
        if f.name != "SOURCES.md":
            assert f"## {f.name}" in sources, f"{f.name} has no entry in SOURCES.md"


def test_vswhere_json_gives_the_installation_and_its_vcvarsall():
    inst = msvc.pick_installation(_text(VSWHERE_2022), "arm64")
    assert inst == r"C:\Program Files\Microsoft Visual Studio\2022\Community"
    assert (
        msvc.vcvarsall_of(inst)
        == r"C:\Program Files\Microsoft Visual Studio\2022\Community\VC\Auxiliary\Build\vcvarsall.bat"
    )


def test_vswhere_is_asked_for_the_target_tools_as_json():
    argv = msvc.vswhere_argv(r"C:\Program Files (x86)\Microsoft Visual Studio\Installer\vswhere.exe", "arm64")
    assert argv[argv.index("-requires") + 1] == "Microsoft.VisualStudio.Component.VC.Tools.ARM64"
    assert argv[argv.index("-format") + 1] == "json" and "-latest" in argv and "-utf8" in argv


def test_vswhere_finding_nothing_or_printing_no_json_is_refused_with_the_reason():
    with pytest.raises(ToolMissing, match="no Visual Studio with Microsoft.VisualStudio.Component.VC.Tools.ARM64"):
        msvc.pick_installation("[]\n", "arm64")
    with pytest.raises(BundleGraphError, match="printed no JSON.*Visual Studio Locator"):
        msvc.pick_installation("Visual Studio Locator version 3.1.7 [query version 3.5.2]\n", "arm64")
    incomplete = _text(VSWHERE_2022).replace('"isComplete": true', '"isComplete": false')
    with pytest.raises(
        BundleGraphError, match="Visual Studio Community 2022 17.5.33530.505 is not completely installed"
    ):
        msvc.pick_installation(incomplete, "x64")


def test_a_vs2022_x64_prompt_is_the_amd64_shell_and_not_the_arm64_cross_one():
    env = msvc.parse_set_output(_text(SET_2022_X64))
    assert env["VCToolsVersion"] == "14.40.33807" and env["VSCMD_VER"] == "17.10.4"
    assert env["VCToolsInstallDir"].endswith("\\VC\\Tools\\MSVC\\14.40.33807\\")
    assert ";" in env["Path"] and env["Path"].count("\\") > 10  # the long Windows Path, intact
    assert msvc.shell_problems(env, "amd64") == []
    probs = msvc.shell_problems(env, "amd64_arm64")
    assert probs == ["this developer shell targets x64->x64; the leg needs x64->arm64 ('vcvarsall.bat amd64_arm64')"]
    assert msvc.key_env(env) == {
        "VCToolsVersion": "14.40.33807",
        "WindowsSDKVersion": "10.0.22621.0\\",
        "VSCMD_ARG_HOST_ARCH": "x64",
        "VSCMD_ARG_TGT_ARCH": "x64",
        "VSCMD_VER": "17.10.4",
    }
    assert msc_ver_of(env["VCToolsVersion"]) == 1940


def test_a_crlf_set_output_parses_the_same():
    text = _text(SET_2022_X64)
    assert msvc.parse_set_output(text.replace("\n", "\r\n")) == msvc.parse_set_output(text)


def test_a_vs2017_15_0_prompt_lacks_vctoolsversion_and_says_so():
    env = msvc.parse_set_output(_text(SET_2017_X64))
    assert env["VSCMD_VER"] == "15.0.26228.4" and "VCToolsVersion" not in env
    assert msvc.shell_problems(env, "amd64") == [
        "VCToolsVersion is not set (Visual Studio 15.0.26228.4): nvcc's supported MSVC range cannot be checked; "
        "use Visual Studio 2022"
    ]


def test_names_are_read_as_windows_reads_them_whatever_their_case():
    """``set`` prints ``Path=``; ``dict(os.environ)`` on Windows holds ``VCTOOLSINSTALLDIR``."""
    env = msvc.parse_set_output(_text(SET_2022_X64))
    assert "Path" in env and "PATH" not in env
    upper = {k.upper(): v for k, v in env.items()}  # what dict(os.environ) gives inside that prompt
    for e in (env, upper):
        c = msvc.canonical(e)
        assert c["PATH"] == env["Path"] and c["VCToolsInstallDir"] == env["VCToolsInstallDir"]
        assert msvc.shell_problems(e, "amd64") == [] and msvc.key_env(e)["VCToolsVersion"] == "14.40.33807"
