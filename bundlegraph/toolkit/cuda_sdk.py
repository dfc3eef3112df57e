"""The CUDA backend's SDK (:attr:`bundlegraph.backends.cuda.SDK`): the toolkit of a CUDA leg as
the toolkit stage's :class:`~.sdk.SdkModule`. Its tasks keep their names
(``toolkit:cuda13.5-linux-x86_64+linux-sbsa-3f9a1c``, :mod:`.identity`) and their keys
(:func:`.key.key_inputs`), so no existing stamp changes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..core.errors import HostMismatch
from ..core.lightclass import frozen
from ..core.state import Present
from ..schemas.records import BundleSpec
from .identity import ComponentSet, component_set
from .ref import CudaToolkit, ref_for_set


@frozen
class ToolkitPlan:
    """What ``toolkit:<set name>`` does: install ``components`` (the resolved
    :class:`~bundlegraph.toolkit.identity.ComponentSet`) at ``ref`` (the
    :class:`CudaToolkit` later stages read); ``bundles`` resolves the spec's lock files;
    ``legs`` use it; ``host_problem``: set when none of them can compile on this host (and none
    imports its build output), so nothing is downloaded for them."""

    components: ComponentSet
    ref: CudaToolkit
    bundles: Path
    legs: tuple[str, ...]
    host_problem: str | None = None

    def key(self) -> dict[str, Any]:
        """The component set with every resolved name, version, platform and sha256
        (:func:`bundlegraph.toolkit.key.key_inputs`; a redist set reads its manifest)."""
        from .key import key_inputs

        return key_inputs(self.components, self.bundles)

    def describe(self) -> dict[str, Any]:
        """The legs using it, where it installs, its receipt, its target directory, its components."""
        return {
            "legs": list(self.legs),
            "prefix": str(self.ref.prefix),
            "receipt": str(self.ref.receipt),
            "target_dir": self.ref.target_dir,
            **self.components.identity(),
        }

    def doc(self) -> str:
        """The task's doc line."""
        cs = self.components
        return (
            f"install CUDA {cs.cuda_version} ({cs.source}) {cs.host_platform} host + "
            f"{cs.target_platform} target for {', '.join(self.legs)}"
        )


def group(spec: BundleSpec, bundles: Path, spec_file: str) -> tuple[str, ComponentSet]:
    """The leg's component set and its name (legs with equal sets share a task)."""
    cs = component_set(spec, bundles, spec_file)
    return cs.name, cs


def ref(spec: BundleSpec, bundles: Path, spec_file: str) -> CudaToolkit:
    """The leg's toolkit where ``toolkit:<name>`` installs it."""
    return ref_for_set(component_set(spec, bundles, spec_file))


def plan(ident: ComponentSet, legs: tuple[str, ...], bundles: Path, host_problem: str | None) -> ToolkitPlan:
    """The plan of the toolkit task of ``ident``."""
    return ToolkitPlan(components=ident, ref=ref_for_set(ident), bundles=bundles, legs=legs, host_problem=host_problem)


def run(plan: ToolkitPlan) -> list[Path | Present]:
    """Install (or verify the installed) toolkit from ``plan`` alone; returns its receipt.
    Refuses (:class:`HostMismatch`) before any download when no leg of it can use it here."""
    from .install import install

    if plan.host_problem:
        raise HostMismatch(f"toolkit:{plan.components.name}: {plan.host_problem}")
    receipt = install(plan.components, plan.ref, plan.bundles)
    if plan.components.source == "host":
        return [receipt]
    from .validate import required_paths

    # every required file by presence (not hashed: the receipt holds the archives' sha256), so a
    # toolkit whose files were deleted after install is not up to date
    return [receipt, *(Present(p) for p in required_paths(plan.ref.prefix, plan.components))]


__all__ = ["ToolkitPlan", "group", "plan", "ref", "run"]
