"""Compile CUDA C++ to PTX with NVIDIA's NVRTC library (``libnvrtc.so``) through ctypes: NVRTC's own
C API (``nvrtcCreateProgram``, ``nvrtcCompileProgram``, ``nvrtcGetPTX``; CUDA's NVRTC user guide), so
a test gets the PTX a toolkit release writes without that release's nvcc (NVIDIA's ``-cu12`` wheels
hold no nvcc, but do hold NVRTC).

Run as a program so the library never loads into the test process::

    python tests/nvrtckit.py LIBNVRTC SOURCE.cu ARCH OUT.ptx     # ARCH: compute_61
"""

from __future__ import annotations

import ctypes
import sys
from pathlib import Path


def compile_ptx(lib_path: str, source: Path, arch: str) -> tuple[bytes, str]:
    """``(ptx, log)``; raises RuntimeError with NVRTC's log when the compile fails."""
    lib = ctypes.CDLL(lib_path)
    prog = ctypes.c_void_p()
    if lib.nvrtcCreateProgram(ctypes.byref(prog), source.read_bytes(), source.name.encode(), 0, None, None):
        raise RuntimeError("nvrtcCreateProgram failed")
    opts = (ctypes.c_char_p * 1)(f"--gpu-architecture={arch}".encode())
    rc = lib.nvrtcCompileProgram(prog, 1, opts)
    n = ctypes.c_size_t()
    lib.nvrtcGetProgramLogSize(prog, ctypes.byref(n))
    log = ctypes.create_string_buffer(n.value)
    lib.nvrtcGetProgramLog(prog, log)
    if rc:
        raise RuntimeError(f"nvrtcCompileProgram {rc}: {log.value.decode(errors='replace')}")
    lib.nvrtcGetPTXSize(prog, ctypes.byref(n))
    ptx = ctypes.create_string_buffer(n.value)
    lib.nvrtcGetPTX(prog, ptx)
    return ptx.value, log.value.decode(errors="replace")


if __name__ == "__main__":
    lib, src, arch, out = sys.argv[1:5]
    text, _log = compile_ptx(lib, Path(src), arch)
    Path(out).write_bytes(text)
