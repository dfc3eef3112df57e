"""Verbs a backend module may take as they are (:class:`bundlegraph.schemas.backend.Backend`), for a
backend whose spec table implies no GPU targets and that ships nothing beside its library but
its ``RUNTIME_GLOBS``: ``from .verbs import no_table_targets as table_targets``."""

from __future__ import annotations


def no_table_targets(table: object) -> tuple[object, tuple[str, ...]]:
    """The spec table as the file wrote it, and no GPU targets a bundle must hold files for: the
    backend's targets are listed where they are used (CUDA's archs) or there are none (CPU,
    Vulkan, Metal)."""
    return table, ()


def no_required_files(os_name: str, targets: tuple[str, ...]) -> tuple[str, ...]:
    """Nothing beside the backend's library and its ``RUNTIME_GLOBS``."""
    return ()


__all__ = ["no_required_files", "no_table_targets"]
