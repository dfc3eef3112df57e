"""bundlegraph.core.lightclass makes the same classes ``dataclasses.dataclass`` makes (read-only
or not, equality, hash, repr, defaults, keyword-only fields, ``__post_init__``, ``replace``),
checked here side by side with a real dataclass of the same fields."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import pytest

from bundlegraph.core.lightclass import frozen, frozen_ordered, mutable


@frozen
class Light:
    name: str
    archs: tuple[int, ...] = ()
    notes: list[str] = field(default_factory=list, compare=False, repr=False)
    spec_file: str = field(default="", hash=False)
    flag: bool = field(default=False, kw_only=True)


@dataclass(frozen=True)
class Heavy:
    name: str
    archs: tuple[int, ...] = ()
    notes: list[str] = field(default_factory=list, compare=False, repr=False)
    spec_file: str = field(default="", hash=False)
    flag: bool = field(default=False, kw_only=True)


def _both(*args, **kwargs):
    return Light(*args, **kwargs), Heavy(*args, **kwargs)


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [
        (("a",), {}),
        (("a", (120, 121)), {}),
        ((), {"name": "a", "archs": (120,), "flag": True}),
        (("a", (), ["n"], "f.toml"), {"flag": False}),
    ],
)
def test_fields_repr_eq_and_hash_are_a_dataclass_s(args, kwargs):
    light, heavy = _both(*args, **kwargs)
    assert dataclasses.asdict(light) == dataclasses.asdict(heavy)
    assert repr(light) == repr(heavy).replace("Heavy(", "Light(")
    again = Light(*args, **kwargs)
    assert light == again and hash(light) == hash(again)
    assert light == dataclasses.replace(light, notes=["other"])  # compare=False
    assert hash(light) == hash(dataclasses.replace(light, spec_file="x.toml"))  # hash=False
    assert light != dataclasses.replace(light, spec_file="x.toml")  # still compared
    assert light != dataclasses.replace(light, name="b")
    assert light != heavy  # another class is never equal, as with dataclasses


def test_defaults_factories_and_post_init():
    a, b = Light("a"), Light("b")
    assert a.notes == [] and a.notes is not b.notes  # a fresh list each time

    @frozen
    class Checked:
        n: int

        def __post_init__(self) -> None:
            if self.n < 0:
                raise ValueError(f"n must be >= 0, not {self.n}")

    assert Checked(1).n == 1
    with pytest.raises(ValueError, match="n must be >= 0, not -1"):
        Checked(-1)
    with pytest.raises(ValueError, match="not -2"):
        dataclasses.replace(Checked(1), n=-2)


def test_read_only_and_mutable():
    light = Light("a")
    with pytest.raises(dataclasses.FrozenInstanceError, match="'name'"):
        light.name = "b"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        del light.name  # type: ignore[misc]

    @mutable
    class Counter:
        n: int = 0
        seen: list[str] = field(default_factory=list)

    c = Counter()
    c.n += 1
    assert c == Counter(1) and c != Counter(2)
    assert repr(c) == "test_read_only_and_mutable.<locals>.Counter(n=1, seen=[])"
    with pytest.raises(TypeError, match="unhashable"):
        hash(c)


def test_constructor_errors_name_the_argument():
    with pytest.raises(TypeError, match="missing 1 required argument: 'name'"):
        Light()  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="unexpected keyword argument 'nmae'"):
        Light("a", nmae="b")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="multiple values for argument 'name'"):
        Light("a", name="b")  # type: ignore[misc]
    with pytest.raises(TypeError, match="takes 5 positional arguments but 6 were given"):
        Light("a", (), [], "", True)  # type: ignore[misc]


def test_own_methods_are_kept_and_subclasses_add_fields():
    @frozen
    class Base:
        a: int

        def __repr__(self) -> str:
            return f"<Base {self.a}>"

    @frozen
    class Child(Base):
        b: int = 2

    assert Child(1) == Child(1, 2) and Child(1) != Child(1, 3)
    assert repr(Base(1)) == "<Base 1>"  # a class's own method is kept
    assert repr(Child(1)).endswith("Child(a=1, b=2)")  # and a subclass gets its own, as with dataclasses
    assert [f.name for f in dataclasses.fields(Child)] == ["a", "b"]
    assert Base(1) != Child(1)


def test_ordered_classes_sort_as_dataclasses_do():
    @frozen_ordered
    class LightArch:
        number: int
        suffix: str = ""

    @dataclass(frozen=True, order=True)
    class HeavyArch:
        number: int
        suffix: str = ""

    values = [(121, ""), (120, "a"), (120, ""), (89, "")]
    assert [(a.number, a.suffix) for a in sorted(LightArch(*v) for v in values)] == [
        (a.number, a.suffix) for a in sorted(HeavyArch(*v) for v in values)
    ]
    assert LightArch(120) <= LightArch(120) < LightArch(120, "a") and LightArch(121) >= LightArch(120, "a")
    with pytest.raises(TypeError):
        _ = LightArch(120) < HeavyArch(120)  # another class is not ordered against it


def test_an_undocumented_class_gets_a_docstring_of_its_fields():
    @frozen
    class Bare:
        a: int
        b: str = ""

    @frozen
    class Documented:
        """Written by hand."""

        a: int

    assert Bare.__doc__ == "Bare(a, b)"
    assert Documented.__doc__ == "Written by hand."
