"""Under ``GGML_BACKEND_DL=ON`` ggml finds its backends at run time by file name
(``ggml-<name>.dll`` / ``libggml-<name>.so``) and calls each one's ``ggml_backend_init``; a backend
library without that export is loaded and silently ignored (the field case: a CUDA host whose
``llama-cli --list-devices`` lists no device). Source of the rule: ggml's
``src/ggml-backend-reg.cpp`` (``ggml_backend_load_best``: ``dl_get_sym(handle, "ggml_backend_init")``).
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
    out = []
    for path, info in sorted(pe.items()):
        if _PE_BACKEND.match(path.rsplit("/", 1)[-1]) and ENTRY not in info.exports:
            out.append(Failure(path, "backend", f"exports no {ENTRY}: with GGML_BACKEND_DL=ON ggml loads this "
                                                f"backend and ignores it"))
    for path, einfo in sorted(elf.items()):
        if _ELF_BACKEND.match(path.rsplit("/", 1)[-1]) and ENTRY not in einfo.exports:
            out.append(Failure(path, "backend", f"exports no {ENTRY}: with GGML_BACKEND_DL=ON ggml loads this "
                                                f"backend and ignores it"))
    return out
