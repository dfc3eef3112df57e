"""The legacy leg's kernels, compiled for real (issue 52 item 5): ``tests/data/ptx/k.cu`` to
``compute_50``/``compute_61`` PTX by the pinned CUDA 12.4 nvcc (``bundles/locks/cuda-12.4-debs.toml``,
the leg's toolkit now) and by NVRTC 12.8 (PyPI ``nvidia-cuda-nvrtc-cu12``, the 12.8 line the leg
used before), each packed by CUDA 12.4's ``fatbinary`` into an ELF ``libggml-cuda.so`` as
``tests/data/ptx/README.md`` says. Verify, with the leg's own policy, passes the 12.4 library and
refuses the 12.8 one, naming the file, the PTX ISA and the driver.

Time: the 12.4 toolkit as ``test_toolkit_debs.py`` (cold ~3 min, warm ~10 s); NVRTC's wheel 88 MB once."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from conftest import require_input, require_tools
from debskit import debs_toolkit

from bundlegraph.core import proc
from bundlegraph.specs.loader import load_matrix
from bundlegraph.verification import verify_path
from bundlegraph.verification.policy import policy_from_spec

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "ptx"
LEG = "linux-x64-cuda12-legacy"


@pytest.fixture(scope="module")
def tk(tmp_path_factory):
    require_tools("apt-get", "dpkg-deb", "gcc")
    return debs_toolkit(tmp_path_factory.mktemp("debs"))


def _library(tk, ptx: dict[int, Path], out: Path) -> Path:
    """``out/libggml-cuda.so``: the PTX files packed by fatbinary 12.4 and embedded as nvcc's host
    stub embeds a fatbin (``tests/data/ptx/carrier.c``)."""
    images = [f"--image3=kind=ptx,sm={sm},file={p}" for sm, p in sorted(ptx.items())]
    fatbinary = str(Path(tk.nvcc).parent / "fatbinary")
    proc.run([fatbinary, "-64", f"--create={out}/ggml-cuda.fatbin", f"--embedded-fatbin={out}/fatbin.c", *images])
    lib = out / "libggml-cuda.so"
    include = Path(tk.nvcc).parent.parent / "include"
    proc.run(["gcc", "-shared", "-fPIC", "-O2", f"-I{include}", f"-I{out}", str(DATA / "carrier.c"), "-o", str(lib)])
    return lib


def _version(p: Path) -> str:
    m = re.search(r"^\.version (\S+)$", p.read_text(), re.M)
    assert m, p
    return m[1]


def test_verify_passes_cuda_12_4s_legacy_ptx_and_refuses_cuda_12_8s(tk, tmp_path):
    nvrtc = require_input("nvrtc-12.8", unpack=True) / "nvidia" / "cuda_nvrtc" / "lib" / "libnvrtc.so.12"
    policy = policy_from_spec(load_matrix(ROOT / "bundles").legs[LEG], built_tree=True)
    assert policy.driver_floor == "12.4"
    made: dict[str, Path] = {}
    for name in ("cuda12.4", "nvrtc12.8"):
        d = tmp_path / name
        d.mkdir()
        ptx = {}
        for sm in (50, 61):
            ptx[sm] = d / f"compute_{sm}.ptx"
            if name == "cuda12.4":
                proc.run([tk.nvcc, "-ptx", f"-arch=compute_{sm}", str(DATA / "k.cu"), "-o", str(ptx[sm])])
            else:
                kit = ROOT / "tests" / "nvrtckit.py"
                proc.run([sys.executable, str(kit), str(nvrtc), str(DATA / "k.cu"), f"compute_{sm}", str(ptx[sm])])
            # the same PTX ISA as the committed data the unit tests read
            assert (
                _version(ptx[sm]) == _version(DATA / name / f"compute_{sm}.ptx") == {"cuda12.4": "8.4"}.get(name, "8.7")
            )
        made[name] = _library(tk, ptx, d)
        (d / "ggml-cuda.fatbin").unlink()  # only the library is the built tree
        (d / "fatbin.c").unlink()
        for p in ptx.values():
            p.unlink()
    ok = verify_path(str(made["cuda12.4"].parent), policy)
    assert ok.ok, ok.lines()
    assert ok.bundle["ptx_isa"]["files"] == {"libggml-cuda.so": {"50": ["8.4"], "61": ["8.4"]}}
    bad = verify_path(str(made["nvrtc12.8"].parent), policy)
    assert bad.lines() == [
        f"libggml-cuda.so: ptx-isa: compute_{sm} PTX is ISA 8.7, which needs CUDA 12.8; the leg is selected for "
        "drivers from CUDA 12.4, which reads PTX ISA up to 8.4: build it with a toolkit of CUDA 12.4 or older, or "
        "raise its driver floor"
        for sm in (50, 61)
    ]
