"""Verbs a backend module may take as they are (:class:`bundlegraph.backends.Backend`), for a
backend whose GPU targets are not named by family and that ships nothing beside its library but
its ``RUNTIME_GLOBS``: ``from .verbs import no_gpu_targets as gpu_targets``."""

from __future__ import annotations


def no_gpu_targets(family: object) -> tuple[str, ...]:
    """No family names: the backend's targets are listed (CUDA's archs) or there are none (CPU,
    Vulkan, Metal)."""
    return ()


def no_required_files(os_name: str, targets: tuple[str, ...]) -> tuple[str, ...]:
    """Nothing beside the backend's library and its ``RUNTIME_GLOBS``."""
    return ()


__all__ = ["no_gpu_targets", "no_required_files"]
