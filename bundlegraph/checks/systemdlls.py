"""DLLs that Windows itself provides, and the few other providers verify knows by name.

Curated by hand from Microsoft's documentation, all names lower-case:

- Win32 API reference pages ("Requirements: DLL") for the DLLs below, and the KnownDLLs list
  (``HKLM\\SYSTEM\\CurrentControlSet\\Control\\Session Manager\\KnownDLLs``) of Windows 10/11;
- "Windows API sets" (learn.microsoft.com, Windows / Win32 / API sets): ``api-ms-win-*`` and
  ``ext-ms-win-*`` names are API set contracts the loader resolves itself;
- "C runtime (CRT) and C++ Standard Library (STL) .lib files" / "Universal CRT deployment":
  the UCRT (``ucrtbase.dll``, ``api-ms-win-crt-*``) is part of Windows 10 and later, while the
  Visual C++ runtime (``msvcp140*.dll``, ``vcruntime140*.dll``, ``vcomp140.dll``,
  ``concrt140.dll``) is **not**: it must ship or be declared as an external runtime.

Not Windows DLLs (drivers and redistributables install them): ``nvcuda.dll`` (the NVIDIA
driver; allowed for CUDA legs only, as :mod:`bundlegraph.schemas.backend` declares), ``vulkan-1.dll``,
``OpenCL.dll``, ``libomp140.*.dll`` (MSVC's LLVM OpenMP, a redistributable).
"""

from __future__ import annotations

WINDOWS_DLLS: frozenset[str] = frozenset(
    f"{n}.dll"
    for n in """
    advapi32 authz avrt bcrypt bcryptprimitives cabinet cfgmgr32 combase comctl32 comdlg32
    credui crypt32 cryptbase cryptnet d2d1 d3d11 d3d12 d3d9 d3dcompiler_47 dbgcore dbghelp
    dnsapi dwmapi dwrite dxcore dxgi fltlib gdi32 gdiplus hid imagehlp imm32 iphlpapi kernel32
    kernelbase mf mfplat mfreadwrite mpr msimg32 msvcrt mswsock ncrypt netapi32 normaliz ntdll
    ole32 oleacc oleaut32 opengl32 pdh powrprof propsys psapi rpcrt4 secur32 setupapi shcore
    shell32 shlwapi sspicli ucrtbase urlmon userenv usp10 user32 uxtheme version winhttp
    wininet winmm winspool wintrust winusb wldap32 ws2_32 wsock32 wtsapi32 windowscodecs
    xinput1_4
    """.split()
) | frozenset({"winspool.drv"})
"""Ordinary system DLLs present on every Windows 10/11 installation (lower-case)."""

API_SET_PREFIXES: tuple[str, ...] = ("api-ms-win-", "ext-ms-win-")
"""API set contract names, resolved by the Windows loader (Microsoft: "Windows API sets")."""

VC_RUNTIME_PREFIXES: tuple[str, ...] = ("msvcp140", "vcruntime140", "vcomp140", "concrt140", "vccorlib140")
"""The Visual C++ runtime: counts only when the leg declares it (runtime.external / --runtime)."""

HOST_PROCESS: dict[str, str] = {".node": "node.exe"}
"""A Node.js addon (``.node``) imports its host ``node.exe`` (node-gyp links every addon with a
delay-load of ``node.exe`` redirected to the running process by ``win_delay_load_hook.cc``)."""


def is_windows_dll(name: str) -> bool:
    """True when Windows provides ``name`` (case-insensitive): a listed system DLL or an
    API set contract (``api-ms-win-*``, ``ext-ms-win-*``)."""
    n = name.lower()
    return n in WINDOWS_DLLS or n.startswith(API_SET_PREFIXES)


def is_vc_runtime(name: str) -> bool:
    """True for the Visual C++ runtime DLLs (``MSVCP140.dll``, ``VCRUNTIME140_1.dll``,
    ``VCOMP140.DLL``, ...), which Windows does not provide."""
    return name.lower().startswith(VC_RUNTIME_PREFIXES)


def host_process(importer: str) -> str | None:
    """The host executable a file of this kind may import (``node.exe`` for ``.node``), else None."""
    return next((host for suffix, host in HOST_PROCESS.items() if importer.lower().endswith(suffix)), None)
