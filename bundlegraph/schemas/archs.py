"""CUDA GPU architectures: the CMake forms a spec may use, and which toolkits can build each.

Forms accepted (CMake's ``CMAKE_CUDA_ARCHITECTURES`` syntax): ``120`` (SASS + PTX),
``120a`` / ``100f`` (arch-specific / family-specific features), ``86-real`` (SASS only),
``75-virtual`` (PTX only).

Toolkit range table. Sources: NVIDIA CUDA Toolkit release notes ("CUDA 12.8: adds sm_100,
sm_101, sm_120"; "CUDA 12.9: adds sm_103, sm_121"; "CUDA 13.0: removes offline compilation and
library support for architectures before Turing (sm_75) and renames sm_101 to sm_110") and the
nvcc documentation's ``--gpu-architecture`` list of each release.
"""

from __future__ import annotations

import re
from typing import Any

from ..core.lightclass import frozen_ordered

Version = tuple[int, int]

# sm -> (first toolkit, last toolkit or None while still supported)
ARCH_RANGE: dict[int, tuple[Version, Version | None]] = {
    50: ((6, 0), (12, 9)),
    52: ((7, 0), (12, 9)),
    53: ((7, 0), (12, 9)),
    60: ((8, 0), (12, 9)),
    61: ((8, 0), (12, 9)),
    62: ((8, 0), (12, 9)),
    70: ((9, 0), (12, 9)),
    72: ((10, 0), (12, 9)),
    75: ((10, 0), None),
    80: ((11, 0), None),
    86: ((11, 1), None),
    87: ((11, 4), None),
    88: ((13, 0), None),
    89: ((11, 8), None),
    90: ((11, 8), None),
    100: ((12, 8), None),
    101: ((12, 8), (12, 9)),  # renamed to sm_110 in CUDA 13.0
    103: ((12, 9), None),
    110: ((13, 0), None),
    120: ((12, 8), None),
    121: ((12, 9), None),
}

_ARCH_RE = re.compile(r"^(?P<sm>\d{2,3})(?P<feat>[af]?)(?P<kind>-real|-virtual)?$")


@frozen_ordered
class Arch:
    """One entry of ``CMAKE_CUDA_ARCHITECTURES``.

    ``sm``: the SM number (``120``); ``feature``: ``""``, ``"a"`` or ``"f"``;
    ``sass``/``ptx``: whether the build embeds machine code / PTX for it.
    """

    sm: int
    feature: str = ""
    sass: bool = True
    ptx: bool = True

    @property
    def cmake(self) -> str:
        """The CMake spelling (``120a``, ``86-real``, ``75-virtual``)."""
        suffix = "" if (self.sass and self.ptx) else ("-real" if self.sass else "-virtual")
        return f"{self.sm}{self.feature}{suffix}"

    def __str__(self) -> str:
        return self.cmake

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> Any:
        """How pydantic validates a spec's arch (the CMake text, parsed once by
        :func:`parse_arch`; an :class:`Arch` is taken as is) and writes it back (CMake text)."""
        from pydantic_core import core_schema as cs

        return cs.no_info_plain_validator_function(
            lambda v: v if isinstance(v, Arch) else parse_arch(str(v)),
            serialization=cs.plain_serializer_function_ser_schema(lambda a: a.cmake, return_schema=cs.str_schema()),
        )

    @classmethod
    def __get_pydantic_json_schema__(cls, core: Any, handler: Any) -> dict[str, Any]:
        return {
            "type": "string",
            "pattern": r"^\d{2,3}[af]?(-real|-virtual)?$",
            "description": "a CUDA arch in CMake form: 120, 120a, 100f, 86-real, 75-virtual",
        }


class CudaVersion(str):
    """A CUDA toolkit version as a spec writes it (``"13.4"``; ``"13.4.2"`` is accepted), with
    its numbers: :attr:`major`, :attr:`minor`, :attr:`parts` (``(13, 4)``, what the arch table
    and the toolkit rules compare). It is the text it was written as, so it prints, joins paths
    and serialises as that text. Raises ``ValueError`` for text of another form."""

    def __new__(cls, text: object) -> CudaVersion:
        parse_version(str(text))
        return super().__new__(cls, str(text))

    @property
    def parts(self) -> Version:
        """``(major, minor)``: ``"13.4"`` -> ``(13, 4)``."""
        return parse_version(self)

    @property
    def major(self) -> int:
        """``"13.4"`` -> 13 (the runtime line: ``cuda13``)."""
        return self.parts[0]

    @property
    def minor(self) -> int:
        """``"13.4"`` -> 4."""
        return self.parts[1]

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> Any:
        from pydantic_core import core_schema as cs

        return cs.no_info_after_validator_function(
            cls, cs.str_schema(), serialization=cs.plain_serializer_function_ser_schema(str)
        )

    @classmethod
    def __get_pydantic_json_schema__(cls, core: Any, handler: Any) -> dict[str, Any]:
        return {"type": "string", "pattern": r"^\d+\.\d+(\.\d+)?$"}


def parse_arch(text: str) -> Arch:
    """Parse one CMake arch form; raise ``ValueError`` naming the accepted forms."""
    m = _ARCH_RE.match(str(text).strip())
    if not m:
        raise ValueError(
            f"{text!r} is not a CUDA arch in CMake form (expected e.g. '120', '120a', '86-real', '75-virtual')"
        )
    kind = m.group("kind")
    return Arch(
        sm=int(m.group("sm")),
        feature=m.group("feat"),
        sass=kind != "-virtual",
        ptx=kind != "-real",
    )


def gencode(arch: Arch) -> str:
    """nvcc's ``--generate-code`` for ``arch``, as CMake writes it for that form (``120a`` ->
    ``arch=compute_120a,code=[compute_120a,sm_120a]``; ``86-real``: SASS only; ``75-virtual``:
    PTX only). Source: nvcc's documentation, "--generate-code"."""
    name = f"{arch.sm}{arch.feature}"
    codes = ([f"compute_{name}"] if arch.ptx else []) + ([f"sm_{name}"] if arch.sass else [])
    return f"--generate-code=arch=compute_{name},code=[{','.join(codes)}]"


def parse_version(text: str) -> Version:
    """``"13.4"`` or ``"13.4.2"`` -> ``(13, 4)``."""
    parts = str(text).split(".")
    if len(parts) < 2 or not all(p.isdigit() for p in parts[:2]):
        raise ValueError(f"{text!r} is not a CUDA version like '13.4'")
    return int(parts[0]), int(parts[1])


def arch_supported(arch: Arch, cuda: Version) -> str | None:
    """None when ``cuda`` can build ``arch``; else a sentence saying which toolkits can."""
    rng = ARCH_RANGE.get(arch.sm)
    if rng is None:
        known = ", ".join(str(s) for s in sorted(ARCH_RANGE))
        return f"sm_{arch.sm} is not a known CUDA architecture (known: {known})"
    first, last = rng
    v = f"{cuda[0]}.{cuda[1]}"
    if cuda < first:
        return f"sm_{arch.sm} needs CUDA >= {first[0]}.{first[1]}, the leg uses CUDA {v}"
    if last is not None and cuda > last:
        return f"sm_{arch.sm} was dropped after CUDA {last[0]}.{last[1]}, the leg uses CUDA {v}"
    return None


def fatbin_sm(arch: Arch) -> int:
    """The SM number a fatbin records for ``arch``. ggml rewrites 120 -> 120a and 121 -> 121a
    with CUDA 13; the fatbin entry for ``120a`` records SM 120, so both map to 120."""
    return arch.sm


def known_sms(cuda: Version | None = None) -> list[int]:
    """SM numbers of NVIDIA's arch table (:data:`ARCH_RANGE`), those toolkit ``cuda`` supports
    when given."""
    if cuda is None:
        return sorted(ARCH_RANGE)
    return sorted(sm for sm, (first, last) in ARCH_RANGE.items() if first <= cuda and (last is None or cuda <= last))


def sass_runs_on(sm: int, feature: str, among: list[int]) -> list[int]:
    """The GPUs (SM numbers of ``among``) that SASS built for ``sm`` with ``feature`` runs on.

    NVIDIA's binary compatibility rule (CUDA C++ Programming Guide, "Binary Compatibility"):
    a cubin for compute capability X.y runs on devices of capability X.z with z >= y, so plain
    ``sm_100`` also runs on sm_103 and ``sm_80`` on 86/87/89. Arch-specific ``a`` targets
    (``sm_120a``; ggml builds 120a/121a with CUDA 13) run only on exactly that capability;
    family-specific ``f`` targets run within their family like plain ones. PTX (JIT) is not
    counted: a bundle claims what its machine code runs."""
    if feature == "a":
        return [sm] if sm in among else []
    return [h for h in among if h // 10 == sm // 10 and h >= sm]  # the same major (86 -> 8, 121 -> 12)


def supported_sms_of(sass_archs: list[str], cuda: Version | None) -> list[int]:
    """Every SM (of the arch table, for toolkit ``cuda``, and those later toolkits added) that
    some SASS target of ``sass_archs`` (``["120a", "121a"]``, ``["86", "100"]``) runs on, sorted.
    A cubin runs on a GPU newer than the toolkit that built it (binary compatibility is the
    hardware's and the driver's: CUDA 12.8's sm_100 runs on the sm_103 CUDA 12.9 added); an SM
    the toolkit already dropped or renamed is not counted."""
    among = known_sms(cuda)
    if cuda is not None:
        among += [sm for sm, (first, _last) in ARCH_RANGE.items() if first > cuda]
    out: set[int] = set()
    for a in sass_archs:
        arch = parse_arch(a)
        out.update(sass_runs_on(arch.sm, arch.feature, among + ([arch.sm] if arch.sm not in among else [])))
    return sorted(out)
