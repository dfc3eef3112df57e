"""Dataclasses whose methods are shared functions: :func:`frozen` and :func:`mutable`.

``@dataclasses.dataclass(frozen=True)`` writes each class's ``__init__``, ``__repr__``,
``__eq__``, ``__hash__``, ``__setattr__`` and ``__delattr__`` as source text and ``exec``-s it
when the module is imported: about 0.7 ms a class on CPython 3.11, and the graph's load path
imports some 60 of them, so a no-op ``doit`` spent 60 of its 250 ms making methods (measured in
issue 30). These decorators make the same classes (``dataclasses.fields``, ``replace`` and
``asdict`` work; field options ``default``, ``default_factory``, ``init``, ``repr``,
``compare``, ``hash`` and ``kw_only`` are honoured; ``__post_init__`` runs) with one function
per method for every class, in the manner of :class:`bundlegraph.schemas.records.Record`.

What differs from a dataclass: a frozen instance's ``__dataclass_params__`` says
``frozen=False`` (the class is still read-only: assignment raises
``dataclasses.FrozenInstanceError``); a constructor's error messages are worded like a
dataclass's but not identical; ``InitVar`` is not supported. :func:`frozen_ordered` adds
``order=True``'s comparisons.
"""

from __future__ import annotations

import dataclasses
from dataclasses import MISSING, FrozenInstanceError, field
from typing import Any, TypeVar, dataclass_transform

T = TypeVar("T", bound=type)

_INIT = "__lightclass_init__"
"""Per class: ``(positional, keyword)``, each a tuple of ``(name, default, factory)``."""
_CMP = "__lightclass_compare__"
"""Per class: the names ``__eq__`` compares, in field order."""
_HASH = "__lightclass_hash__"
"""Per class: the names ``__hash__`` hashes, in field order."""
_REPR = "__lightclass_repr__"
"""Per class: the names ``__repr__`` shows, in field order."""


def _init(self: Any, *args: Any, **kwargs: Any) -> None:
    positional, keyword = getattr(type(self), _INIT)
    setter = object.__setattr__
    if not kwargs and not keyword and len(args) == len(positional):  # the common call: every field, in order
        for (f, _, _), v in zip(positional, args, strict=True):
            setter(self, f, v)
    else:
        name = type(self).__qualname__
        if len(args) > len(positional):
            raise TypeError(
                f"{name}.__init__() takes {len(positional) + 1} positional arguments but {len(args) + 1} were given"
            )
        for i, (f, default, factory) in enumerate(positional):
            if i < len(args):
                if f in kwargs:
                    raise TypeError(f"{name}.__init__() got multiple values for argument '{f}'")
                setter(self, f, args[i])
            else:
                setter(self, f, _given(name, f, default, factory, kwargs, "argument"))
        for f, default, factory in keyword:
            setter(self, f, _given(name, f, default, factory, kwargs, "keyword-only argument"))
        if kwargs:
            raise TypeError(f"{name}.__init__() got an unexpected keyword argument '{next(iter(kwargs))}'")
    post = getattr(self, "__post_init__", None)
    if post is not None:
        post()


def _given(name: str, f: str, default: Any, factory: Any, kwargs: dict[str, Any], what: str) -> Any:
    """Field ``f``'s value: passed by keyword (taken out of ``kwargs``), else its default, else
    its factory's; raises TypeError naming a required ``what`` that is missing."""
    if f in kwargs:
        return kwargs.pop(f)
    if default is not MISSING:
        return default
    if factory is not MISSING:
        return factory()
    raise TypeError(f"{name}.__init__() missing 1 required {what}: '{f}'")


def _init_spec(cls: type) -> tuple[tuple[tuple[str, Any, Any], ...], tuple[tuple[str, Any, Any], ...]]:
    fs = [f for f in dataclasses.fields(cls) if f.init]
    positional = tuple((f.name, f.default, f.default_factory) for f in fs if not f.kw_only)
    keyword = tuple((f.name, f.default, f.default_factory) for f in fs if f.kw_only)
    return positional, keyword


def _values(obj: object, names: tuple[str, ...]) -> tuple[Any, ...]:
    return tuple(getattr(obj, f) for f in names)


def _eq(self: Any, other: object) -> object:  # a bool, or NotImplemented
    if other.__class__ is not self.__class__:
        return NotImplemented
    names = getattr(self.__class__, _CMP)
    return _values(self, names) == _values(other, names)  # a tuple's ==, as a dataclass compares


def _hash(self: Any) -> int:
    return hash(_values(self, getattr(self.__class__, _HASH)))


def _repr(self: Any) -> str:
    shown = ", ".join(f"{f}={getattr(self, f)!r}" for f in getattr(self.__class__, _REPR))
    return f"{self.__class__.__qualname__}({shown})"


def _ordering(op: str) -> Any:
    def compare(self: Any, other: object) -> object:  # a bool, or NotImplemented
        if other.__class__ is not self.__class__:
            return NotImplemented
        names = getattr(self.__class__, _CMP)
        return getattr(_values(self, names), op)(_values(other, names))  # a tuple's order, as a dataclass's

    compare.__name__ = op
    return compare


_ORDER = {op: _ordering(op) for op in ("__lt__", "__le__", "__gt__", "__ge__")}
"""``order=True``'s four methods: the compared fields as a tuple, ordered as tuples are."""


def _setattr(self: Any, name: str, value: object) -> None:
    raise FrozenInstanceError(f"cannot assign to field {name!r}")


def _delattr(self: Any, name: str) -> None:
    raise FrozenInstanceError(f"cannot delete field {name!r}")


def _make(cls: T, *, is_frozen: bool, order: bool = False) -> T:
    own = cls.__dict__
    explicit_hash = "__hash__" in own and not (own["__hash__"] is None and "__eq__" in own)
    undocumented = not own.get("__doc__")
    if undocumented:  # else dataclass writes one from inspect.signature: 3 ms (tokenize compiles its regexes)
        cls.__doc__ = "-"
    made: Any = dataclasses.dataclass(init=False, repr=False, eq=False)(cls)  # the same class object
    fs = dataclasses.fields(made)
    if undocumented:
        made.__doc__ = f"{made.__name__}({', '.join(f.name for f in fs if f.init)})"
    setattr(made, _INIT, _init_spec(made))
    setattr(made, _CMP, tuple(f.name for f in fs if f.compare))
    setattr(made, _HASH, tuple(f.name for f in fs if (f.compare if f.hash is None else f.hash)))
    setattr(made, _REPR, tuple(f.name for f in fs if f.repr))
    for method, fn in (("__init__", _init), ("__repr__", _repr), ("__eq__", _eq)):
        if method not in own:
            setattr(made, method, fn)
    if not explicit_hash:
        made.__hash__ = _hash if is_frozen else None
    if order:
        for op, fn in _ORDER.items():
            if op in own:
                raise TypeError(f"{made.__qualname__}: an ordered class cannot define {op}")
            setattr(made, op, fn)
    if is_frozen:
        if "__setattr__" in own or "__delattr__" in own:
            raise TypeError(f"{made.__qualname__}: a frozen class cannot define __setattr__ or __delattr__")
        made.__setattr__ = _setattr
        made.__delattr__ = _delattr
    return cls


@dataclass_transform(frozen_default=True, field_specifiers=(field,))
def frozen(cls: T) -> T:
    """Make ``cls`` a read-only dataclass, as ``@dataclass(frozen=True)`` does (equality and
    hash by the fields' values, a ``Name(field=value, ...)`` repr), without ``exec``-ing a
    method per class. Returns the same class object."""
    return _make(cls, is_frozen=True)


@dataclass_transform(frozen_default=True, order_default=True, field_specifiers=(field,))
def frozen_ordered(cls: T) -> T:
    """:func:`frozen`, and ordered as ``@dataclass(frozen=True, order=True)`` orders: by the
    compared fields as a tuple (``<``, ``<=``, ``>``, ``>=``; another class is not ordered
    against it). Returns the same class object."""
    return _make(cls, is_frozen=True, order=True)


@dataclass_transform(field_specifiers=(field,))
def mutable(cls: T) -> T:
    """Make ``cls`` a dataclass whose fields may be assigned, as ``@dataclass`` does (equality
    by the fields' values, unhashable, a ``Name(field=value, ...)`` repr), without ``exec``-ing
    a method per class. Returns the same class object."""
    return _make(cls, is_frozen=False)
