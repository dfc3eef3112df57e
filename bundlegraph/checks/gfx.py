"""AMD GPU processors as code objects name them: the processor an AMDGPU code object is built
for, and what a plain processor name looks like. (The fork's gfx families, which expand to these
names, are the HIP backend's: :mod:`bundlegraph.backends.hip.gfx`.)

- :data:`AMDGPU_MACH`: ``EF_AMDGPU_MACH`` (bits 0-7 of an AMDGPU ELF's ``e_flags``) -> the gfx
  processor. Source: LLVM ``llvm/include/llvm/BinaryFormat/ELF.h`` and LLVM's AMDGPUUsage,
  "AMDGPU ELF Header e_flags"; these were also met in real code objects here, each agreeing
  with its bundle entry's triple (hipcc 5.2's output, Debian's rocFFT/SpFFT, bitsandbytes' ROCm
  6.4-7.2 libraries, hip-quant's Windows DLLs): gfx803, gfx900, gfx906, gfx908, gfx90a, gfx942,
  gfx950, gfx1010-1012, gfx1030-1036, gfx1100-1103, gfx1150-1153, gfx1200, gfx1201, gfx1250.
"""

from __future__ import annotations

import re

AMDGPU_MACH: dict[int, str] = {
    0x28: "gfx801",
    0x29: "gfx802",
    0x2A: "gfx803",
    0x2B: "gfx810",
    0x2C: "gfx900",
    0x2D: "gfx902",
    0x2E: "gfx904",
    0x2F: "gfx906",
    0x30: "gfx908",
    0x31: "gfx909",
    0x32: "gfx90c",
    0x33: "gfx1010",
    0x34: "gfx1011",
    0x35: "gfx1012",
    0x36: "gfx1030",
    0x37: "gfx1031",
    0x38: "gfx1032",
    0x39: "gfx1033",
    0x3D: "gfx1035",
    0x3E: "gfx1034",
    0x3F: "gfx90a",
    0x40: "gfx940",
    0x41: "gfx1100",
    0x42: "gfx1013",
    0x43: "gfx1150",
    0x44: "gfx1103",
    0x45: "gfx1036",
    0x46: "gfx1101",
    0x47: "gfx1102",
    0x48: "gfx1200",
    0x49: "gfx1250",
    0x4A: "gfx1151",
    0x4B: "gfx941",
    0x4C: "gfx942",
    0x4E: "gfx1201",
    0x4F: "gfx950",
    0x55: "gfx1152",
    0x58: "gfx1153",
}
"""``EF_AMDGPU_MACH`` value -> gfx processor (LLVM ELF.h; the generic targets are left out: no
leg builds them)."""

_GFX = re.compile(r"gfx[0-9]{2,4}[0-9a-f]")


def is_processor(name: str) -> bool:
    """True for a plain gfx processor name (``gfx90a``, ``gfx1100``), without target features."""
    return _GFX.fullmatch(name) is not None
