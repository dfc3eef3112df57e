"""The operating systems a bundle targets, as one table: :data:`PLATFORMS` (``linux``,
``windows``), one :class:`Platform` row each. Every OS-dependent name the code needs (a
library's or program's file name, the archive format, the binary format, the loader's search
variable, whether file names compare case-insensitively) is read from the row of the bundle's
``os`` instead of being spelled in a branch on the OS name.

Sources of the facts:

- library and program naming: ld.so(8) / the ELF ``lib<name>.so`` convention, and the Windows
  loader's ``<name>.dll`` / ``<name>.exe`` (ggml's CMake ``add_library(... SHARED)`` gives
  ``libggml-cuda.so`` and ``ggml-cuda.dll``);
- the rpath: ld.so(8) ``$ORIGIN``, dyld(1) ``@loader_path``;
- the loader variable: ld.so(8) ``LD_LIBRARY_PATH``; Windows "Dynamic-link library search
  order" (``PATH`` is searched after the application directory);
- archive format: what the release we replace publishes (``.zip`` for Windows, ``.tar.gz``
  for Linux), and what the installer unpacks (``docs/installer-contract.md``);
- case folding: NTFS names compare case-insensitively, ext4 names do not.

- macOS: dyld(1) (``DYLD_LIBRARY_PATH``; libraries under ``/usr/lib/`` and
  ``/System/Library/`` are the system's: the dyld shared cache serves them, a bundle never ships
  them), ``lib<name>.dylib`` with the version before the suffix (``libllama.0.dylib``, and the
  unversioned ``libllama.dylib`` link CMake makes beside it), programs without suffix; the fork's
  asset name ``llama-<tag>-bin-macos-<arch>.tar.gz``, which the installer matches for its
  ``macos-arm64`` / ``macos-x64`` kinds (``unsloth-prebuilt-macos.yml``,
  ``install_llama_prebuilt.py``).
"""

from __future__ import annotations

from typing import Literal

from .lightclass import frozen


@frozen
class Platform:
    """One OS: its ``name`` (a spec's ``os``) and ``title`` (for messages), the ``lib_prefix``/``lib_suffix`` of a shared
    library's file name, the ``exe_suffix`` of a program's, its bundle ``archive`` suffix, the
    ``binary`` format its files are read as, the ``loader_var`` that adds a directory to the
    loader's search path, ``fold`` (file names compare case-insensitively), ``versioned``
    (a library's file name may carry a version after its suffix: ``libllama.so.0``),
    ``system_dirs`` (path prefixes of the system's own libraries, which a load command may name
    unshipped; empty: the closure checks decide by name) and ``asset_name`` (a ``str.format``
    pattern of ``tag`` and ``arch`` for the bundle's file name without suffix where the installer
    expects a fixed name; empty: ``<prefix>-<tag>-<os>-<arch>-<profile>``) and ``rpath`` (the
    ``CMAKE_INSTALL_RPATH`` every binary gets so it finds the bundle's libraries beside itself:
    ``$ORIGIN``, ``@loader_path``; empty: the loader searches the program's folder anyway) and
    ``cpu_variants`` (ggml's CPU backend may come as several libraries, ``ggml-cpu-haswell`` …,
    with ``GGML_CPU_ALL_VARIANTS``; False: one ``ggml-cpu`` library, which the installer asks for by
    that exact name: the fork's macOS bundles, ``libggml-cpu.dylib``) and ``msvc_host`` (a build
    machine of this OS compiles with MSVC's dialect: nvcc's host compiler there is ``cl.exe``, the
    only one NVIDIA's CUDA Installation Guide for Windows supports, so CCCL needs its conforming
    preprocessor, and CMake's MSVC settings apply) and ``library_dir`` (the folder of an SDK tree
    that holds its shared libraries: ``lib``; Windows keeps DLLs beside the programs, in ``bin``)
    and ``spec_table`` (the spec table a leg for this OS must have and no other OS's leg may:
    ``macos``, its deployment target; empty: none) and ``setup_steps`` (what a release job on a
    runner of this OS installs before it builds, named as the critical-path model's overheads:
    ``apt``, the pinned compiler's ``.deb`` files of a Linux leg)."""

    name: str
    title: str
    lib_prefix: str
    lib_suffix: str
    exe_suffix: str
    archive: str
    binary: Literal["ELF", "PE", "Mach-O"]
    loader_var: str
    fold: bool
    versioned: bool
    system_dirs: tuple[str, ...] = ()
    asset_name: str = ""
    rpath: str = ""
    cpu_variants: bool = True
    msvc_host: bool = False
    library_dir: str = "lib"
    spec_table: str = ""
    setup_steps: tuple[str, ...] = ()

    def library(self, stem: str) -> str:
        """The file name of shared library ``stem`` (``ggml-cuda`` -> ``libggml-cuda.so`` /
        ``ggml-cuda.dll``)."""
        return f"{self.lib_prefix}{stem}{self.lib_suffix}"

    def library_glob(self, stem: str) -> str:
        """A glob for library ``stem`` with any version suffix (``libllama.so*``; ``llama.dll``
        where names carry no version after the suffix)."""
        return self.library(stem) + ("*" if self.versioned else "")

    def program(self, stem: str) -> str:
        """The file name of program ``stem`` (``llama-server`` / ``llama-server.exe``)."""
        return f"{stem}{self.exe_suffix}"


PLATFORMS: dict[str, Platform] = {
    p.name: p
    for p in (
        Platform(
            "linux",
            "Linux",
            "lib",
            ".so",
            "",
            ".tar.gz",
            "ELF",
            "LD_LIBRARY_PATH",
            fold=False,
            versioned=True,
            rpath="$ORIGIN",
            setup_steps=("apt",),
        ),
        Platform(
            "windows",
            "Windows",
            "",
            ".dll",
            ".exe",
            ".zip",
            "PE",
            "PATH",
            fold=True,
            versioned=False,
            msvc_host=True,
            library_dir="bin",
        ),
        Platform(
            "macos",
            "macOS",
            "lib",
            ".dylib",
            "",
            ".tar.gz",
            "Mach-O",
            "DYLD_LIBRARY_PATH",
            fold=False,
            versioned=False,
            system_dirs=("/usr/lib/", "/System/Library/"),
            asset_name="llama-{tag}-bin-macos-{arch}",
            rpath="@loader_path",
            cpu_variants=False,
            spec_table="macos",
        ),
    )
}
"""Every OS a leg may target, by name (the order is the spec schema's)."""

OS_NAMES: tuple[str, ...] = tuple(PLATFORMS)
"""The OS names, for argument choices and messages."""


def platform(os_name: str) -> Platform:
    """The row of ``os_name``. Raises KeyError naming the known OSes for any other (a spec's
    ``os`` is validated on load, so only a bug gets here)."""
    try:
        return PLATFORMS[os_name]
    except KeyError:
        raise KeyError(f"unknown os {os_name!r}: expected one of {', '.join(OS_NAMES)}") from None


__all__ = ["OS_NAMES", "PLATFORMS", "Platform", "platform"]
