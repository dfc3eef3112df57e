"""A test that needs a download fails -- never skips -- when it cannot have it: offline, with an
empty cache, the run of a test that needs NVIDIA's Windows cudart wheel ends as a failure whose
message names the input and the command that fetches it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_offline_with_an_empty_cache_a_test_fails_saying_what_to_fetch(tmp_path):
    env = dict(os.environ)
    env.update(
        BUNDLEGRAPH_CACHE=str(tmp_path / "empty-cache"),
        PIP_CONFIG_FILE=os.devnull,
        PIP_FIND_LINKS="",
        PIP_INDEX_URL="http://127.0.0.1:9/simple",
        PIP_EXTRA_INDEX_URL="",
        PIP_RETRIES="0",
        PIP_DEFAULT_TIMEOUT="3",
    )  # a registry that refuses every connection
    node = "tests/integration/test_verify_sign_elf.py::test_real_nvidia_signature"
    r = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", node],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    out = r.stdout + r.stderr
    assert r.returncode == 1 and "1 failed" in out and "skipped" not in out, out[-3000:]
    assert (
        "test input 'cudart-win-arm64' (nvidia-cuda-runtime==13.5.37) is not in the cache "
        f"({tmp_path / 'empty-cache'}) and could not be fetched"
    ) in out, out[-3000:]
    assert "tests/realinputs.py cudart-win-arm64" in out
    assert not list((tmp_path / "empty-cache").rglob("*.whl")), "nothing half-fetched is left as an input"


def test_a_skip_that_is_not_a_host_absence_fails_the_run(tmp_path):
    """The skip policy of conftest.py: a skip whose reason does not start with 'this host' turns
    an otherwise green run red, and the run ends with the skips counted by reason."""
    # the probe lives outside the checkout (a pytest started beside this one, another xdist
    # worker's, checks that the checkout gains no file); the suite's conftest is loaded as a plugin
    probe = tmp_path / "test_skip_policy_probe.py"
    probe.write_text(
        "import pytest\n\n"
        "def test_ok():\n    pass\n\n"
        "def test_host():\n    pytest.skip('this host has no NVIDIA GPU')\n\n"
        "def test_lazy():\n    pytest.skip('the wheel is not cached')\n"
    )
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT / "tests"), os.environ.get("PYTHONPATH")]))
    )
    r = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "conftest", str(probe)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    out = r.stdout + r.stderr
    assert r.returncode == 1, out
    assert "1 passed, 2 skipped" in out
    assert "   1  this host has no NVIDIA GPU" in out and "   1  the wheel is not cached" in out
    assert "FAILED: 1 skip reason(s) are not an absence on this host" in out
