"""Helpers for the merge/package/manifest tests: the real release, real source tree, tiny real
Linux builds (compiled here with gcc / aarch64-linux-gnu-gcc) and an MSVC-shaped redist root
holding real ARM64 DLLs. No mocks: every file a test packs is a real PE/ELF binary."""

from __future__ import annotations

import shutil
import struct
import subprocess
from pathlib import Path

from bundlegraph.pipeline.archivecheck import archive_verifier
from bundlegraph.pipeline.package import PackageInputs, run_package
from bundlegraph.pipeline.source import SourceRecord, plan_source, run_source
from bundlegraph.schemas.records import Matrix
from bundlegraph.specs.loader import load_matrix

ROOT = Path(__file__).resolve().parents[1]

C_LIB = "int {sym}(void) {{ return {val}; }}\n"
C_EXE = "int main(void) {{ return {val}; }}\n"


def real_matrix() -> Matrix:
    return load_matrix(ROOT / "bundles")


def real_source(tmp: Path) -> SourceRecord:
    """The real llama.cpp source pin through the real source stage (shared cache)."""
    from conftest import require_input

    require_input("llama-sdist")  # fetched on a cold cache, or the test fails saying so
    m = real_matrix()
    plan = plan_source(m.release, m.root)
    return run_source(plan, m.release, tmp / "source.json", tmp / "source.log")


def compile_linux(out: Path, cc: str, libs: dict[str, int], exes: dict[str, int]) -> Path:
    """Compile tiny shared libraries (``libs``: file name -> value) and programs with ``cc``."""
    from conftest import require_tools

    require_tools(cc)
    out.mkdir(parents=True, exist_ok=True)
    src = out.parent / f".src-{out.name}"
    src.mkdir(exist_ok=True)
    for name, val in libs.items():
        c = src / f"{name}.c"
        code = C_LIB.format(sym=name.replace(".", "_").replace("-", "_"), val=val)
        if name.startswith("libggml-") and not name.startswith("libggml-base"):
            code += "int ggml_backend_init(void) { return 0; }\n"  # as every GGML_BACKEND_DL backend
        c.write_text(code)
        subprocess.run([cc, "-shared", "-fPIC", "-O1", "-o", str(out / name), str(c)], check=True)
    for name, val in exes.items():
        c = src / f"{name}.c"
        c.write_text(C_EXE.format(val=val))
        subprocess.run([cc, "-O1", "-o", str(out / name), str(c)], check=True)
    return out


def fatbin_c(sass: list[int], ptx: list[int]) -> str:
    """C source putting a CUDA fatbin container (``fatbinary_section.h`` layout: container
    header magic 0xBA55ED50, then entries kind 2 = SASS / 1 = PTX with their SM) into the
    ``.nv_fatbin`` section, as nvcc does. The payloads are placeholders: verify reads the
    inventory, never the machine code."""

    def entry(kind: int, sm: int, payload: bytes) -> bytes:
        padded = (len(payload) + 7) & ~7
        head = struct.pack("<HHIQI4xHHI8xQ", kind, 0x0101, 64, padded, len(payload), 1, 8, sm, 0x41)
        return head + b"\0" * (64 - len(head)) + payload + b"\0" * (padded - len(payload))

    body = b"".join([entry(2, sm, b"sass%d" % sm) for sm in sass] + [entry(1, sm, b"ptx%d" % sm) for sm in ptx])
    blob = struct.pack("<IHHQ", 0xBA55ED50, 1, 16, len(body)) + body
    arr = ",".join(str(b) for b in blob)
    return (
        '__attribute__((section(".nv_fatbin"), used, aligned(8))) '
        f"const unsigned char ggml_cuda_fatbin[{len(blob)}] = {{{arr}}};\n"
        "int ggml_backend_init(void) { return ggml_cuda_fatbin[0]; }\n"
    )


def compile_cuda_backend(out: Path, cc: str, sass: list[int], ptx: list[int]) -> Path:
    """``out/libggml-cuda.so`` built with ``cc`` from :func:`fatbin_c`."""
    from conftest import require_tools

    require_tools(cc)
    out.mkdir(parents=True, exist_ok=True)
    c = out.parent / f".{out.name}-cuda.c"
    c.write_text(fatbin_c(sass, ptx))
    subprocess.run([cc, "-shared", "-fPIC", "-O1", "-o", str(out / "libggml-cuda.so"), str(c)], check=True)
    return out


def linux_cpu_tree(tmp: Path) -> Path:
    """A tiny real aarch64 build of the files linux-arm64-cpu requires (the installer's set),
    plus a .so symlink."""
    libs = [
        "libggml-base.so",
        "libggml.so",
        "libllama.so",
        "libggml-cpu.so",
        "libllama-common.so",
        "libmtmd.so",
        "libllama-server-impl.so",
        "libllama-quantize-impl.so",
    ]
    d = compile_linux(
        tmp,
        "aarch64-linux-gnu-gcc",
        {n: i for i, n in enumerate(libs, 1)},
        {"llama-server": 20, "llama-cli": 21, "llama-quantize": 22},
    )
    link = d / "libllama.so.0"
    if not link.exists():
        link.symlink_to("libllama.so")
    return d


def redist_root(tmp: Path, npm_bins: Path) -> Path:
    """An MSVC ``VC/Redist/MSVC`` layout: versions 14.9.1, 14.40.33807 (newest) and 14.38.33130,
    each holding a different real ARM64 DLL as ``libomp140.aarch64.dll``; plus a ``v143`` dir."""
    root = tmp / "Redist" / "MSVC"
    for ver, src in (("14.9.1", "ggml.v0.4.0.dll"), ("14.40.33807", "ggml-cpu.dll"), ("14.38.33130", "ggml-base.dll")):
        d = root / ver / "debug_nonredist" / "arm64" / "Microsoft.VC143.OpenMP.LLVM"
        d.mkdir(parents=True)
        shutil.copyfile(npm_bins / src, d / "libomp140.aarch64.dll")
    (root / "v143").mkdir()
    return root


def npm_bins(real_input) -> Path:
    root = real_input("npm-win-arm64", unpack=True)
    return next((root / "package" / "bins").iterdir())


def package(
    spec,
    release,
    tree: Path,
    dest: Path,
    src: SourceRecord,
    env: dict | None = None,
    base=None,
    trust_roots: tuple[str, ...] = (),
    **kw,
):
    """run_package with the real archive verifier (verify's policy for ``spec``/``base``)."""
    inp = PackageInputs(
        spec=spec,
        release=release,
        tree=tree,
        dest=dest,
        source_tree=Path(src.tree),
        source_commit=src.commit,
        source_digest=src.digest,
        commit_epoch=src.epoch,
        **kw,
    )
    return run_package(
        inp, archive_verifier(spec, release, base=base, trust_roots=trust_roots), env=env if env is not None else {}
    )
