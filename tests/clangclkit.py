"""A Windows x64 stand-in leg compiled here with clang-cl: the MSVC command-line dialect
(``/c``, ``/Fo``, ``/O2``, ``/showIncludes``) that cl.exe speaks, which this Linux host lacks.

What a Windows target needs and Debian has (issue 39, item 1):

- the compiler: Debian's clang started under the name ``clang-cl`` (clang picks its driver mode
  from its name), a link in the kit's temporary folder (a test of Linux only: no link is made on
  Windows), targeting ``x86_64-pc-windows-msvc``;
- C headers: MinGW-w64's (Debian ``mingw-w64-x86-64-dev``) through ``-imsvc``, plus a two-line
  ``windows.h`` of the kit (MinGW's own pulls in MMX intrinsics clang-cl 14 refuses); MinGW's
  10.0 headers have no ARM64 MSVC varargs, so the x64 target stands in for both Windows legs;
- the link: ``lld-link /nodefaultlib`` against import libraries made with ``llvm-dlltool``
  (``msvcrt.dll``, ``kernel32.dll``, as :mod:`binkit` does) and two entry points of the kit's own;
  ``/Brepro`` so the PE header carries no time stamp. The programs are linked, never started.
- minillama exports its build-info functions without ``__declspec`` (it was never compiled for
  Windows): ``CMAKE_WINDOWS_EXPORT_ALL_SYMBOLS`` exports them, as CMake does for such projects.

Everything else is bundlegraph's own code, started as the release workflow starts it, one
process per runner step (:func:`main`): the launcher probe (:func:`~bundlegraph.pipeline.compile.launcher.compiler_launcher`
on clang-cl, in MSVC's dialect), the leg's cache entries (:func:`~bundlegraph.pipeline.compile.cmake_cache.cache_entries`:
``CMAKE_MSVC_DEBUG_INFORMATION_FORMAT``), the prefix maps (``-Xclang -fmacro-prefix-map``),
a shard (:func:`~bundlegraph.pipeline.shard_build.run_shard`) and the final or whole compile
(:func:`~bundlegraph.pipeline.build.run_build`). Only the configure is this kit's: bundlegraph's
configure stage refuses a Windows leg on a Linux host, and it has no clang-cl toolchain.

ccache runs in depend mode here (``CCACHE_DEPEND=1``, set by the test): in its preprocessor mode
ccache re-runs the compiler with ``-E <source>`` and drops CMake's ``--``, and clang-cl on a POSIX
host reads an absolute ``/path/x.c`` as an option. On Windows a path starts with a drive letter.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET = "x86_64-pc-windows-msvc"
MINGW_INCLUDE = Path("/usr/share/mingw-w64/include")
SPEC = ROOT / "tests" / "data" / "windows-legs" / "mini-windows-arm64-cpu.toml"
LEG = "mini-windows-x64-cpu"

_WINDOWS_H = """\
/* The two kernel32 calls minillama makes (tests/clangclkit.py). */
#pragma once
typedef void *HMODULE;
typedef int (__stdcall *FARPROC)(void);
__declspec(dllimport) HMODULE __stdcall LoadLibraryA(const char *);
__declspec(dllimport) FARPROC __stdcall GetProcAddress(HMODULE, const char *);
"""
_MSVC_DEPS = """\
# cl.exe's dependency form (CMake's Platform/Windows-MSVC.cmake): CMake 4 gives clang-cl clang's
# own depfile flags (-clang:-MD ...), which ccache refuses as unsupported options.
foreach( lang C CXX )
    set( CMAKE_DEPFILE_FLAGS_${lang} "/showIncludes" )
    set( CMAKE_${lang}_DEPFILE_FORMAT msvc )
endforeach()
"""
_IMPORTS = {
    "msvcrt.dll": "__acrt_iob_func __mingw_vfprintf __mingw_vsnprintf puts strcmp strncpy strrchr strcpy __chkstk",
    "kernel32.dll": "LoadLibraryA GetProcAddress",
}
_ENTRIES = {
    "exe_entry.c": "int main(int, char **);\nint mainCRTStartup(void) { return main(0, 0); }\n",
    "dll_entry.c": "int _DllMainCRTStartup(void *h, unsigned r, void *p) { return 1; }\nint _fltused = 0;\n",
}


def make_kit(kit: Path) -> Path:
    """The compiler, headers and libraries under ``kit`` (module docstring); returns ``kit``."""
    from bundlegraph.core.proc import run, which

    kit.mkdir(parents=True, exist_ok=True)
    cl = kit / "clang-cl"
    if not cl.exists():
        clang = which("clang")
        assert clang, "clang is not installed"
        os.symlink(Path(clang).resolve(), cl)  # Linux only: clang's driver mode comes from its name
    inc = kit / "include"
    inc.mkdir(exist_ok=True)
    (inc / "windows.h").write_text(_WINDOWS_H, encoding="utf-8")
    libs = []
    for dll, names in _IMPORTS.items():
        stem = dll.removesuffix(".dll")
        (kit / f"{stem}.def").write_text(f"LIBRARY {dll}\nEXPORTS\n" + "".join(f"  {n}\n" for n in names.split()))
        argv = ["llvm-dlltool", "-m", "i386:x86-64", "-d", kit / f"{stem}.def", "-l", kit / f"{stem}.lib"]
        run(argv, capture=True, echo=False)
        libs.append(kit / f"{stem}.lib")
    objs = []
    for name, text in _ENTRIES.items():
        (kit / name).write_text(text, encoding="utf-8")
        obj = kit / name.replace(".c", ".obj")
        argv = [cl, f"--target={TARGET}", "/nologo", "/c", "/GS-", name, f"/Fo{obj.name}"]
        run(argv, cwd=kit, capture=True, echo=False)
        objs.append(obj)
    run(["llvm-lib", "/machine:x64", f"/out:{kit / 'entry.lib'}", *objs], capture=True, echo=False)
    (kit / "msvc-deps.cmake").write_text(_MSVC_DEPS, encoding="utf-8")
    return kit


def toolchain_text(kit: Path, flags: list[str]) -> str:
    """The CMake toolchain file of the clang-cl leg: ``flags`` (the prefix maps) in
    ``CMAKE_<LANG>_FLAGS_INIT`` as bundlegraph's toolchains write them."""
    from bundlegraph.toolchains.base import cmake_str, cmake_text
    from bundlegraph.toolchains.prefix_maps import flag_text

    mapped = cmake_text(flag_text(flags))
    cflags = f"/GS- -imsvc {(kit / 'include').as_posix()} -imsvc {MINGW_INCLUDE.as_posix()} {mapped}"
    libs = " ".join((kit / f).as_posix() for f in ("entry.lib", "msvcrt.lib", "kernel32.lib"))
    link = "/nodefaultlib /manifest:no /Brepro"
    return "\n".join(
        [
            "# The clang-cl stand-in of a Windows x64 MSVC leg (tests/clangclkit.py).",
            "set( CMAKE_SYSTEM_NAME Windows )",
            "set( CMAKE_SYSTEM_PROCESSOR AMD64 )",
            f'set( CMAKE_C_COMPILER   {cmake_str((kit / "clang-cl").as_posix())} CACHE FILEPATH "" )',
            f'set( CMAKE_CXX_COMPILER {cmake_str((kit / "clang-cl").as_posix())} CACHE FILEPATH "" )',
            f"set( CMAKE_C_COMPILER_TARGET {TARGET} )",
            f"set( CMAKE_CXX_COMPILER_TARGET {TARGET} )",
            'set( CMAKE_LINKER "/usr/bin/lld-link" CACHE FILEPATH "" )',
            'set( CMAKE_AR "/usr/bin/llvm-lib" CACHE FILEPATH "" )',
            'set( CMAKE_MT "/bin/false" CACHE FILEPATH "" )',
            f'set( CMAKE_C_FLAGS_INIT   "{cflags}" )',
            f'set( CMAKE_CXX_FLAGS_INIT "{cflags}" )',
            f'set( CMAKE_C_STANDARD_LIBRARIES "{libs}" CACHE STRING "" )',
            f'set( CMAKE_EXE_LINKER_FLAGS_INIT    "{link}" )',
            f'set( CMAKE_SHARED_LINKER_FLAGS_INIT "{link}" )',
            f'set( CMAKE_MODULE_LINKER_FLAGS_INIT "{link}" )',
            f"set( CMAKE_USER_MAKE_RULES_OVERRIDE {cmake_str((kit / 'msvc-deps.cmake').as_posix())} )",
            "set( CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY )",
            "set( CMAKE_WINDOWS_EXPORT_ALL_SYMBOLS ON )",
            "",
        ]
    )


def leg_spec():  # -> BundleSpec
    """The Windows stand-in leg: ``mini-windows-arm64-cpu``'s spec as an x64 leg (module docstring)."""
    import tomllib

    from bundlegraph.specs.validation import validate_leg

    data = tomllib.loads(SPEC.read_text(encoding="utf-8"))
    data |= {"id": LEG, "arch": "x64", "install_kind": "windows-cpu", "toolchain": "msvc-x64"}
    data["build"] = {"shards": 3}
    return validate_leg(data)


def build_plan(shards: int):  # -> BuildPlan
    """The leg's :class:`~bundlegraph.pipeline.build.BuildPlan` in this work directory (every target)."""
    from bundlegraph.core import paths
    from bundlegraph.pipeline.build import BuildPlan
    from bundlegraph.toolchains.tools import build_tools

    tools = build_tools()
    bdir = paths.build_dir(LEG)
    cmake_dir = bdir / "cmake"
    return BuildPlan(
        LEG,
        [str(tools.cmake.path), "--build", cmake_dir.as_posix()],
        [],
        False,
        cmake_dir,
        cmake_dir / "bin",
        bdir / "build.json",
        bdir / "logs" / "build.log",
        0,
        True,
        shards,
        None,
        str(tools.ninja.path),
    )


def configure(src: Path, kit: Path, build_type: str = "") -> dict:
    """Configure the leg in this work directory (``BUNDLEGRAPH_WORKDIR``) with clang-cl and the
    launcher bundlegraph's probe chose; writes ``configure.json`` as the configure stage does.
    Returns its launcher entry."""
    from bundlegraph.core import paths, proc
    from bundlegraph.core.fsutil import atomic_write_json
    from bundlegraph.core.state import key_of
    from bundlegraph.pipeline.compile.cmake_cache import cache_entries
    from bundlegraph.pipeline.compile.launcher import ProbeTools, compiler_launcher
    from bundlegraph.toolchains.prefix_maps import PrefixMaps
    from bundlegraph.toolchains.tools import build_tools

    tools = build_tools()
    bdir = paths.build_dir(LEG)
    cmake_dir = bdir / "cmake"
    maps = PrefixMaps(source=src, build=cmake_dir, work=paths.workdir(), cache=paths.cache_root())
    # clang-cl's prefix map: clang's own -fmacro-prefix-map (there is no debug information to map),
    # through -Xclang (ccache refuses clang-cl's /clang: form; clang-cl ignores the bare flag)
    flags = [a for old, new in maps.pairs() for a in ("-Xclang", f"-fmacro-prefix-map={old}={new}")]
    flags += os.environ.get("BUNDLEGRAPH_EXTRA_CLANGCL_FLAGS", "").split()  # a test's extra compile flags
    text = toolchain_text(kit, flags)
    tc = bdir / "toolchain.cmake"
    tc.parent.mkdir(parents=True, exist_ok=True)
    tc.write_text(text, encoding="utf-8")
    env = dict(os.environ)
    launcher = compiler_launcher(ProbeTools(str(kit / "clang-cl"), env), bdir / "launcher-check", ["C", "CXX"])
    entries = cache_entries(leg_spec(), SPEC.name, commit="0123456789abcdef", build_number=42)
    if build_type:
        entries["CMAKE_BUILD_TYPE"] = build_type
    argv = [
        str(tools.cmake.path),
        "--fresh",
        "-S",
        src.as_posix(),
        "-B",
        cmake_dir.as_posix(),
        "-G",
        "Ninja",
        f"-DCMAKE_MAKE_PROGRAM={tools.ninja.path.as_posix()}",
        f"-DCMAKE_TOOLCHAIN_FILE={tc.as_posix()}",
        "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON",
        *(f"-D{k}={v}" for k, v in entries.items()),
        *launcher.args,
    ]
    proc.run(argv, env=env, log=bdir / "logs" / "configure.log", what=f"configure:{LEG}")
    atomic_write_json(
        bdir / "configure.json",
        {
            "leg": LEG,
            "argv": argv,
            "command": proc.quote(argv),
            "toolchain": "clang-cl (tests/clangclkit.py)",
            "toolchain_file": tc.as_posix(),
            "toolchain_sha": key_of({"t": text}),
            "cmake_dir": cmake_dir.as_posix(),
            "source_tree": src.as_posix(),
            "cache": entries,
            "launcher": launcher.record(),
            "prefix_maps": maps.record(),
        },
    )
    return launcher.record()


def main(argv: list[str]) -> int:
    """One runner step in this work directory: ``configure SRC KIT [BUILD_TYPE]``,
    ``shard I/N``, ``build N`` (the leg's whole or final compile, ``[build] shards = N``).
    A :class:`~bundlegraph.core.errors.BundleGraphError` prints its one line and exits 1."""
    from bundlegraph.core.errors import BundleGraphError
    from bundlegraph.pipeline.build import run_build
    from bundlegraph.pipeline.compile.shards import parse_shard
    from bundlegraph.pipeline.shard_build import ShardPlan, run_shard

    try:
        if argv[0] == "configure":
            print(json.dumps(configure(Path(argv[1]), Path(argv[2]), *argv[3:4])))
        elif argv[0] == "shard":
            ref = parse_shard(argv[1])
            bp = build_plan(ref.count)
            run_shard(ShardPlan(bp, ref, bp.record.parent / "shard"))
        elif argv[0] == "build":
            run_build(build_plan(int(argv[1])))
        else:
            raise SystemExit(f"unknown step {argv[0]!r}")
    except BundleGraphError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    raise SystemExit(main(sys.argv[1:]))
