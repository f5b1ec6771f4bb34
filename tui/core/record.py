"""Record: the equality, hash and repr of the frozen records, written once instead of compiled for each class.

CPython before 3.13 compiles every method @dataclass adds from source text of its own (one exec each); a frozen
record's six took about half a millisecond a class, and a `probe`, a fresh process per call, imports about ninety
records: ~45 ms of its CPU (issue 32). A record declared `@dataclass(frozen=True, eq=False, repr=False)` over
Record gets its __eq__, __hash__ and __repr__ from here, meaning what the generated ones mean: equal when of the
same class with equal compared fields (NotImplemented for another class), the hash of the fields that take part in
it, `Name(field=value, …)` over the fields shown. Only its __init__ and the frozen __setattr__/__delattr__ are still
compiled per class. Which fields take part is read from the class's dataclass fields at its first use.
"""

from __future__ import annotations

import operator
import reprlib
from collections.abc import Callable
from dataclasses import fields
from typing import Any

_Values = Callable[[Any], tuple[Any, ...]]
_PLANS: dict[type, tuple[_Values, _Values, tuple[str, ...]]] = {}


def _values(names: tuple[str, ...]) -> _Values:
    """A function giving the tuple of those attributes (attrgetter gives a bare value for one name)."""
    if not names:
        return lambda _: ()
    if len(names) == 1:
        one = operator.attrgetter(names[0])
        return lambda obj: (one(obj),)
    return operator.attrgetter(*names)


def _plan(cls: type) -> tuple[_Values, _Values, tuple[str, ...]]:
    """(the compared fields' values, the hashed fields' values, the shown fields' names), as @dataclass picks them."""
    plan = _PLANS.get(cls)
    if plan is None:
        found = fields(cls)
        compared = tuple(f.name for f in found if f.compare)
        hashed = tuple(f.name for f in found if (f.compare if f.hash is None else f.hash))
        plan = _PLANS[cls] = (_values(compared), _values(hashed), tuple(f.name for f in found if f.repr))
    return plan


class Record:
    """Base of a `@dataclass(frozen=True, eq=False, repr=False)` record (see the module's docstring)."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        if other.__class__ is self.__class__:
            compared = _plan(self.__class__)[0]
            return compared(self) == compared(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(_plan(self.__class__)[1](self))

    @reprlib.recursive_repr()
    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in _plan(self.__class__)[2])
        return f"{self.__class__.__qualname__}({shown})"
