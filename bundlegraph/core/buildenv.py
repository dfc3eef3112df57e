"""The environment build code runs in: an allow-list (issue 51, "no secret meets build code").

Configure (cmake and every CMake script of the source), build (ninja, the compiler launcher, the
compilers and every program the build runs) and smoke (the bundle's programs, and the source's
``gguf-py`` that writes the tiny model) run code bundlegraph did not write: upstream llama.cpp, or
a pinned pull request of a mix release. Their environment is :func:`allowed_env` of bundlegraph's:
only the names below pass, and never a secret one, whatever list allowed it:

- the host's basics: ``PATH``, ``HOME``, ``TMPDIR``/``TEMP``/``TMP``, ``LANG``/``LANGUAGE``/
  ``LC_*``/``TZ``, ``SOURCE_DATE_EPOCH``, ``LD_LIBRARY_PATH``, ``PYTHONUTF8``/``PYTHONIOENCODING``;
  on Windows also what its programs need to start (``SystemRoot``, ``ComSpec``, ``PATHEXT``, the
  profile and program folders, ``PROCESSOR_*``, ...);
- the toolchains': the MSVC developer environment :mod:`bundlegraph.toolchains.msvc` captures
  (``INCLUDE``, ``LIB``, ``LIBPATH``, ``VCToolsInstallDir``, ``VSCMD_*``, ``WindowsSdk*``, ...), the
  GPU SDKs' (``CUDA_*``, ``VULKAN_SDK``, ``VK_*``, ``HIP_*``, ``ROCM_*``, ``HSA_*``), ggml's run-time
  switches (``GGML_*``), ccache's ``CCACHE_*``;
- ``BUNDLEGRAPH_*`` names of the settings table (:mod:`.settings`).

Never (:data:`SECRET_NAMES`, :data:`SECRET_PREFIXES`): ``AZURE_*``, ``BUNDLEGRAPH_SIGN_*``,
``BUNDLEGRAPH_CACHE_REMOTE`` and ccache's own remote-storage variables (the URL carries the
credential: :mod:`bundlegraph.pipeline.compile.compiler_cache` hands it to ccache in a private
configuration file instead), ``GITHUB_TOKEN``, ``ACTIONS_*`` (the runtime and OIDC tokens), and
``BUNDLEGRAPH_EXTRA_*`` (free for the user's own scripts: they may hold anything). Names not
listed (``CFLAGS``, ``http_proxy``, ``SSH_AUTH_SOCK``, ...) do not pass either.

Windows' names are case-insensitive (``Path``, ``SystemRoot``): there names are compared upper-cased
(:func:`bundlegraph.core.proc.env_get`'s rule) and passed in the spelling they came in.
"""

from __future__ import annotations

from collections.abc import Mapping

from .proc import IS_WINDOWS

NAMES = frozenset(
    {
        "PATH",
        "HOME",
        "TMPDIR",
        "TEMP",
        "TMP",
        "LANG",
        "LANGUAGE",
        "TZ",
        "SOURCE_DATE_EPOCH",
        "LD_LIBRARY_PATH",
        "PYTHONUTF8",
        "PYTHONIOENCODING",
        "VULKAN_SDK",
        "ROCM_PATH",
    }
)
"""Names that pass on every host."""

PREFIXES = ("LC_", "CCACHE_", "CUDA_", "VK_", "HIP_", "ROCM_", "HSA_", "ROCR_", "GGML_")
"""Name prefixes that pass on every host (locale, ccache, the GPU SDKs and runtimes, ggml)."""

WINDOWS_NAMES = frozenset(
    {
        # what Windows programs need to start and find their folders
        "SYSTEMROOT",
        "SYSTEMDRIVE",
        "WINDIR",
        "COMSPEC",
        "PATHEXT",
        "OS",
        "USERPROFILE",
        "USERNAME",
        "HOMEDRIVE",
        "HOMEPATH",
        "APPDATA",
        "LOCALAPPDATA",
        "PROGRAMDATA",
        "ALLUSERSPROFILE",
        "PUBLIC",
        "PROGRAMFILES",
        "PROGRAMFILES(X86)",
        "PROGRAMW6432",
        "COMMONPROGRAMFILES",
        "COMMONPROGRAMFILES(X86)",
        "COMMONPROGRAMW6432",
        "NUMBER_OF_PROCESSORS",
        # the MSVC developer environment (vcvarsall.bat's variables; toolchains/msvc.py)
        "INCLUDE",
        "EXTERNAL_INCLUDE",
        "LIB",
        "LIBPATH",
        "VCTOOLSINSTALLDIR",
        "VCTOOLSVERSION",
        "VCTOOLSREDISTDIR",
        "VCINSTALLDIR",
        "VCIDEINSTALLDIR",
        "VSINSTALLDIR",
        "VISUALSTUDIOVERSION",
        "DEVENVDIR",
        "PLATFORM",
        "COMMANDPROMPTTYPE",
        "UCRTVERSION",
        "UNIVERSALCRTSDKDIR",
        "EXTENSIONSDKDIR",
        "NETFXSDKDIR",
        "WINDOWSLIBPATH",
    }
)
"""Upper-cased names that pass on Windows too."""

WINDOWS_PREFIXES = ("PROCESSOR_", "VSCMD_", "__VSCMD_", "WINDOWSSDK", "FRAMEWORK", "__DOTNET_", "CUDA_PATH")
"""Upper-cased prefixes that pass on Windows too (``VSCMD_ARG_TGT_ARCH``, ``WindowsSdkDir``,
``WindowsSDKVersion``, ``FrameworkDir64``, ``CUDA_PATH_V13_0``...)."""

SECRET_NAMES = frozenset(
    {
        "GITHUB_TOKEN",
        "BUNDLEGRAPH_CACHE_REMOTE",
        "CCACHE_REMOTE_STORAGE",
        "CCACHE_SECONDARY_STORAGE",
        "CCACHE_CONFIGPATH",
        "CCACHE_CONFIGPATH2",
    }
)
"""Never passed, though a prefix above matches (``CCACHE_*``): the remote cache's URL, and ccache's
configuration files, which bundlegraph sets itself (:mod:`~bundlegraph.pipeline.compile.compiler_cache`)."""

SECRET_PREFIXES = ("AZURE_", "BUNDLEGRAPH_SIGN_", "ACTIONS_", "BUNDLEGRAPH_EXTRA_")
"""Never passed: signing credentials, the runner's tokens, the user's own variables."""


def is_secret(name: str) -> bool:
    """Whether ``name`` is refused whatever allows it (case-insensitive: on Windows ``Azure_X``
    is ``AZURE_X``, and no POSIX host has a reason to spell a secret otherwise)."""
    up = name.upper()
    return up in SECRET_NAMES or up.startswith(SECRET_PREFIXES)


def allowed(name: str, *, windows: bool = IS_WINDOWS) -> bool:
    """Whether variable ``name`` passes into build code (module docstring)."""
    if is_secret(name):
        return False
    key = name.upper() if windows else name
    if key in NAMES or key.startswith(PREFIXES):
        return True
    if key.startswith("BUNDLEGRAPH_"):
        from .settings import SETTINGS

        return key in {s.var for s in SETTINGS}
    return windows and (key in WINDOWS_NAMES or key.startswith(WINDOWS_PREFIXES))


def allowed_env(env: Mapping[str, str], *, windows: bool = IS_WINDOWS) -> dict[str, str]:
    """``env`` with only the variables :func:`allowed` passes, each in the spelling it came in."""
    return {k: v for k, v in env.items() if allowed(k, windows=windows)}


__all__ = ["allowed", "allowed_env", "is_secret"]
