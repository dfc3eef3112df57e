"""The Debian CUDA 12.4 toolkit (``bundles/locks/cuda-12.4-debs.toml``, ``source = "debs"``) for
tests and benches: a leg spec made from the real ``linux-x64-cuda13-portable`` with CUDA 12.4, the
debs lock and the archs asked for, its component set, and the installed toolkit (fetched and
extracted once into the shared cache: 1.26 GB of .debs, ~1 min to extract on a cold cache), and
a one-package lock of its smallest row for the tests of the lock reader and the fetcher."""

from __future__ import annotations

import shutil
from pathlib import Path

from bundlegraph.backends.cuda.toolkit_set import component_set
from bundlegraph.specs.loader import load_matrix
from bundlegraph.toolchains.cuda import CudaToolkit
from bundlegraph.toolkit.identity import ComponentSet
from bundlegraph.toolkit.install import install
from bundlegraph.toolkit.ref import ref_for_set

ROOT = Path(__file__).resolve().parents[1]
BASE = "linux-x64-cuda13-portable"
LOCK = "locks/cuda-12.4-debs.toml"


CUB_SHA = "4a7e7c24ef2994140e47dba59507db60e281f968f17c18cf1cadc9c27c17c26b"
CUB_LOCK = f"""version = 1
[[package]]
name = "libcub-dev"
version = "2.3.2-2"
architecture = "all"
suite = "trixie"
sha256 = "{CUB_SHA}"
size = 290612
"""
"""A debs lock of one small real package: ``libcub-dev`` 2.3.2-2 from Debian 13 (headers only,
290,612 bytes), the row :data:`LOCK` pins."""


RANKS = {"legacy": 90, "older": 30, "newer": 20, "portable": 60}
"""A rank per class for the stand-in legs (lower wins a tie; the real legs' ranks are f-cudalegs')."""


def debs_leg(bundles: Path, leg: str, archs: list[str], klass: str = "older") -> Path:
    """Write ``bundles/<leg>.toml``: the real CUDA 13 x64 leg turned into a CUDA 12.4 ``debs`` leg
    with ``archs`` (a ``cuda12-<klass>``-like profile). ``bundles`` is a private copy."""
    text = (ROOT / "bundles" / f"{BASE}.toml").read_text(encoding="utf-8")
    quoted = ", ".join(f'"{a}"' for a in archs)
    for old, new in (
        (f'id = "{BASE}"', f'id = "{leg}"'),
        ('name = "cuda13-portable"', f'name = "cuda12-{klass}"'),
        ('line = "cuda13"', 'line = "cuda12"'),
        ('klass = "portable"', f'klass = "{klass}"'),
        ("rank = 60", f"rank = {RANKS[klass]}"),
        ('version = "13.5"', 'version = "12.4"'),
        ('archs = ["75", "80", "86", "89", "90", "100", "120"]', f"archs = [{quoted}]"),
        ('source = "wheels"', 'source = "debs"'),
        ('lock = "locks/cuda-13.5-wheels.toml"', f'lock = "{LOCK}"'),
        ("libcudart.so.13", "libcudart.so.12"),
        ("libcublas.so.13", "libcublas.so.12"),
        ("libcublasLt.so.13", "libcublasLt.so.12"),
    ):
        assert old in text, old
        text = text.replace(old, new, 1)
    spec = bundles / f"{leg}.toml"
    spec.write_text(text, encoding="utf-8")
    return spec


def debs_set(bundles: Path, leg: str = "linux-x64-cuda12-older", archs: list[str] | None = None) -> ComponentSet:
    """The component set of a debs leg written into ``bundles`` (a private copy of ``bundles/``)."""
    spec = debs_leg(bundles, leg, archs or ["75"])
    m = load_matrix(bundles)
    return component_set(m.legs[leg], m.root, str(spec))


def debs_toolkit(tmp: Path) -> CudaToolkit:
    """The installed Debian CUDA 12.4 toolkit (installed on first use, then reused from the cache)."""
    bundles = tmp / "debs-bundles"
    if not bundles.exists():
        shutil.copytree(ROOT / "bundles", bundles)
    cs = debs_set(bundles)
    ref = ref_for_set(cs)
    install(cs, ref, bundles)
    return ref
