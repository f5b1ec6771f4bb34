"""Record's shared __eq__, __hash__ and __repr__ (tui/core/record.py, issue 32) mean what @dataclass's generated
ones mean: each record below is declared twice, once over Record and once as a plain frozen dataclass, and every
pair of values gives the same equality, hash and repr."""

from __future__ import annotations

import itertools
from dataclasses import FrozenInstanceError, dataclass, field, replace

import pytest

from tui.core.events import LogActivity
from tui.core.record import Record
from tui.core.state import Readiness


@dataclass(frozen=True, eq=False, repr=False)
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


@dataclass(frozen=True, eq=False, repr=False)
class OneShared(Record):
    only: tuple[int, ...]


@dataclass(frozen=True)
class OneGenerated:
    only: tuple[int, ...]


@dataclass(frozen=True, eq=False, repr=False)
class NoneShared(Record):
    pass


@dataclass(frozen=True)
class NoneGenerated:
    pass


@dataclass(frozen=True)
class Child(Shared):  # a plain dataclass over a Record: its own generated methods, over every field
    extra: int = 0


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
    with pytest.raises(TypeError):
        hash(OneShared([1]))  # type: ignore[arg-type]  # an unhashable field, as a generated __hash__ says


def test_the_folds_records_compare_as_before() -> None:
    first = Readiness()
    assert first == replace(first, updated_at=123.0)  # a stamp, not a fact (compare=False)
    assert hash(first) == hash(replace(first, updated_at=123.0))
    assert first != first.evolve(stall_after=5.0) and hash(first) != hash(first.evolve(stall_after=5.0))
    assert {LogActivity(3, b"x"), LogActivity(3, b"x")} == {LogActivity(3, b"x")}
    assert repr(LogActivity(3, b"x")).startswith("LogActivity(offset=3, data=b'x'")
