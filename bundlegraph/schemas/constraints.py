"""Markers that put a rule on a record's field, read by pydantic when a spec is validated.

The records (:mod:`.records`) are standard-library dataclasses: they import no pydantic, so
the graph's load path never pays for it. A field's rule is written once, as ``Annotated``
metadata that pydantic understands through its ``__get_pydantic_core_schema__`` protocol
(pydantic's documentation, "Custom Types": "Using ``__get_pydantic_core_schema__``"):

- :class:`Check`: keys added to the field's core schema (``pattern`` of a ``str``, ``ge`` /
  ``le`` / ``strict`` of an ``int``, ``min_length`` of a ``list``); pydantic turns them into
  both the check and the JSON Schema keywords (``pattern``, ``minimum``, ``minItems``);
- :class:`Tagged`: a union told apart by one field (pydantic's ``Discriminator``), so an
  error names the one record the tag chose.

Nothing here imports pydantic until validation asks for a schema.
"""

from __future__ import annotations

from typing import Any


class Check:
    """Core-schema keys for one field: ``Check(pattern=r"^b\\d+$")``, ``Check(ge=0, le=1000,
    strict=True)``, ``Check(min_length=1)``. The keys are pydantic-core's names for that
    schema type (``str_schema``, ``int_schema``, ``list_schema``)."""

    def __init__(self, **keys: Any) -> None:
        self.keys = keys

    def __get_pydantic_core_schema__(self, source: Any, handler: Any) -> Any:
        schema = handler(source)
        schema.update(self.keys)
        return schema

    def __repr__(self) -> str:
        return f"Check({', '.join(f'{k}={v!r}' for k, v in self.keys.items())})"


class Tagged:
    """A union of records told apart by the value of field ``tag`` (``kind`` of a source pin)."""

    def __init__(self, tag: str) -> None:
        self.tag = tag

    def __get_pydantic_core_schema__(self, source: Any, handler: Any) -> Any:
        from pydantic import Discriminator

        return Discriminator(self.tag).__get_pydantic_core_schema__(source, handler)

    def __repr__(self) -> str:
        return f"Tagged({self.tag!r})"


SHA256 = Check(pattern=r"^[0-9a-f]{64}$")
"""A sha256 in lower-case hex (64 characters)."""

ID = Check(pattern=r"^[a-z0-9][a-z0-9._-]*$")
"""An id: lower-case letters, digits, ``.``, ``_`` and ``-``, starting with a letter or digit."""


def unique(what: str, values: list[Any]) -> None:
    """A list field's rule: no value twice. Raises ``ValueError`` starting with the key ``what``."""
    if len(set(values)) != len(values):
        raise ValueError(f"{what}: holds duplicates")
