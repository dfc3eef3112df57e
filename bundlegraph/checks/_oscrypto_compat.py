"""Work around oscrypto 1.3.0 failing to import against OpenSSL >= 3.0.10.

signify verifies certificate chains through ``oscrypto`` (via ``certvalidator``). oscrypto's
last release (1.3.0, 2022) detects the OpenSSL version with the regular expression
``\\b(\\d\\.\\d\\.\\d[a-z]*)\\b``, which matches no version with a two-digit part, so on Linux
with OpenSSL 3.0.10 or newer ``import oscrypto.asymmetric`` raises ``LibraryNotFoundError:
Error detecting the version of libcrypto``. Upstream fixed this on its main branch (issues
wbond/oscrypto#75 and #78: the digits become ``\\d+``) but never released the fix.

:func:`ensure_oscrypto` tries the normal import first and, only when it fails with exactly that
error, loads oscrypto's own ``_libcrypto_ctypes`` / ``_libcrypto_cffi`` module from its
installed source with that one expression corrected (the upstream change, nothing else).
On Windows and macOS oscrypto uses the OS crypto libraries and this never triggers.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import sys

_BROKEN = "Error detecting the version of libcrypto"


def _patched_source(name: str) -> tuple[importlib.machinery.ModuleSpec, str]:
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
        raise ImportError(f"{name} not found")
    source = spec.loader.get_source(name)  # type: ignore[attr-defined]  # SourceLoader method; Loader's stub lacks it
    old = "'\\\\b(\\\\d\\\\.\\\\d\\\\.\\\\d[a-z]*)\\\\b'"
    new = "'\\\\b(\\\\d+\\\\.\\\\d+\\\\.\\\\d+[a-z]*)\\\\b'"
    if source is None or old not in source:
        raise ImportError(f"{name}: the known version expression was not found; cannot apply the fix")
    return spec, source.replace(old, new)


def ensure_oscrypto() -> None:
    """Make ``import oscrypto.asymmetric`` work (see the module docstring). Raises the
    original ImportError/LibraryNotFoundError for any other failure."""
    try:
        importlib.import_module("oscrypto.asymmetric")
        return
    except Exception as e:  # oscrypto.errors.LibraryNotFoundError derives from Exception
        if _BROKEN not in str(e):
            raise
    from oscrypto import ffi

    name = "oscrypto._openssl._libcrypto_cffi" if ffi() == "cffi" else "oscrypto._openssl._libcrypto_ctypes"
    spec, source = _patched_source(name)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        exec(compile(source, spec.origin or name, "exec"), module.__dict__)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    importlib.import_module("oscrypto.asymmetric")
