"""@record (tui/core/record.py, issue 32) means what a frozen @dataclass means: each record below is declared twice,
once with @record and once as a plain frozen dataclass, and every pair of values gives the same construction,
equality, hash and repr; a record compiles its __init__ only when first built."""

from __future__ import annotations

import itertools
from dataclasses import FrozenInstanceError, dataclass, field, replace
from typing import Any

import pytest

from tui.core.events import LogActivity
from tui.core.record import Record, _first_init, record
from tui.core.state import Readiness


@record
class Shared(Record):
    name: str
    size: int = 0
    stamp: float = field(default=0.0, compare=False)  # as Readiness.updated_at
    note: str = field(default="", repr=False)
    seen: int = field(default=0, hash=False)


@dataclass(frozen=True)
class Generated:
    name: str
    size: int = 0
    stamp: float = field(default=0.0, compare=False)
    note: str = field(default="", repr=False)
    seen: int = field(default=0, hash=False)


@record
class OneShared(Record):
    only: tuple[int, ...]


@dataclass(frozen=True)
class OneGenerated:
    only: tuple[int, ...]


@record
class NoneShared(Record):
    pass


@dataclass(frozen=True)
class NoneGenerated:
    pass


@record
class Child(Shared):  # a record over a record: its own __init__, over every field
    extra: int = 0


@record
class Made(Record):
    name: str
    tags: list[str] = field(default_factory=list)
    late: int = field(default=0, kw_only=True)


@dataclass(frozen=True)
class MadeGenerated:
    name: str
    tags: list[str] = field(default_factory=list)
    late: int = field(default=0, kw_only=True)


VALUES = [
    ("a", 1, 0.0, "", 0), ("a", 1, 5.0, "x", 0), ("a", 1, 0.0, "", 7), ("b", 1, 0.0, "", 0), ("a", 2, 0.0, "", 0),
]  # fmt: skip


def test_equality_hash_and_repr_are_the_generated_ones() -> None:
    for left, right in itertools.product(VALUES, repeat=2):
        shared, generated = (Shared(*left), Shared(*right)), (Generated(*left), Generated(*right))
        assert (shared[0] == shared[1]) == (generated[0] == generated[1]), (left, right)
        assert (shared[0] != shared[1]) == (generated[0] != generated[1]), (left, right)
    for value in VALUES:
        assert hash(Shared(*value)) == hash(Generated(*value))
        assert repr(Shared(*value)) == repr(Generated(*value)).replace("Generated(", "Shared(")
    pairs: list[tuple[Record, object]] = [(OneShared((1, 2)), OneGenerated((1, 2))), (NoneShared(), NoneGenerated())]
    for one, twin in pairs:
        assert hash(one) == hash(twin) and one == replace(one)  # type: ignore[type-var]
        assert repr(one) == repr(twin).replace("Generated(", "Shared(")
    assert OneShared((1,)) != OneShared((2,)) and NoneShared() == NoneShared()


def test_another_class_is_never_equal_and_a_record_stays_frozen() -> None:
    assert Shared("a") != Generated("a") and Shared("a") != ("a", 0, 0.0, "", 0)
    assert Shared("a").__eq__(Generated("a")) is NotImplemented
    assert Child("a", extra=1) != Shared("a") and Child("a", extra=1) != Child("a", extra=2)
    assert Child("a", extra=1) == Child("a", extra=1) and repr(Child("a")).startswith("Child(name='a'")
    with pytest.raises(FrozenInstanceError):
        Shared("a").size = 3  # type: ignore[misc]
    with pytest.raises(FrozenInstanceError):
        del Shared("a").size
    with pytest.raises(TypeError):
        hash(OneShared([1]))  # type: ignore[arg-type]  # an unhashable field, as a generated __hash__ says


def test_the_folds_records_compare_as_before() -> None:
    first = Readiness()
    assert first == replace(first, updated_at=123.0)  # a stamp, not a fact (compare=False)
    assert hash(first) == hash(replace(first, updated_at=123.0))
    assert first != first.evolve(stall_after=5.0) and hash(first) != hash(first.evolve(stall_after=5.0))
    assert {LogActivity(3, b"x"), LogActivity(3, b"x")} == {LogActivity(3, b"x")}
    assert repr(LogActivity(3, b"x")).startswith("LogActivity(offset=3, data=b'x'")


def test_a_record_is_built_as_a_frozen_dataclass_is() -> None:
    right: list[tuple[tuple[Any, ...], dict[str, Any]]] = [
        (("a",), {}), (("a", ["x"]), {}), (("a",), {"late": 3}), ((), {"name": "b", "tags": []}),
    ]  # fmt: skip
    for args, kwargs in right:
        made, generated = Made(*args, **kwargs), MadeGenerated(*args, **kwargs)
        assert (made.name, made.tags, made.late) == (generated.name, generated.tags, generated.late)
    assert Made("a").tags is not Made("a").tags  # a fresh default from the factory, each time
    wrong: list[tuple[tuple[Any, ...], dict[str, Any]]] = [
        ((), {}), (("a", [], 3), {}), (("a",), {"nope": 1}), (("a",), {"name": "b"}),
    ]  # fmt: skip
    for args, kwargs in wrong:
        with pytest.raises(TypeError) as refused:
            Made(*args, **kwargs)
        with pytest.raises(TypeError) as as_generated:
            MadeGenerated(*args, **kwargs)
        assert str(refused.value).split("() ", 1)[1] == str(as_generated.value).split("() ", 1)[1]
    assert replace(Made("a", ["x"]), late=2) == Made("a", ["x"], late=2)


def test_an_init_is_compiled_when_its_class_is_first_built_and_a_child_keeps_its_own() -> None:
    @record
    class Late(Record):
        first: int

    @record
    class Later(Late):
        second: int = 2

    assert Late.__init__ is _first_init and Later.__init__ is _first_init  # declared: nothing compiled yet
    assert Late(1).first == 1 and Late.__init__ is not _first_init and Later.__init__ is _first_init
    assert (Later(1).first, Later(1).second, Later(1, 5).second) == (1, 2, 5)


def test_what_a_dataclass_init_refuses_is_refused_when_declared() -> None:
    with pytest.raises(TypeError, match="non-default argument 'b' follows default argument 'a'"):

        @record
        class Misordered(Record):
            a: int = 0
            b: int  # type: ignore[misc]

    with pytest.raises(TypeError, match="no init=False fields"):

        @record
        class Hidden(Record):
            a: int = field(default=0, init=False)
