"""Build tiny real binaries for the verify tests: PE DLLs (x64/ARM64) with Debian's clang,
``lld-link`` and ``llvm-dlltool``; Authenticode signatures with ``osslsigncode`` and a test CA
made with ``openssl``; ELF shared objects with ``gcc`` and ``nvcc``. Every program runs through
:func:`bundlegraph.core.proc.run`. A missing tool fails the test (``./dev.sh test`` installs them).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from bundlegraph.core.proc import run

CLANG_TARGET = {"x64": "x86_64-pc-windows-msvc", "arm64": "aarch64-pc-windows-msvc"}
DLLTOOL_MACHINE = {"x64": "i386:x86-64", "arm64": "arm64"}


def need(*tools: str) -> None:
    """Fail the calling test unless every tool is installed (skip on a host that is not Linux)."""
    from conftest import require_tools

    require_tools(*tools)


def _run(argv: list, cwd: Path) -> str:
    return run([str(a) for a in argv], cwd=cwd, capture=True, echo=False, what=Path(str(argv[0])).name).output


@dataclass
class Dll:
    """A DLL to build: ``name`` (``ggml-cpu.dll``), ``arch``, ``exports`` (functions it
    defines), ``forwards`` (export name -> ``other.Function``), ``imports`` (DLL -> functions
    imported by name; ``#N`` imports ordinal N), ``delay`` (DLLs to delay-load); ``extra_c``
    (more C source, e.g. a fatbin array in its own section); ``exe``: link a program
    (``name`` ends in ``.exe``, entry ``mainCRTStartup``) instead of a DLL."""

    name: str
    arch: str
    exports: tuple[str, ...] = ("bg_fn",)
    forwards: tuple[tuple[str, str], ...] = ()
    imports: tuple[tuple[str, tuple[str, ...]], ...] = ()
    delay: tuple[str, ...] = ()
    extra_c: str = ""
    exe: bool = False


def build_dll(spec: Dll, out_dir: Path) -> Path:
    """Compile and link ``spec`` into ``out_dir/spec.name``; returns the path."""
    need("clang", "lld-link", "llvm-dlltool")
    work = out_dir / f".build-{spec.arch}-{spec.name}"
    work.mkdir(parents=True, exist_ok=True)
    libs = []
    decls, calls = [], []
    for i, (dll, funcs) in enumerate(spec.imports):
        lines = [f"LIBRARY {dll}", "EXPORTS"]
        for j, f in enumerate(funcs):
            if f.startswith("#"):
                sym = f"bg_ord_{i}_{f[1:]}"
                lines.append(f"  {sym} @{f[1:]} NONAME")
            else:
                sym = f
                lines.append(f"  {f}")
            decls.append(f"__declspec(dllimport) void {sym}(void);")
            calls.append(f"{sym}();")
        (work / f"imp{i}.def").write_text("\n".join(lines) + "\n")
        lib = work / f"imp{i}.lib"
        _run(["llvm-dlltool", "-m", DLLTOOL_MACHINE[spec.arch], "-d", work / f"imp{i}.def", "-l", lib], work)
        libs.append(lib)
    body = [*decls, "void *__delayLoadHelper2(void *d, void *f) { return 0; }", spec.extra_c]
    for k, e in enumerate(spec.exports):
        inner = " ".join(calls) if k == 0 else ""
        body.append(f"int {e}(int x) {{ {inner} return x + {k}; }}")
    if spec.exe:
        body.append(f"int mainCRTStartup(void) {{ return {spec.exports[0]}(0); }}")
    (work / "src.c").write_text("\n".join(body) + "\n")
    exports = [f"  {e}" for e in spec.exports] + [f"  {n} = {t}" for n, t in spec.forwards]
    (work / "exports.def").write_text(f"LIBRARY {spec.name}\nEXPORTS\n" + "\n".join(exports) + "\n")
    _run(
        [
            "clang",
            f"--target={CLANG_TARGET[spec.arch]}",
            "-c",
            "src.c",
            "-o",
            "src.obj",
            "-ffreestanding",
            "-fno-stack-protector",
            "-O1",
        ],
        work,
    )
    out = out_dir / spec.name
    kind = ["/entry:mainCRTStartup", "/subsystem:console"] if spec.exe else ["/dll", "/noentry", "/def:exports.def"]
    _run(
        [
            "lld-link",
            *kind,
            "/nodefaultlib",
            f"/machine:{spec.arch}",
            "src.obj",
            *libs,
            *[f"/delayload:{d}" for d in spec.delay],
            f"/out:{out}",
            *([] if spec.exe else [f"/implib:{work / 'out.lib'}"]),
        ],
        work,
    )
    return out


@dataclass(frozen=True)
class TestCA:
    """A root certificate (``root_pem``) and a code-signing leaf (``leaf_pem``, ``leaf_key``)."""

    root_pem: Path
    leaf_pem: Path
    leaf_key: Path


def make_ca(d: Path) -> TestCA:
    """A fresh test CA and code-signing certificate under ``d`` (openssl)."""
    need("openssl")
    d.mkdir(parents=True, exist_ok=True)
    _run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "ca.key",
            "-out",
            "ca.pem",
            "-days",
            "30",
            "-subj",
            "/CN=bundlegraph test root",
            "-addext",
            "basicConstraints=critical,CA:TRUE",
            "-addext",
            "keyUsage=critical,keyCertSign,cRLSign",
        ],
        d,
    )
    _run(
        [
            "openssl",
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "leaf.key",
            "-out",
            "leaf.csr",
            "-subj",
            "/CN=bundlegraph test signer",
        ],
        d,
    )
    (d / "leaf.ext").write_text(
        "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=codeSigning\n"
    )
    _run(
        [
            "openssl",
            "x509",
            "-req",
            "-in",
            "leaf.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            "leaf.pem",
            "-days",
            "30",
            "-extfile",
            "leaf.ext",
        ],
        d,
    )
    return TestCA(d / "ca.pem", d / "leaf.pem", d / "leaf.key")


def sign(src: Path, dst: Path, ca: TestCA) -> Path:
    """Authenticode-sign ``src`` into ``dst`` with the test leaf (osslsigncode, SHA-256)."""
    need("osslsigncode")
    if dst.exists():
        dst.unlink()
    _run(
        ["osslsigncode", "sign", "-certs", ca.leaf_pem, "-key", ca.leaf_key, "-h", "sha256", "-in", src, "-out", dst],
        dst.parent,
    )
    return dst


def flip_code_byte(path: Path) -> None:
    """Change one byte inside the first section's raw data (code the signature covers)."""
    import pefile

    pe = pefile.PE(str(path), fast_load=True)
    off = pe.sections[0].PointerToRawData + 8
    pe.close()
    data = bytearray(path.read_bytes())
    data[off] ^= 0xFF
    path.write_bytes(bytes(data))


def gcc_so(out: Path, source: str, *args: str, cc: str = "gcc") -> Path:
    """Compile ``source`` (C) into the shared object ``out`` with extra linker ``args``."""
    need(cc)
    src = out.with_suffix(".c")
    src.write_text(source)
    _run([cc, "-shared", "-fPIC", "-O1", "-o", out, src, *args], out.parent)
    return out


def copy_tree(src: Path, dst: Path) -> Path:
    """A private copy of a (read-only, cached) input tree."""
    shutil.copytree(src, dst)
    return dst
