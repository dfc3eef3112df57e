"""What a CUDA leg adds to its configure (:class:`bundlegraph.pipeline.configure.ConfigureSide`,
found by name as ``bundlegraph.backends.cuda.configure``): nvcc's hooks (a seed per CUDA source,
MSVC's ``/Zc:preprocessor`` where a target lacks it), the toolkit prefix the compiles map to a
stable name, where each nvcc flag comes from (``bundlegraph plan``), the launcher probe's nvcc,
the toolkit's layout in ``configure.json`` and the checks after cmake (the target's library pins
in effect, every nvcc compile reproducible and hosted by the pinned compiler, ``/Zc:preprocessor``
once). The configure stage asks these and never which backend it holds."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...core.errors import BundleGraphError, ToolkitError
from ...core.platforms import platform
from ...toolchains import msvc
from ...toolchains.cmake_hooks import reproducibility_problems
from ...toolchains.cuda import CudaToolkit
from .spec import CUDA

if TYPE_CHECKING:
    from ...pipeline.compile.launcher import ProbeTools
    from ...pipeline.configure import ConfigurePlan
    from ...schemas.records import BundleSpec
    from ...toolchains.base import Toolchain
    from ...toolchains.sdk_ref import SdkRef

LANGUAGES: tuple[str, ...] = ("CUDA",)
"""The GPU language the launcher probe compiles for a CUDA leg."""


def _toolkit(sdk: SdkRef | None) -> CudaToolkit:
    """``sdk``, the CUDA leg's toolkit. Raises ``TypeError`` for anything else (only a bug passes one)."""
    if not isinstance(sdk, CudaToolkit):
        raise TypeError(f"a CUDA leg's SDK is a CudaToolkit, not {type(sdk).__name__}")
    return sdk


def cache_entries(spec: BundleSpec) -> dict[str, str]:
    """``CMAKE_CUDA_ARCHITECTURES``: the leg's ``[cuda] archs`` in CMake's spelling."""
    cuda = CUDA.of(spec)
    return {"CMAKE_CUDA_ARCHITECTURES": ";".join(cuda.cmake_archs)}


def device_targets(spec: BundleSpec) -> int:
    """The leg's archs: nvcc compiles each CUDA source once per arch (its memory per job and its
    time grow with them)."""
    cuda = CUDA.of(spec)
    return len(cuda.archs)


def hooks(tc: Toolchain, sdk: SdkRef | None) -> tuple[bool, str | None]:
    """``(seeds, host_flag)`` of the project-include hooks (:func:`~bundlegraph.toolchains.cmake_hooks.hooks_script`):
    a seed per CUDA source where the toolchain builds CUDA, and MSVC's ``/Zc:preprocessor`` on
    an MSVC host (CCCL needs its conforming preprocessor)."""
    seeds = bool(tc.info.cuda and sdk is not None)
    return seeds, msvc.ZC if seeds and platform(tc.info.build_os).msvc_host else None


def prefix_root(sdk: SdkRef | None) -> Path | None:
    """The toolkit prefix, which every compile maps to a stable name (nvcc writes its include
    paths into the objects); None without a toolkit."""
    return Path(sdk.root) if sdk is not None else None


def describe(plan: ConfigurePlan, tc: Toolchain) -> dict[str, Any]:
    """``cuda_host_flags``: the nvcc flags bundlegraph adds to every CUDA compile of ``plan`` and
    where each comes from: ``-target-dir`` (the toolchain file's ``CMAKE_CUDA_FLAGS_INIT``: the
    target's libraries) and, for MSVC hosts, ``-Xcompiler=/Zc:preprocessor`` (the project-include
    hook: CCCL needs MSVC's conforming preprocessor; added only to CUDA targets that lack it)."""
    flags = tc.nvcc_flags()
    out = {
        f: "toolchain file: CMAKE_CUDA_FLAGS_INIT (nvcc finds the target's headers and libraries)"
        for f in flags
        if f.startswith("-target-dir")
    }
    if "-objtemp" in flags:
        out["-objtemp"] = (
            "toolchain file: CMAKE_CUDA_FLAGS_INIT (intermediate files named after the object, "
            "not tmpxft_<pid>: reproducible objects)"
        )
    if plan.hooks_file:
        out["-frandom-seed=<source path>"] = (
            f"{plan.hooks_file.name} (CMAKE_PROJECT_TOP_LEVEL_INCLUDES): one seed per "
            f"CUDA source, its path in the source tree (reproducible device "
            f"code); checked once per nvcc command after configure"
        )
        if platform(tc.info.build_os).msvc_host:
            out[f"-Xcompiler={msvc.ZC}"] = (
                f"{plan.hooks_file.name} (CMAKE_PROJECT_TOP_LEVEL_INCLUDES): added to each "
                f"CUDA target whose options and CMAKE_CUDA_FLAGS lack it; CCCL needs "
                f"MSVC's conforming preprocessor; checked once per nvcc command after "
                f"configure"
            )
    return {"cuda_host_flags": out}


def probe_tools(plan: ConfigurePlan, tc: Toolchain, base: ProbeTools) -> ProbeTools:
    """``base`` (the C probe) with nvcc, its host compiler, the toolchain's nvcc flags and the
    leg's CUDA architectures: the launcher probe compiles CUDA as the build will."""
    from dataclasses import replace

    archs = tuple(a for a in plan.cache.get("CMAKE_CUDA_ARCHITECTURES", "").split(";") if a)
    return replace(
        base,
        nvcc=str(_toolkit(plan.sdk).nvcc),
        ccbin=plan.binaries.get("cuda_host") or plan.binaries.get("cxx"),
        nvcc_flags=tuple(tc.nvcc_flags()),
        archs=archs,
    )


def summary(plan: ConfigurePlan) -> str:
    """The toolkit as the configure's log line names it: its prefix and target directory."""
    cuda = _toolkit(plan.sdk)
    return f"{cuda.root} ({cuda.target_dir})"


def record(plan: ConfigurePlan) -> dict[str, Any]:
    """``configure.json``'s ``cuda`` entry: the toolkit's layout (:meth:`~bundlegraph.toolchains.cuda.CudaToolkit.layout_json`)."""
    return {"cuda": _toolkit(plan.sdk).layout_json()}


def checks(plan: ConfigurePlan, tc: Toolchain) -> dict[str, Any]:
    """After cmake: the CUDA library pins are in
    effect (cross builds), every nvcc compile is reproducible
    (:func:`~bundlegraph.toolchains.cmake_hooks.reproducibility_problems`) and hosted by the
    pinned compiler, and, on an MSVC host, passes ``/Zc:preprocessor`` exactly once. Raises
    :class:`ToolkitError` or :class:`BundleGraphError` naming the leg on a violation; returns
    what held."""
    from ...pipeline.configure import ccbin_problems, read_cmake_cache

    cuda = _toolkit(plan.sdk)
    cache = read_cmake_cache(plan.cmake_dir)
    out: dict[str, Any] = {"CMAKE_CUDA_COMPILER": cache.get("CMAKE_CUDA_COMPILER")}
    for var, rel in cuda.libraries().items():
        if var in cache:
            out[var] = cache[var]
            if tc.info.cross and Path(cache[var]).as_posix() != f"{cuda.root}/{rel}":
                raise ToolkitError(
                    f"configure:{plan.leg}: {var} resolved to {cache[var]}, not the target's "
                    f"{cuda.root}/{rel}: a host library would be linked"
                )
    cc = json.loads((plan.cmake_dir / "compile_commands.json").read_text(encoding="utf-8"))
    bad = reproducibility_problems(cc)
    if bad:
        raise BundleGraphError(f"configure:{plan.leg}: not reproducible: " + "; ".join(bad[:5]))
    out["reproducible"] = "-objtemp and a distinct -frandom-seed in every nvcc command"
    if plan.compiler is not None:
        bad = ccbin_problems(cc, plan.binaries.get("cuda_host") or plan.binaries.get("cxx", ""))
        if bad:
            raise BundleGraphError(f"configure:{plan.leg}: not hermetic: " + "; ".join(bad[:3]))
        out["cuda_host_compiler"] = "every nvcc command's -ccbin is the pinned compiler's"
    if platform(tc.info.build_os).msvc_host:
        bad = msvc.zc_preprocessor_problems(cc)
        if bad:
            raise BundleGraphError(f"configure:{plan.leg}: " + "; ".join(bad[:5]))
        out["zc_preprocessor"] = "once in every nvcc command"
    return out


if TYPE_CHECKING:  # mypy holds this module to the protocol the configure stage asks it by
    from ...pipeline.configure import ConfigureSide
    from . import configure as _this

    _AS_SIDE: ConfigureSide = _this
