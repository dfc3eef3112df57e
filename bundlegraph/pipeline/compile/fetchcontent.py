"""Sources llama.cpp's CMake would download at configure, served offline from a pinned wheel.

ggml's ``GGML_CUDA_CUB_3DOT2`` (``ggml/src/ggml-cuda/CMakeLists.txt``) runs
``FetchContent_Declare(CCCL GIT_REPOSITORY https://github.com/nvidia/cccl.git GIT_TAG v3.2.0)`` and
``FetchContent_MakeAvailable(CCCL)``, then links ``CCCL::CCCL``: CUB 3.2's top-k, which CUDA 12's
own CCCL (2.x) lacks. Upstream's release turns it on for its CUDA 12 builds. A hermetic configure
downloads nothing (``FETCHCONTENT_FULLY_DISCONNECTED=ON``), so a release that wants it pins the
source instead (``[[fetchcontent]]`` of ``release.toml``, :class:`~bundlegraph.schemas.records.FetchContentPin`):

- NVIDIA's wheel ``nvidia-cuda-cccl==13.2.27`` holds exactly CCCL 3.2.0 (headers and CMake package
  files under ``nvidia/cu13/lib/cmake``); it is fetched with ``pip download`` into the blob cache and
  checked against the pin's sha256 and size (:func:`bundlegraph.toolkit.wheels.fetch_wheel`; a
  header-only package, so one wheel serves every host and target);
- unpacked once into ``<cache>/fetchcontent/<name>-<sha256[:12]>/wheel``;
- beside it a folder ``src`` whose ``CMakeLists.txt`` loads the package from the wheel only
  (``find_package(<package> <version> EXACT CONFIG REQUIRED NO_DEFAULT_PATH PATHS ...)``), the
  folder configure names in ``FETCHCONTENT_SOURCE_DIR_<NAME>``: CMake's documented way to give
  ``FetchContent_MakeAvailable`` a local source instead of a download (FetchContent manual,
  "FETCHCONTENT_SOURCE_DIR_<uppercaseName>"). CCCL's config declares ``CCCL::CCCL`` ``GLOBAL``, so the
  target ggml links is visible outside the folder that found it.

The folder lies under the cache, which every compile maps to ``cache/`` (:mod:`bundlegraph.toolchains.prefix_maps`),
so its path leaves no trace in the bundle; its name holds the wheel's sha256, so another pin is
another configure key.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from ...core import paths
from ...core.errors import BundleGraphError
from ...core.extract import extract
from ...core.fsutil import atomic_write_bytes, locked
from ...schemas.records import BundleSpec, FetchContentPin, Release

__all__ = ["SHIM", "pins_used", "prepare", "source_dir", "source_dirs"]

SHIM = """# Written by bundlegraph (pipeline/compile/fetchcontent.py): FetchContent_MakeAvailable({name})
# gets the package of NVIDIA's pinned wheel {filename} (sha256 {sha256})
# instead of a download.
cmake_minimum_required(VERSION 3.18)
find_package({package} {version} EXACT CONFIG REQUIRED NO_DEFAULT_PATH
             PATHS "${{CMAKE_CURRENT_LIST_DIR}}/../wheel/{config_dir}")
"""
"""The ``CMakeLists.txt`` of the local source (``{...}``: the pin's fields)."""


def pins_used(spec: BundleSpec, release: Release) -> list[FetchContentPin]:
    """The release's pins whose option ``spec`` turns on (``[cmake]``), in the release's order."""
    return [p for p in release.fetchcontent if spec.cmake_bool(p.option, False)]


def source_dir(pin: FetchContentPin, cache: Path | None = None) -> Path:
    """The folder configure names in ``FETCHCONTENT_SOURCE_DIR_<NAME>`` (it need not exist yet)."""
    root = cache if cache is not None else paths.cache_root()
    return root / "fetchcontent" / f"{pin.name}-{pin.sha256[:12]}" / "src"


def source_dirs(pins: list[FetchContentPin], cache: Path | None = None) -> dict[str, str]:
    """``{"FETCHCONTENT_SOURCE_DIR_<NAME>": folder}`` for each pin (posix spelling, for ``-D``)."""
    return {f"FETCHCONTENT_SOURCE_DIR_{p.name.upper()}": source_dir(p, cache).as_posix() for p in pins}


def prepare(pin: FetchContentPin, cache: Path | None = None, log: Path | None = None) -> Path:
    """Fetch (or find) the pinned wheel, unpack it and write the local source; returns
    :func:`source_dir`. Idempotent and safe against a concurrent run (a lock per pin; the
    unpacked folder is renamed into place whole). Raises :class:`HashMismatch` for other bytes
    and :class:`BundleGraphError` when the wheel lacks the package's config folder."""
    from ...toolkit.lockfile import WheelRow
    from ...toolkit.wheels import fetch_wheel

    src = source_dir(pin, cache)
    top = src.parent
    top.parent.mkdir(parents=True, exist_ok=True)
    with locked(top.parent / f".{top.name}.lock", what=f"fetchcontent {pin.name}"):
        if (src / "CMakeLists.txt").is_file():
            return src
        row = WheelRow(
            component=pin.name,
            platform="linux-x86_64",  # pip's tags for the download; the package is header-only
            tag="",
            requirement=pin.requirement,
            version=pin.requirement.partition("==")[2],
            filename=pin.filename,
            sha256=pin.sha256,
            size=pin.size,
        )
        blob = fetch_wheel(row, log)
        part = top.with_name(top.name + ".part")
        shutil.rmtree(part, ignore_errors=True)
        extract(blob, part / "wheel")
        config = part / "wheel" / pin.config_dir / f"{pin.package.lower()}-config.cmake"
        if not config.is_file():
            shutil.rmtree(part, ignore_errors=True)
            raise BundleGraphError(
                f"release.toml: fetchcontent {pin.name}: {pin.filename} holds no {pin.config_dir}/"
                f"{pin.package.lower()}-config.cmake (config_dir names the folder of the package's CMake files)"
            )
        text = SHIM.format(
            **{k: getattr(pin, k) for k in ("name", "filename", "sha256", "package", "version", "config_dir")}
        )
        (part / "src").mkdir()
        atomic_write_bytes(part / "src" / "CMakeLists.txt", text.encode())
        shutil.rmtree(top, ignore_errors=True)
        part.rename(top)
    return src
