"""Real artifacts the tests use, fetched with the ordinary clients (``pip download``,
``npm pack``), pinned by sha256 and cached under ``$BUNDLEGRAPH_CACHE/test-inputs`` (default
``~/.cache/bundlegraph``). A hash mismatch fails closed. Pins come from ``../shared/REAL-INPUTS.md``.

Use :func:`fetch` (returns the verified archive) or :func:`unpacked` (a cached extraction).
Tests skip (never pass) when the registry cannot be reached.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from bundlegraph import paths
from bundlegraph.extract import extract
from bundlegraph.fsutil import atomic_dir, locked, sha256_file


@dataclass(frozen=True)
class Input:
    """``client``: ``pip`` or ``npm``; ``spec``: requirement / package@version;
    ``platform``: pip ``--platform`` tag (wheels); ``sha256``: of the fetched file."""

    client: str
    spec: str
    sha256: str
    platform: str | None = None


INPUTS: dict[str, Input] = {
    "llama-sdist": Input("pip-sdist", "llama-cpp-python==0.3.36",
                         "832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e"),
    "npm-win-arm64": Input("npm", "@node-llama-cpp/win-arm64@3.21.1",
                           "458c8c6de4463b5fde16b1fbc69e63a7e878b227ed9614a0a3648d9b40bf2ccb"),
    "npm-win-x64-cuda": Input("npm", "@node-llama-cpp/win-x64-cuda@3.21.1",
                              "7824fb3d391d32194f3ee537d70ab3e334030cca71a85b855c368f36b251dc83"),
    "cudart-win-arm64": Input("pip", "nvidia-cuda-runtime==13.5.37",
                              "dcbcb895bc2098b4a6784b12b0a1ceafb09359dc95f4f92ea688ac935a106877", "win_arm64"),
    "cudart-win-amd64": Input("pip", "nvidia-cuda-runtime==13.5.37",
                              "f225d3fa5ea6bfbb58fc4979ef72375cbe661d9107f0d8a4ff22cc151525e4a9", "win_amd64"),
    "nvcc-linux-x86_64": Input("pip", "nvidia-cuda-nvcc==13.5.37",
                               "f5c4f7ead5d964fb4af42bbf1e6d3ec3c1e6e9d83b53749f691d387e7fcaa3a7", "manylinux2014_x86_64"),
    "cudart-linux-aarch64": Input("pip", "nvidia-cuda-runtime==13.5.37",
                                  "de2dc5a7367974228b0a69588a9acc9340d3768bef1bf38bf0801eb08497cd2d", "manylinux2014_aarch64"),
}


def _root() -> Path:
    return paths.cache_root() / "test-inputs"


class Unreachable(Exception):
    """The registry could not be reached (tests skip on this, never pass)."""


def fetch(name: str) -> Path:
    """The verified file of input ``name`` (downloaded once, then cached)."""
    inp = INPUTS[name]
    dest_dir = _root() / "files" / inp.sha256
    with locked(_root() / f"{inp.sha256}.lock", what=f"test input {name}"):
        if dest_dir.is_dir():
            files = list(dest_dir.iterdir())
            if len(files) == 1 and sha256_file(files[0]) == inp.sha256:
                return files[0]
            shutil.rmtree(dest_dir)
        with tempfile.TemporaryDirectory(prefix="bg-input-") as d:
            if inp.client == "npm":
                argv = ["npm", "pack", "--silent", "--pack-destination", d, inp.spec]
            elif inp.client == "pip-sdist":
                argv = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary",
                        inp.spec.split("==")[0], "-d", d, inp.spec]
            else:
                argv = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
                        "--python-version", "3.12", "--platform", inp.platform or "", "-d", d, inp.spec]
            r = subprocess.run(argv, capture_output=True, text=True, cwd=d)
            files = [p for p in Path(d).iterdir() if p.is_file()]
            if r.returncode != 0 or len(files) != 1:
                raise Unreachable(f"{' '.join(argv)} failed: {r.stderr[-500:]}")
            got = sha256_file(files[0])
            if got != inp.sha256:
                raise AssertionError(f"{name}: {files[0].name} has sha256 {got}, pinned {inp.sha256}")
            dest_dir.mkdir(parents=True, exist_ok=True)
            target = dest_dir / files[0].name
            shutil.move(str(files[0]), target)
            return target


def unpacked(name: str) -> Path:
    """A cached extraction of input ``name`` (wheels and npm .tgz alike). Read-only by
    convention: copy before changing anything."""
    archive = fetch(name)
    out = _root() / "unpacked" / INPUTS[name].sha256
    with locked(_root() / f"{INPUTS[name].sha256}.unpack.lock", what=f"test input {name}"):
        if not (out / ".complete").exists():
            with atomic_dir(out) as tmp:
                extract(archive, tmp)
                (tmp / ".complete").write_text("ok")
    return out


if __name__ == "__main__":  # fetch everything named on the command line
    for n in sys.argv[1:] or list(INPUTS):
        print(n, fetch(n))
