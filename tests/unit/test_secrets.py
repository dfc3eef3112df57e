"""No secret meets build code, and none reaches a log or a record (issue 51): the allow-list of
the environment build code runs in, and the credentials of every form of ccache's remote storage
URL found, masked and checked."""

from __future__ import annotations

from pathlib import Path

import pytest

from bundlegraph.core import buildenv, remote_url
from bundlegraph.core.errors import SettingError
from bundlegraph.pipeline.compile import compiler_cache

JOB = {
    "PATH": "/usr/bin",
    "HOME": "/home/runner",
    "TMPDIR": "/tmp",
    "LANG": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
    "SOURCE_DATE_EPOCH": "1700000000",
    "CCACHE_DIR": "/w/.ccache",
    "CUDA_PATH": "/usr/local/cuda",
    "VULKAN_SDK": "/opt/vulkan",
    "BUNDLEGRAPH_JOBS": "4",
    "BUNDLEGRAPH_CACHE_REMOTE_MODE": "read-only",
    # never
    "AZURE_CLIENT_SECRET": "s1",
    "AZURE_CLIENT_ID": "s2",
    "BUNDLEGRAPH_SIGN_COMMAND": '["signer"]',
    "BUNDLEGRAPH_SIGN_SECRETS": "AZURE_CLIENT_SECRET",
    "BUNDLEGRAPH_CACHE_REMOTE": "http://u:p@h/c",
    "BUNDLEGRAPH_EXTRA_TOKEN": "s3",
    "CCACHE_REMOTE_STORAGE": "http://u:p@h/c",
    "GITHUB_TOKEN": "s4",
    "ACTIONS_RUNTIME_TOKEN": "s5",
    "ACTIONS_ID_TOKEN_REQUEST_TOKEN": "s6",
    "ACTIONS_ID_TOKEN_REQUEST_URL": "https://x",
    # not listed
    "CFLAGS": "-O0",
    "http_proxy": "http://u:p@proxy",
    "SSH_AUTH_SOCK": "/tmp/agent",
}


def test_build_code_gets_the_allowed_names_and_never_a_secret():
    got = buildenv.allowed_env(JOB, windows=False)
    assert sorted(got) == [
        "BUNDLEGRAPH_CACHE_REMOTE_MODE",
        "BUNDLEGRAPH_JOBS",
        "CCACHE_DIR",
        "CUDA_PATH",
        "HOME",
        "LANG",
        "LC_ALL",
        "PATH",
        "SOURCE_DATE_EPOCH",
        "TMPDIR",
        "VULKAN_SDK",
    ]
    assert got["PATH"] == "/usr/bin"


def test_windows_names_pass_whatever_their_case_and_secrets_never_do():
    """The MSVC developer environment as ``set`` prints it (``Path``, ``VCToolsInstallDir``) and as
    ``dict(os.environ)`` holds it (upper case): both pass, spelt as they came; a secret in any
    case does not."""
    dev = {
        "Path": r"C:\\VS\\bin;C:\\Windows",
        "SystemRoot": r"C:\\Windows",
        "ComSpec": r"C:\\Windows\\system32\\cmd.exe",
        "PATHEXT": ".EXE",
        "VCToolsInstallDir": r"C:\\VS\\VC\\Tools\\MSVC\\14.44\\",
        "VCTOOLSVERSION": "14.44.35207",
        "INCLUDE": r"C:\\VS\\include",
        "LIB": r"C:\\VS\\lib",
        "LIBPATH": r"C:\\VS\\lib",
        "VSCMD_ARG_TGT_ARCH": "arm64",
        "WindowsSdkDir": r"C:\\Kits\\10\\",
        "WindowsSDKVersion": "10.0.26100.0\\",
        "ProgramFiles(x86)": r"C:\\Program Files (x86)",
        "CUDA_PATH_V13_0": r"C:\\cuda",
        "Azure_Client_Secret": "s1",
        "github_token": "s2",
        "Actions_Runtime_Token": "s3",
    }
    got = buildenv.allowed_env(dev, windows=True)
    assert sorted(got) == sorted(k for k in dev if not k.lower().startswith(("azure", "github", "actions")))
    # the same names on a POSIX host: only the exact ones pass (names are case-sensitive there)
    posix = buildenv.allowed_env(dev, windows=False)
    assert sorted(posix) == ["CUDA_PATH_V13_0"]


@pytest.mark.parametrize(
    ("url", "redacted", "secrets"),
    [
        (
            "http://ci:s3cret@cache.example:8080/c|layout=flat",
            "http://***@cache.example:8080/c|layout=flat",
            ["ci:s3cret", "s3cret"],
        ),
        ("https://TOKEN123@cache.example/c", "https://***@cache.example/c", ["TOKEN123"]),
        ("redis://PASSWORD9@cache:6379", "redis://***@cache:6379", ["PASSWORD9"]),
        ("redis://u:p%40ss@cache:6379/0", "redis://***@cache:6379/0", ["u:p%40ss", "p%40ss", "p@ss", "u:p@ss"]),
        (
            "http://cache/c|layout=flat|bearer-token=BEARER7|read-only=true",
            "http://cache/c|layout=flat|bearer-token=***|read-only=true",
            ["BEARER7"],
        ),
        (
            "https://cache/c|header=X-Api-Key=KEY5|connect-timeout=100",
            "https://cache/c|header=***|connect-timeout=100",
            ["X-Api-Key=KEY5", "KEY5"],
        ),
        ("https://cache/c|unknown-attr=ODD1", "https://cache/c|unknown-attr=***", ["ODD1"]),
        ("https://cache/c|BAREWORD", "https://cache/c|***", ["BAREWORD"]),
        ("https://cache/c?token=QTOK&db=1", "https://cache/c?token=***&db=1", ["QTOK"]),
        ("redis+unix:/run/redis.sock?db=2", "redis+unix:/run/redis.sock?db=2", []),
        (
            "http://a:PASSA@one/c|layout=flat redis://PASSB@two redis://b:p@three",
            "http://***@one/c|layout=flat redis://***@two redis://***@three",
            ["a:PASSA", "PASSA", "PASSB"],  # "b:p" and "p": too short to mask in output
        ),
        # a header's value split off by a space: not a URL, masked whole
        ("https://cache/c|header=Authorization=Bearer TOKX", "https://cache/c|header=*** ***", None),
        ("redis://cache:6379", "redis://cache:6379", []),
        ("", "", []),
    ],
)
def test_every_form_of_remote_storage_url_is_redacted_and_its_secrets_listed(url, redacted, secrets):
    assert remote_url.redact(url) == redacted
    found = remote_url.secrets_of(url)
    if secrets is not None:
        assert sorted(found) == sorted(secrets)
    for s in found:
        assert s not in remote_url.redact(url).replace("***", "")
    assert found == sorted(found, key=lambda s: (-len(s), s))  # longest first: no partial mask


def test_a_token_as_the_user_of_an_http_url_is_refused_naming_no_secret():
    with pytest.raises(SettingError) as e:
        compiler_cache.remote_storage({"BUNDLEGRAPH_CACHE_REMOTE": "https://TOKEN123@cache.example/c|layout=flat"})
    assert "TOKEN123" not in str(e.value)
    assert str(e.value) == (
        "BUNDLEGRAPH_CACHE_REMOTE: https://***@cache.example/c|layout=flat: ccache's HTTP storage takes a user "
        "part only as user:password; give a token as |bearer-token=TOKEN instead"
    )
    assert remote_url.problems("redis://TOKEN123@cache:6379") == []


def test_the_build_environment_names_the_private_config_and_never_the_url(tmp_path, monkeypatch):
    monkeypatch.setenv("BUNDLEGRAPH_WORKDIR", str(tmp_path))
    ccache = {"name": "ccache", "path": "/usr/bin/ccache"}
    base = buildenv.allowed_env(JOB, windows=False) | {"CCACHE_REMOTE_STORAGE": "http://u:p@h/c"}
    remote = "http://u:p@h/c|layout=flat"
    with compiler_cache.remote_config(ccache, remote) as conf:
        assert conf is not None and conf.read_text(encoding="utf-8") == f"remote_storage = {remote}\n"
        assert conf.stat().st_mode & 0o777 == 0o600 and conf.parent.stat().st_mode & 0o777 == 0o700
        assert not conf.is_relative_to(tmp_path)
        env = compiler_cache.build_env(ccache, base, tmp_path / "stats.log", conf)
        assert env["CCACHE_CONFIGPATH"] == str(conf)
        assert "CCACHE_REMOTE_STORAGE" not in env and all("u:p" not in v for v in env.values())
    assert not conf.exists() and not conf.parent.exists()
    with compiler_cache.remote_config(ccache, "") as none:
        assert none is None
    with compiler_cache.remote_config({"name": "sccache"}, remote) as none:
        assert none is None
    assert compiler_cache.writes_remote(remote) and not compiler_cache.writes_remote(remote + "|read-only=true")


def test_the_compiler_cache_record_names_the_remote_redacted(tmp_path):
    stats = compiler_cache.build_stats(
        {"name": "ccache", "path": "/nonexistent/ccache", "version": "ccache version 4.14.2"},
        {},
        tmp_path / "absent.log",
        "http://cache/c|layout=flat|bearer-token=BEARER7",
    )
    assert stats is not None and stats["remote"] == "http://cache/c|layout=flat|bearer-token=***"
    assert "BEARER7" not in compiler_cache.describe(stats)


def test_the_toolchain_environment_is_the_allow_list(monkeypatch):
    from bundlegraph.toolchains import get as get_toolchain

    monkeypatch.setenv("AZURE_CLIENT_SECRET", "s1")
    monkeypatch.setenv("BUNDLEGRAPH_CACHE_REMOTE", "http://u:p@h/c")
    env = get_toolchain("gcc-linux-x86_64").environment()
    assert "AZURE_CLIENT_SECRET" not in env and "BUNDLEGRAPH_CACHE_REMOTE" not in env and "PATH" in env
    assert Path(__file__).is_file()


def test_a_bad_remote_url_is_named_without_its_credential():
    with pytest.raises(SettingError) as e:
        compiler_cache.remote_storage({"BUNDLEGRAPH_CACHE_REMOTE": "ftp://ci:PW4SECRET@cache/c"})
    assert str(e.value).startswith("BUNDLEGRAPH_CACHE_REMOTE='ftp://***@cache/c': expected a URL starting with")
