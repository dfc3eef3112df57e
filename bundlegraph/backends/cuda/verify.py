"""The CUDA backend's verify rows (:mod:`bundlegraph.backends.cuda`), registered in
:func:`.table.registry_rows`:

- ``gpu-code``: the fatbin of each GPU backend library holds SASS or PTX for every promised arch
  (:func:`bundlegraph.checks.fatbin.check_archs`; ``120a`` means SM 120,
  :func:`~bundlegraph.schemas.archs.fatbin_sm`);
- ``ptx-isa``: a leg with PTX-only archs (``61-virtual``): the PTX ISA of every PTX-only entry of
  each CUDA backend library's fatbin is one the oldest driver selection sends the leg to
  JIT-compiles (:func:`bundlegraph.checks.ptxisa.jit_problems`; the driver: the policy's
  ``driver_floor``, :func:`bundlegraph.backends.cuda.oldest_driver`);
- ``cuda-major``: no file imports a CUDA library of another major than the leg's runtime line
  (:func:`bundlegraph.checks.backends.foreign_cuda_imports`).

The driver a CUDA bundle may import without shipping (``libcuda.so.1``, ``nvcuda.dll``) is the
backend's ``DRIVERS`` entry, which the generic closure row reads from the registry.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...checks import Failure
from ...schemas.backend import backend, library_file
from ...verification.rows import Outcome, Row, Subject
from .spec import CUDA

if TYPE_CHECKING:
    from ...schemas.records import BundleSpec
    from ...verification.policy import BackendFields, VerifyPolicy


def _cuda_libraries(p: VerifyPolicy) -> tuple[str, ...]:
    """``gpu_backends`` when set, else the CUDA library's file name for ``os`` (unset: on every OS
    CUDA has a driver on): other GPU backends' libraries (``ggml-vulkan``) carry no fatbin to hold
    the archs."""
    if p.gpu_backends:
        return p.gpu_backends
    b = backend("cuda")
    return tuple(library_file(b, o) for o in ((p.os,) if p.os else tuple(b.DRIVERS)))


def gpu_code(s: Subject, p: VerifyPolicy) -> Outcome:
    """One failure per promised arch a CUDA backend library's fatbin lacks; one naming the
    libraries when the bundle has none of them, or a library without a fatbin section."""
    from ...checks.fatbin import check_archs

    libs = _cuda_libraries(p)
    backends = {b.lower() for b in libs}
    found = [r for path, r in sorted(s.results.items()) if path.rsplit("/", 1)[-1].lower() in backends]
    promised = ",".join(p.cmake_archs)
    if not found:
        names = " or ".join(libs)
        return [Failure(names, "gpu-code", f"the leg promises CUDA archs {promised} but the bundle has no {names}")], {}
    fails = []
    for r in found:
        if r.failures and r.fatbin is None and any(f.check in ("parse", "gpu-code") for f in r.failures):
            continue  # the file's own parse failure already says it
        if r.fatbin is None:
            fails.append(Failure(r.path, "gpu-code", f"no CUDA fatbin section, the leg promises archs {promised}"))
            continue
        fails += [
            Failure(r.path, "gpu-code", f"{problem} (promised {promised}; found {r.fatbin.summary()})")
            for problem in check_archs(r.fatbin, list(p.archs))
        ]
    return fails, {}


def ptx_isa(s: Subject, p: VerifyPolicy) -> Outcome:
    """One failure per PTX-only SM of a CUDA backend library whose PTX ISA the leg's oldest driver
    (``p.driver_floor``) cannot JIT-compile; the fact ``ptx_isa`` records each library's ISAs."""
    from ...checks.ptxisa import PtxOnly, jit_problems
    from ...schemas.archs import parse_version

    assert p.driver_floor is not None  # the gate says so
    driver = parse_version(p.driver_floor)
    backends = {b.lower() for b in _cuda_libraries(p)}
    fails, seen = [], {}
    for path, r in sorted(s.results.items()):
        if r.fatbin is None or path.rsplit("/", 1)[-1].lower() not in backends:
            continue
        isa = {sm: frozenset(r.fatbin.ptx_isa.get(sm, ())) for sm in r.fatbin.ptx_only()}
        seen[path] = {str(sm): sorted(f"{a}.{b}" for a, b in v) for sm, v in isa.items()}
        fails += jit_problems(PtxOnly(path, isa), driver)
    return fails, {"ptx_isa": {"driver_floor": p.driver_floor, "files": seen}}


def cuda_major(s: Subject, p: VerifyPolicy) -> Outcome:
    """Imports of a CUDA library whose major is not the leg's (``p.cuda_major``)."""
    from ...checks.backends import foreign_cuda_imports

    assert p.cuda_major is not None  # the gate says so
    return foreign_cuda_imports(s.pe, s.elf, p.cuda_major), {}


def policy_fields(spec: BundleSpec) -> tuple[BackendFields, list[tuple[str, object]]]:
    """What a CUDA leg promises its bundle (:func:`bundlegraph.verification.policy.policy_from_spec`):
    its archs against the fatbin, its driver (``cuda``), its CUDA major against every import and,
    with PTX-only archs, the oldest driver their PTX must JIT on; and the archs its info file states."""
    cuda = CUDA.of(spec)
    fields: BackendFields = {
        "archs": tuple(cuda.archs),
        "cuda": True,
        "cuda_major": cuda.version.major,
        "driver_floor": _driver_floor(spec),
    }
    return fields, [("archs", tuple(cuda.cmake_archs))]


def _driver_floor(spec: BundleSpec) -> str | None:
    """``12.4``: the oldest driver selection sends a CUDA leg with PTX-only archs to (an arch whose
    SM has PTX and no SASS: ``61-virtual``); None for every other leg (its verify key keeps its form)."""
    from ...schemas.archs import fatbin_sm
    from . import oldest_driver

    cuda = CUDA.of(spec)
    sass = {fatbin_sm(a) for a in cuda.archs if a.sass}
    if not any(a.ptx and fatbin_sm(a) not in sass for a in cuda.archs):
        return None
    major, minor = oldest_driver(spec.profile.line, cuda.version.major)
    return f"{major}.{minor}"


ROWS: tuple[Row, ...] = (
    Row("gpu-code", gpu_code, ("archs", "os", "gpu_backends"), "device-code", gate=lambda p: bool(p.archs)),
    Row(
        "ptx-isa",
        ptx_isa,
        ("driver_floor", "os", "gpu_backends"),
        "device-code",
        gate=lambda p: p.driver_floor is not None,
    ),
    Row("cuda-major", cuda_major, ("cuda_major",), "loading", gate=lambda p: p.cuda_major is not None),
)
"""The CUDA backend's rows. Each is gated on the policy fields a CUDA leg sets (promised archs,
a runtime major), so a policy without them (a CPU leg) skips them."""
