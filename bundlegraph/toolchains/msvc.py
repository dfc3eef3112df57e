"""The MSVC developer environment: taken from an initialised developer shell or captured.

``vcvarsall.bat <arch>`` (``amd64_arm64``: x64-hosted tools emitting ARM64 code; ``amd64``: x64
native) sets ``VCToolsInstallDir``, ``VCToolsVersion``, ``INCLUDE``, ``LIB``, ``LIBPATH``,
``PATH``, ``WindowsSdkDir``, ``VSCMD_ARG_HOST_ARCH``/``VSCMD_ARG_TGT_ARCH`` ... If this process
already runs in such a shell for the right host/target pair, that environment is used as is.
Otherwise Visual Studio is located with ``vswhere.exe`` (``%ProgramFiles(x86)%\\Microsoft Visual
Studio\\Installer``; https://github.com/microsoft/vswhere) requiring the VC tools for the target,
and ``cmd /d /c call vcvarsall.bat <arch> >nul && set`` is run once per process; its ``KEY=VALUE``
lines are the environment.

Also: :func:`check_nvcc_supports` compares ``_MSC_VER`` (from ``VCToolsVersion``) with the range
nvcc's ``crt/host_config.h`` accepts and fails naming both; bundlegraph never passes
``-allow-unsupported-compiler``. :func:`zc_preprocessor_problems` checks that every nvcc compile
command passes MSVC's conforming preprocessor switch exactly once (CUDA 13's CCCL needs it).
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Mapping
from pathlib import Path, PureWindowsPath
from typing import Any

from ..core import memo, proc
from ..core.errors import BundleGraphError, HostMismatch, ToolMissing
from .cuda import CudaToolkit, msc_ver_of, msc_ver_range

KEY_VARS = ("VCToolsVersion", "WindowsSDKVersion", "VSCMD_ARG_HOST_ARCH", "VSCMD_ARG_TGT_ARCH", "VSCMD_VER")
"""Environment variables that go into configure's action key."""

_ARCH_PAIRS = {"amd64_arm64": ("x64", "arm64"), "amd64": ("x64", "x64")}
_VS_COMPONENT = {
    "arm64": "Microsoft.VisualStudio.Component.VC.Tools.ARM64",
    "x64": "Microsoft.VisualStudio.Component.VC.Tools.x86.x64",
}
ZC = "/Zc:preprocessor"


CANONICAL = (
    "VCToolsInstallDir",
    "VCToolsVersion",
    "VCINSTALLDIR",
    "VSCMD_ARG_HOST_ARCH",
    "VSCMD_ARG_TGT_ARCH",
    "VSCMD_VER",
    "WindowsSDKVersion",
    "WindowsSdkDir",
    "INCLUDE",
    "LIB",
    "LIBPATH",
    "PATH",
    "BUNDLEGRAPH_CLANG",
)
"""Variables bundlegraph reads from a developer environment, in the spelling it reads them."""


def canonical(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` with the :data:`CANONICAL` names spelled as bundlegraph reads them. Windows names
    are case-insensitive, and both sources differ in case: ``dict(os.environ)`` holds upper-case
    names (``VCTOOLSINSTALLDIR``), ``set`` prints ``Path=``."""
    canon = {n.upper(): n for n in CANONICAL}
    return {canon.get(k.upper(), k): v for k, v in env.items()}


def _get(env: Mapping[str, str], name: str) -> str | None:
    """A variable of a Windows environment: names are case-insensitive there."""
    return proc.env_get(env, name, windows=True)


def shell_problems(env: Mapping[str, str], vcvars_arch: str) -> list[str]:
    """Why ``env`` is not the developer shell ``vcvarsall.bat <vcvars_arch>`` makes (empty: it
    is). Read from the variables vcvarsall sets: ``VCToolsInstallDir``, ``VSCMD_ARG_HOST_ARCH`` /
    ``VSCMD_ARG_TGT_ARCH`` (``x64``/``arm64``), ``VCToolsVersion`` (needed for nvcc's
    ``_MSC_VER`` check; Visual Studio 2017 15.0 does not set it)."""
    host, tgt = _ARCH_PAIRS[vcvars_arch]
    if not _get(env, "VCToolsInstallDir"):
        return ["VCToolsInstallDir is not set: no MSVC developer shell"]
    probs = []
    got = ((_get(env, "VSCMD_ARG_HOST_ARCH") or "?").lower(), (_get(env, "VSCMD_ARG_TGT_ARCH") or "?").lower())
    if got != (host, tgt):
        probs.append(
            f"this developer shell targets {got[0]}->{got[1]}; the leg needs {host}->{tgt} "
            f"('vcvarsall.bat {vcvars_arch}')"
        )
    if not _get(env, "VCToolsVersion"):
        probs.append(
            f"VCToolsVersion is not set (Visual Studio {_get(env, 'VSCMD_VER') or '?'}): nvcc's supported "
            "MSVC range cannot be checked; use Visual Studio 2022"
        )
    return probs


def parse_set_output(text: str) -> dict[str, str]:
    """``set``'s ``KEY=VALUE`` lines -> dict (lines without ``=`` are skipped; CRLF or LF)."""
    out = {}
    for line in text.splitlines():
        k, sep, v = line.partition("=")
        if sep and k and not k.startswith(" "):
            out[k] = v
    return out


def vswhere_argv(vswhere: str, target_arch: str) -> list[str]:
    """The vswhere command that finds the newest Visual Studio with the VC tools for
    ``target_arch`` (``x64``/``arm64``), as JSON (vswhere's ``-format json -utf8``)."""
    return [vswhere, "-latest", "-products", "*", "-requires", _VS_COMPONENT[target_arch], "-format", "json", "-utf8"]


def pick_installation(vswhere_json: str, target_arch: str) -> str:
    """``installationPath`` of the instance ``vswhere -format json`` printed (a JSON array of
    instances: https://github.com/microsoft/vswhere/wiki/Find-MSVC). Raises :class:`ToolMissing`
    when the array is empty (no Visual Studio has the target's VC tools) and
    :class:`BundleGraphError` when the output is not that JSON or the instance is incomplete."""
    comp = _VS_COMPONENT[target_arch]
    try:
        found = json.loads(vswhere_json or "[]")
    except ValueError as e:
        first = (vswhere_json.strip().splitlines() or ["(nothing)"])[0][:200]
        raise BundleGraphError(f"MSVC: vswhere -format json printed no JSON ({e}): {first}") from None
    if not isinstance(found, list) or not all(isinstance(i, dict) for i in found):
        raise BundleGraphError("MSVC: vswhere -format json printed no array of instances")
    if not found:
        raise ToolMissing(
            f"MSVC: vswhere found no Visual Studio with {comp}; add 'MSVC ... {target_arch} build "
            "tools' in the Visual Studio Installer"
        )
    inst = found[0]
    if inst.get("isComplete") is False or not inst.get("installationPath"):
        raise BundleGraphError(
            f"MSVC: {inst.get('displayName', 'Visual Studio')} {inst.get('installationVersion', '')} "
            "is not completely installed (vswhere: isComplete false); repair it in the Visual "
            "Studio Installer"
        )
    return str(inst["installationPath"])


def vcvarsall_of(installation_path: str) -> str:
    """``<installationPath>\\VC\\Auxiliary\\Build\\vcvarsall.bat`` (a Windows path, whatever the host)."""
    return str(PureWindowsPath(installation_path) / "VC" / "Auxiliary" / "Build" / "vcvarsall.bat")


def _vswhere(env: Mapping[str, str]) -> Path:
    base = _get(env, "ProgramFiles(x86)") or _get(env, "ProgramFiles") or r"C:\Program Files (x86)"
    p = Path(base) / "Microsoft Visual Studio" / "Installer" / "vswhere.exe"
    if not p.is_file():
        raise ToolMissing(
            f"MSVC: no developer shell is initialised and vswhere.exe is not at {p}; install Visual Studio "
            "2022 (Build Tools) with the C++ workload, or run from 'vcvarsall.bat amd64_arm64'"
        )
    return p


@functools.lru_cache(maxsize=4)
def _capture(vcvars_arch: str, env_items: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
    env = dict(env_items)
    tgt = _ARCH_PAIRS[vcvars_arch][1]
    out = proc.run(vswhere_argv(str(_vswhere(env)), tgt), env=env, capture=True, echo=False, what="vswhere").output
    vcvarsall = Path(vcvarsall_of(pick_installation(out, tgt)))
    if not vcvarsall.is_file():
        raise ToolMissing(f"MSVC: {vcvarsall} does not exist; repair the Visual Studio installation")
    text = proc.run(
        set_argv(str(vcvarsall), vcvars_arch), env=env, capture=True, echo=True, what=f"vcvarsall.bat {vcvars_arch}"
    ).output
    return tuple(sorted(parse_set_output(text).items()))


memo.register("msvc.vcvars", _capture.cache_clear)


def set_argv(vcvarsall: str, vcvars_arch: str) -> list[str]:
    """``cmd /d /c call vcvarsall.bat <arch> >nul && set``: the developer shell's environment as
    ``set`` prints it (:func:`parse_set_output`)."""
    return ["cmd.exe", "/d", "/c", "call", vcvarsall, vcvars_arch, ">nul", "&&", "set"]


def developer_env(vcvars_arch: str, base: dict[str, str] | None = None) -> dict[str, str]:
    """The complete environment of an MSVC ``vcvars_arch`` developer shell (see module doc).

    Raises :class:`HostMismatch` off Windows or in a developer shell of another host/target
    pair, :class:`ToolMissing` when Visual Studio or the target's VC tools are absent,
    :class:`BundleGraphError` when the captured environment is not that shell
    (:func:`shell_problems`)."""
    env = canonical(os.environ if base is None else base)
    if os.name != "nt":
        raise HostMismatch(f"MSVC {vcvars_arch} needs a Windows x64 host")
    if not shell_problems(env, vcvars_arch):
        return env
    if _get(env, "VCToolsInstallDir"):
        raise HostMismatch(
            f"{'; '.join(shell_problems(env, vcvars_arch))} (or start from a plain shell and bundlegraph captures it)"
        )
    got = canonical(dict(_capture(vcvars_arch, tuple(sorted(env.items())))))
    probs = shell_problems(got, vcvars_arch)
    if probs:
        raise BundleGraphError(f"MSVC: 'vcvarsall.bat {vcvars_arch} && set': {'; '.join(probs)}")
    return got


def key_env(env: Mapping[str, str]) -> dict[str, str]:
    """The MSVC variables that go into the action key."""
    return {k: _get(env, k) or "" for k in KEY_VARS}


def check_nvcc_supports(cuda: CudaToolkit, env: dict[str, str]) -> int:
    """``_MSC_VER`` of the environment's MSVC, checked against nvcc's accepted range read from
    ``<prefix>/include/crt/host_config.h``. Raises :class:`BundleGraphError` naming both."""
    ver = env.get("VCToolsVersion", "")
    try:
        msc = msc_ver_of(ver)
    except ValueError as e:
        raise BundleGraphError(f"MSVC: VCToolsVersion: {e}") from None
    lo, hi = msc_ver_range(cuda.prefix / "include" / "crt" / "host_config.h")
    if not lo <= msc < hi:
        raise BundleGraphError(
            f"nvcc {cuda.version} ({cuda.prefix}) supports MSVC _MSC_VER {lo}..{hi - 1}, but the environment's "
            f"MSVC {ver} is _MSC_VER {msc}; install an MSVC toolset nvcc supports (bundlegraph never passes "
            "-allow-unsupported-compiler)"
        )
    return msc


def zc_preprocessor_problems(commands: list[dict[str, Any]]) -> list[str]:
    """For ``compile_commands.json`` entries: every nvcc compile must pass ``/Zc:preprocessor``
    to the host compiler exactly once. Returns one line per offending source."""
    out = []
    for c in commands:
        cmd = c.get("command") or " ".join(c.get("arguments", []))
        if "nvcc" not in cmd.split(" ", 1)[0].lower() and not str(c.get("file", "")).endswith(".cu"):
            continue
        n = cmd.count("Zc:preprocessor")
        if n != 1:
            out.append(f"{c.get('file')}: /Zc:preprocessor appears {n} times in its nvcc command")
    return out


def hooks_cmake(flag: str = ZC) -> str:
    """A CMake script (``CMAKE_PROJECT_TOP_LEVEL_INCLUDES``) that, once the top-level directory is
    processed, adds ``-Xcompiler=<flag>`` to CUDA compiles of every target with ``.cu`` sources
    whose options and ``CMAKE_CUDA_FLAGS`` do not already carry ``flag``; never twice
    (:func:`bundlegraph.toolchains.cmake_hooks.hooks_script` with ``host_flag`` only)."""
    from .cmake_hooks import hooks_script

    return hooks_script(seeds=False, host_flag=flag)
