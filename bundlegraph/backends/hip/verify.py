"""The HIP backend's verify rows (:mod:`bundlegraph.backends.hip`), found by
:func:`.table.registry_rows` under the backend's name; they gate on the promised gfx targets (a
ROCm leg's ``mapped_targets``, :attr:`~.policy.VerifyPolicy.gfx_targets`):

- ``hip-code``: the bundle reader lists the gfx code objects of every clang offload bundle of
  every ELF and PE file (:func:`bundlegraph.checks.offload.inventory`, recorded on each
  :class:`~bundlegraph.checks.inspect.FileResult` as ``offload`` and in the report's ``bundle``
  section as ``offload``). Each ``ggml-hip`` library must hold code objects for exactly the
  promised targets, in every bundle (:func:`~bundlegraph.checks.offload.check_targets`: a target
  missing, or held by only some bundles, fails at the first kernel on that GPU; a target nobody
  states is one the manifest steers no host to). The bundle must hold a ``ggml-hip`` library at
  all. Any other file with offload bundles (the shipped runtime: rocBLAS, hipBLASLt) must hold
  every promised target; it may hold more (TheRock's ``-all`` family tarballs build the whole
  family).

The runtime ggml-hip imports (``libamdhip64``, ``hipblas.dll``, ...) and a rocBLAS kernel file per
target are the spec's ``required`` entries (the generic content row): a Windows bundle without
``hipblas.dll`` (ggml-org/llama.cpp#26996) or without ``rocblas/library/*gfx1100*`` fails there,
by name.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...checks import Failure
from ...core.platforms import OS_NAMES
from ...schemas.backend import backend, library_file
from ...verification.rows import Outcome, Row, Subject
from .spec import HIP

if TYPE_CHECKING:
    from ...schemas.records import BundleSpec
    from ...verification.policy import BackendFields, VerifyPolicy

NAME = "hip"
"""The backend these rows belong to."""


def _libraries(p: VerifyPolicy) -> tuple[str, ...]:
    """``gpu_backends`` when set, else ``ggml-hip``'s file name on the policy's OS (every OS when unset)."""
    if p.gpu_backends:
        return p.gpu_backends
    b = backend(NAME)
    return tuple(library_file(b, o) for o in ((p.os,) if p.os else OS_NAMES))


def hip_code(s: Subject, p: VerifyPolicy) -> Outcome:
    """One failure per problem of a ``ggml-hip`` library's code objects against ``p.gfx_targets``
    (module docstring), one when the bundle has no such library, one per promised target another
    file's offload bundles lack; the facts: every file's offload summary."""
    from ...checks.offload import check_targets

    want = tuple(p.gfx_targets)
    promised = ",".join(want)
    libs = {n.lower() for n in _libraries(p)}
    fails: list[Failure] = []
    found = [r for path, r in sorted(s.results.items()) if path.rsplit("/", 1)[-1].lower() in libs]
    if not found:
        names = " or ".join(_libraries(p))
        fails.append(
            Failure(names, "hip-code", f"the leg promises gfx targets {promised} but the bundle has no {names}")
        )
    for r in found:
        if r.offload is None:
            fails.append(
                Failure(r.path, "hip-code", f"no HIP offload bundle (.hip_fatbin/.hip_fat), promised {promised}")
            )
            continue
        fails += [
            Failure(r.path, "hip-code", f"{problem} (promised {promised}; found {r.offload.summary()})")
            for problem in check_targets(r.offload, want)
        ]
    for path, r in sorted(s.results.items()):
        if r.offload is None or r in found:
            continue
        have = r.offload.targets()
        if missing := [t for t in want if t not in have]:
            fails.append(
                Failure(
                    path,
                    "hip-code",
                    f"its offload bundles lack {','.join(missing)} (promised {promised}; found {r.offload.summary()}): "
                    f"the shipped runtime fails at its first kernel on that GPU",
                )
            )
    offload = {path: r.offload.summary() for path, r in sorted(s.results.items()) if r.offload is not None}
    return fails, {"offload": offload}


def policy_fields(spec: BundleSpec) -> tuple[BackendFields, list[tuple[str, object]]]:
    """What a ROCm leg promises its bundle: code objects for exactly its mapped targets, and its
    family in the info file."""
    hip = HIP.of(spec)
    return {"gfx_targets": tuple(hip.mapped_targets)}, [("gfx_target", hip.gfx_target)]


ROWS: tuple[Row, ...] = (
    Row("hip-code", hip_code, ("gfx_targets", "os", "gpu_backends"), "device-code", gate=lambda p: bool(p.gfx_targets)),
)
"""The HIP backend's rows, gated on the promised gfx targets (a policy without them skips them)."""
