"""``GGML_CUDA_CUB_3DOT2`` as upstream sets it, with nothing downloaded at configure (issue 52 item 2):
the release's ``[[fetchcontent]]`` pin (NVIDIA's wheel ``nvidia-cuda-cccl==13.2.27``, CCCL 3.2.0)
serves ggml's own ``FetchContent_Declare(CCCL ...)`` block, read from the real llama.cpp tree, under
``FETCHCONTENT_FULLY_DISCONNECTED=ON``; CUDA 12.4's nvcc (the pinned Debian toolkit) then compiles
the CUB 3.2 top-k call ggml's ``top-k.cu`` makes, for an SM with SASS and for the legacy leg's
``compute_50``.

Time: the 12.4 toolkit as ``test_toolkit_debs.py`` (cold ~3 min, warm ~10 s), the wheel 3.6 MB
once, two compiles ~1 min."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import require_tools
from debskit import debs_toolkit

from bundlegraph.core import proc
from bundlegraph.core.errors import HashMismatch
from bundlegraph.pipeline.compile import fetchcontent
from bundlegraph.specs.loader import load_matrix

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]

TOPK = r"""
#include <cub/cub.cuh>
#if !(CCCL_MAJOR_VERSION >= 3 && CCCL_MINOR_VERSION >= 2)  // ggml's test for CUB_TOP_K_AVAILABLE
#error "not CCCL 3.2: the toolkit's own CCCL was found first"
#endif
#include <cuda/iterator>
// ggml/src/ggml-cuda/top-k.cu's top_k_cub (CUB 3.2's DeviceTopK), the reason ggml wants CCCL 3.2
void topk(const float * src, int * dst, int ncols, int k, cudaStream_t stream) {
    auto requirements = cuda::execution::require(cuda::execution::determinism::not_guaranteed,
                                                 cuda::execution::output_ordering::unsorted);
    auto env = cuda::std::execution::env{ cuda::stream_ref{ stream }, requirements };
    size_t bytes = 0;
    cub::DeviceTopK::MaxPairs(nullptr, bytes, src, cuda::discard_iterator(), cuda::make_counting_iterator(0), dst,
                              ncols, k, env);
}
"""


@pytest.fixture(scope="module")
def tk(tmp_path_factory):
    require_tools("apt-get", "dpkg-deb", "gcc", "g++")
    return debs_toolkit(tmp_path_factory.mktemp("debs"))


def _ggml_block(src: Path) -> str:
    """ggml-cuda's ``if (GGML_CUDA_CUB_3DOT2) ... FetchContent_MakeAvailable(CCCL) ... endif()``, as
    the pinned tree has it."""
    text = (src / "ggml" / "src" / "ggml-cuda" / "CMakeLists.txt").read_text(encoding="utf-8")
    m = re.search(
        r"^\s*if \(GGML_CUDA_CUB_3DOT2\)\n.*?FetchContent_MakeAvailable\(CCCL\)\n\s*endif\(\)", text, re.M | re.S
    )
    assert m, "the pinned tree's ggml-cuda no longer fetches CCCL as this test expects"
    assert "GIT_TAG        v3.2.0" in m[0]
    return m[0]


def test_the_pinned_wheel_serves_ggmls_cccl_fetch_offline(tk, real_input, tmp_path):
    sdist = real_input("llama-sdist", unpack=True)
    src = next(sdist.glob("*/vendor/llama.cpp"), None) or next(sdist.glob("vendor/llama.cpp"))
    (pin,) = load_matrix(ROOT / "bundles").release.fetchcontent
    assert (pin.name, pin.option, pin.version) == ("CCCL", "GGML_CUDA_CUB_3DOT2", "3.2.0")
    cache = tmp_path / "cache"
    folder = fetchcontent.prepare(pin, cache)
    assert folder == fetchcontent.source_dir(pin, cache) and (folder / "CMakeLists.txt").is_file()
    assert fetchcontent.prepare(pin, cache) == folder  # a second call finds it

    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "topk.cu").write_text(TOPK, encoding="utf-8")
    (proj / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.18)\nproject(t LANGUAGES CXX CUDA)\nset(CMAKE_CUDA_STANDARD 17)\n"
        + _ggml_block(src)
        + "\nadd_library(topk OBJECT topk.cu)\ntarget_link_libraries(topk PRIVATE CCCL::CCCL)\n",
        encoding="utf-8",
    )
    for archs in ("90", "50-virtual"):
        b = tmp_path / f"b{archs}"
        out = proc.run(
            [
                "cmake",
                "-S",
                str(proj),
                "-B",
                str(b),
                "-G",
                "Ninja",
                f"-DCMAKE_CUDA_COMPILER={tk.nvcc}",
                f"-DCMAKE_CUDA_ARCHITECTURES={archs}",
                "-DGGML_CUDA_CUB_3DOT2=ON",
                "-DFETCHCONTENT_FULLY_DISCONNECTED=ON",
                *(f"-D{k}={v}" for k, v in fetchcontent.source_dirs([pin], cache).items()),
            ],
            capture=True,
        ).output
        assert "Found CCCL: " in out and '(found suitable exact version "3.2.0' in out, out
        proc.run(["cmake", "--build", str(b)])
        assert list(b.rglob("topk.cu.o")), f"no object for {archs}"


def test_other_bytes_for_the_pin_are_refused_and_nothing_is_left(tmp_path):
    (pin,) = load_matrix(ROOT / "bundles").release.fetchcontent
    bad = pin.replace(sha256="0" * 64)
    with pytest.raises(HashMismatch, match=r"nvidia_cuda_cccl-13\.2\.27-.*expected sha256 0{64}"):
        fetchcontent.prepare(bad, tmp_path)
    assert not fetchcontent.source_dir(bad, tmp_path).exists()
    assert not any(p.name.endswith(".part") for p in (tmp_path / "fetchcontent").iterdir())
