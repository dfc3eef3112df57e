"""The base of every spec record (:class:`Record`, made by :func:`record`), their JSON form
(:func:`json_form`) and field docs (:func:`field_docs`): what :mod:`.records` builds the spec
formats from, and what a backend's own spec table (``bundlegraph/backends/<name>/spec.py``,
``TABLE``) is made of. Apart from :mod:`.records` so that such a table imports no record of the
house (no import circle: :mod:`.records` adds the backends' tables to
:class:`~.records.BundleSpec` as it loads)."""

from __future__ import annotations

import dataclasses
import datetime as _dt
import json
from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, Self, TypeVar, cast, dataclass_transform

from .archs import Arch, CudaVersion

_PYDANTIC_CONFIG = {
    "extra": "forbid",
    "alias_generator": lambda name: name.rstrip("_"),
}
"""How pydantic reads every record (a plain dict: pydantic's ``ConfigDict`` is a TypedDict):
unknown keys are errors, and a field named after a Python keyword (``from_``) is the TOML key
without the underscore."""


class Record:
    """Base of the records: the JSON form (:meth:`dump`), a checked :meth:`replace`, and a
    hash of the JSON form (records hold lists, which a field-wise hash cannot take)."""

    __pydantic_config__: ClassVar[Any] = _PYDANTIC_CONFIG
    FIELDS: ClassVar[tuple[str, ...]] = ()
    """The field names, in order (Python names: ``from_``)."""
    OMIT_NONE: ClassVar[tuple[str, ...]] = ()
    """Fields the JSON form leaves out while None (so release keys keep their form)."""
    NOT_DUMPED: ClassVar[tuple[str, ...]] = ()
    """Fields the JSON form never holds (what changes no output byte)."""

    def dump(self) -> dict[str, Any]:
        """The JSON form (a fresh dict each call): plain JSON values, TOML keys, archs in CMake
        spelling."""
        return cast("dict[str, Any]", json_form(self))

    def replace(self, **changes: Any) -> Self:
        """A copy with ``changes`` applied; the table's own rules (``__post_init__``) run
        again, the field types are not checked (build a spec by hand only in tests). Raises
        ``TypeError`` naming an unknown field."""
        unknown = set(changes) - set(self.FIELDS)
        if unknown:
            raise TypeError(f"{type(self).__name__}: unknown fields {sorted(unknown)}")
        return dataclasses.replace(self, **changes)  # type: ignore[type-var]

    def __hash__(self) -> int:
        return hash((type(self).__name__, json.dumps(json_form(self), sort_keys=True)))

    def __init__(self, **values: Any) -> None:
        """A record of ``values`` by field name; a field left out takes its default. Raises
        ``TypeError`` naming a missing or unknown field; the table's own rules
        (``__post_init__``) run. (pydantic builds validated records without it.)"""
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            if f.name in values:
                v = values.pop(f.name)
            elif f.default is not dataclasses.MISSING:
                v = f.default
            elif f.default_factory is not dataclasses.MISSING:
                v = f.default_factory()
            else:
                raise TypeError(f"{type(self).__name__}: missing field {f.name!r}")
            object.__setattr__(self, f.name, v)
        if values:
            raise TypeError(f"{type(self).__name__}: unknown fields {sorted(values)}")
        post = getattr(self, "__post_init__", None)
        if post is not None:
            post()

    def __setattr__(self, name: str, value: object) -> None:
        raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}: a record is read-only")

    def __delattr__(self, name: str) -> None:
        raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}: a record is read-only")

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and all(getattr(self, f) == getattr(other, f) for f in self.FIELDS)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{f}={getattr(self, f)!r}' for f in self.FIELDS)})"


R = TypeVar("R", bound=type)


@dataclass_transform(frozen_default=True, kw_only_default=True, field_specifiers=(field,))
def record(cls: R) -> R:
    """Make ``cls`` (a :class:`Record` subclass) a frozen, keyword-only dataclass, hashed by
    its JSON form, with :attr:`Record.FIELDS` filled in. ``__init__``, read-only attributes,
    equality and repr are the base's (one function for every record: a generated method costs an
    ``exec`` on every start, and the graph's load path imports every record)."""
    made: Any = dataclass(kw_only=True, init=False, eq=False, repr=False)(cls)  # the same class object
    made.FIELDS = tuple(f.name for f in dataclasses.fields(made))
    return cls


def json_form(v: Any) -> Any:
    """``v`` in its JSON form (:meth:`Record.dump`): records field by field, archs in CMake
    spelling, datetimes in ISO 8601 with UTC as ``Z`` (as the spec models wrote them)."""
    if isinstance(v, Record):
        out = {}
        for n in v.FIELDS:
            x = getattr(v, n)
            if (x is None and n in v.OMIT_NONE) or n in v.NOT_DUMPED:
                continue
            out[n.rstrip("_")] = json_form(x)
        return out
    if isinstance(v, Arch):
        return v.cmake
    if isinstance(v, CudaVersion):
        return str(v)
    if isinstance(v, _dt.datetime):
        text = v.isoformat()
        return text[:-6] + "Z" if text.endswith("+00:00") else text
    if isinstance(v, list):
        return [json_form(x) for x in v]
    if isinstance(v, dict):
        return {k: json_form(x) for k, x in v.items()}
    return v


def field_docs(cls: type[Record]) -> dict[str, str]:
    """Each field's attribute docstring (the string right below it), by field name, inherited
    ones included, on one line: the descriptions of the JSON Schema. Read from the source."""
    import ast
    import inspect
    import textwrap

    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if not (isinstance(klass, type) and issubclass(klass, Record)) or klass is Record:
            continue
        body = ast.parse(textwrap.dedent(inspect.getsource(klass))).body[0]
        assert isinstance(body, ast.ClassDef)
        for stmt, nxt in zip(body.body, body.body[1:], strict=False):
            if (
                isinstance(stmt, ast.AnnAssign)
                and isinstance(stmt.target, ast.Name)
                and isinstance(nxt, ast.Expr)
                and isinstance(nxt.value, ast.Constant)
                and isinstance(nxt.value.value, str)
            ):
                docs[stmt.target.id] = " ".join(nxt.value.value.split())
    return docs


T = TypeVar("T", bound=Record)


class TableReader(Generic[T]):
    """A backend's typed read of its spec table: :class:`~bundlegraph.schemas.records.BundleSpec`
    takes every backend's table by name as it loads (its ``spec`` module's ``TABLE``), so it
    declares none of them for mypy; the backend's own modules read theirs through one of these
    (``CUDA = TableReader("cuda", CudaSpec)``, then ``CUDA.of(spec).archs``)."""

    def __init__(self, name: str | None, rec: type[T]) -> None:
        """``name``: the backend's :attr:`~bundlegraph.schemas.backend.Backend.SPEC_TABLE` (None, a
        backend without a table, is a bug: ValueError); ``rec``: its record (``TABLE``)."""
        if name is None:
            raise ValueError(f"{rec.__name__}: a backend without a spec table (SPEC_TABLE None) has no table to read")
        self.name = name
        self.rec = rec

    def get(self, spec: object) -> T | None:
        """``spec``'s table (None: a leg without it, another backend's)."""
        t = getattr(spec, self.name, None)
        if t is not None and not isinstance(t, self.rec):  # a bug: the records hold the table they took
            raise TypeError(
                f"{getattr(spec, 'id', spec)}: [{self.name}] is a {type(t).__name__}, not {self.rec.__name__}"
            )
        return t

    def of(self, spec: object) -> T:
        """``spec``'s table, which its leg has (a leg of the backend: the records' rule). Raises
        TypeError naming the leg for one without it (a bug: callers ask only their own legs)."""
        t = self.get(spec)
        if t is None:
            raise TypeError(f"{getattr(spec, 'id', spec)}: the leg has no [{self.name}] table")
        return t
