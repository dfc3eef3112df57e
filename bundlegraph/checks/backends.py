"""Two checks on how a bundle's backends will load on the user's machine.

Under ``GGML_BACKEND_DL=ON`` ggml finds its backends at run time by file name
(``ggml-<name>.dll`` / ``libggml-<name>.so``) and calls each one's ``ggml_backend_init``; a backend
library without that export is loaded and silently ignored (the field case: a CUDA host whose
``llama-cli --list-devices`` lists no device). Source of the rule: ggml's
``src/ggml-backend-reg.cpp`` (``ggml_backend_load_best``: ``dl_get_sym(handle, "ggml_backend_init")``).

A CUDA leg of runtime line ``cudaN`` must not import a CUDA library of another major
(``cublas64_12.dll`` in a cuda13 bundle), even one its spec declares external: installers pair the
bundle with the runtime of its line only (NVIDIA's names carry the major: ``cudart64_13.dll``,
``libcublas.so.13``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from . import Failure
from .elf import ELFInfo
from .pe import PEInfo

ENTRY = "ggml_backend_init"
_PE_BACKEND = re.compile(r"^ggml-(?!base\.)[a-z0-9_-]+\.dll$", re.IGNORECASE)
_ELF_BACKEND = re.compile(r"^libggml-(?!base\.)[a-z0-9_-]+\.so$")
"""Backend file names ggml's loader considers (``ggml-base`` is the core library, not a backend;
``ggml.dll``/``libggml.so`` and versioned names such as ``ggml.v0.4.0.dll`` are not backends)."""


def missing_entry_points(pe: Mapping[str, PEInfo], elf: Mapping[str, ELFInfo]) -> list[Failure]:
    """One failure per backend library (by the names above) that does not export
    ``ggml_backend_init``."""
    why = f"exports no {ENTRY}: with GGML_BACKEND_DL=ON ggml loads this backend and ignores it"
    found = [(p, i.exports, _PE_BACKEND) for p, i in sorted(pe.items())]
    found += [(p, i.exports, _ELF_BACKEND) for p, i in sorted(elf.items())]
    return [
        Failure(p, "backend", why)
        for p, exports, rx in found
        if rx.match(p.rsplit("/", 1)[-1]) and ENTRY not in exports
    ]


_CUDA_LIBS = r"(?:cudart|cublas|cublasLt|cufft|curand|cusparse|cusolver|nvrtc|nvJitLink|npp\w*|nvjpeg)"
_PE_CUDA = re.compile(rf"^{_CUDA_LIBS}64_(\d+)(?:_\d+)?\.dll$", re.IGNORECASE)
_ELF_CUDA = re.compile(rf"^lib{_CUDA_LIBS}\.so\.(\d+)(?:\.\d+)*$")


def foreign_cuda_imports(pe: Mapping[str, PEInfo], elf: Mapping[str, ELFInfo], major: int) -> list[Failure]:
    """One failure per import of a CUDA library whose major is not ``major`` (the leg's line)."""
    found = [(p, "imports", imp.dll, _PE_CUDA) for p, i in sorted(pe.items()) for imp in i.imports]
    found += [(p, "needs", lib, _ELF_CUDA) for p, i in sorted(elf.items()) for lib in i.needed]
    why = f"the leg is CUDA {major} and installers pair it with the CUDA {major} runtime only"
    return [
        Failure(path, "imports", f"{verb} {lib}, CUDA {m.group(1)}; {why}")
        for path, verb, lib, rx in found
        if (m := rx.match(lib)) and int(m.group(1)) != major
    ]
