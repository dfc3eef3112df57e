"""pydantic's validators of the record classes, one per class and process."""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import TypeAdapter

from ..core import memo

T = TypeVar("T")

_ADAPTERS: dict[type, Any] = memo.table("schemas.adapters")


def adapter(cls: type[T]) -> TypeAdapter[T]:
    """pydantic's validator of record class ``cls``, built once per process (a few ms each;
    memo table ``schemas.adapters``)."""
    if cls not in _ADAPTERS:
        _ADAPTERS[cls] = TypeAdapter(cls)
    made: TypeAdapter[T] = _ADAPTERS[cls]
    return made


__all__ = ["adapter"]
