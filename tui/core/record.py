"""Record and @record: the frozen records, with nothing compiled for a class until it is first built.

CPython before 3.13 compiles every method @dataclass adds from source text of its own (one exec each): a frozen
record's six took about half a millisecond a class, and a `probe`, a fresh process per call, imports about ninety
records: ~30 ms of its CPU, a third of it (issue 32). A record is declared `@record` over Record:

- its fields are dataclass fields (`dataclasses.fields`, `replace`, `asdict` work), read by @dataclass with
  nothing generated (init, eq, repr off);
- its __init__ is the one @dataclass would write (positional or keyword, defaults, default factories), compiled
  when the class is first built and kept on the class: a process compiles only the records it makes;
- it is frozen: assigning or deleting an attribute raises dataclasses.FrozenInstanceError, as a frozen
  dataclass's does;
- __eq__, __hash__ and __repr__ are written once here and mean what the generated ones mean: equal when of the
  same class with equal compared fields (NotImplemented for another class), the hash of the fields that take part
  in it, `Name(field=value, …)` over the fields shown. Which fields take part is read at the class's first use.

Type checkers see @record as a frozen dataclass (PEP 681's dataclass_transform), so a record's constructor is
checked as @dataclass's would be.
"""

from __future__ import annotations

import operator
import reprlib
from collections.abc import Callable
from dataclasses import MISSING, Field, FrozenInstanceError, dataclass, field, fields
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from typing_extensions import dataclass_transform
else:  # typing_extensions is not imported at run time: a probe loads nothing it does not use

    def dataclass_transform(**_: object) -> Callable[[Any], Any]:
        return lambda decorated: decorated


_T = TypeVar("_T")

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


@dataclass_transform(frozen_default=True, eq_default=True, field_specifiers=(field, Field))
def record(cls: type[_T]) -> type[_T]:
    """A frozen record over Record (the module's docstring): its fields read, its __init__ compiled at first use."""
    dataclass(cls, init=False, eq=False, repr=False)  # fields only: no method is compiled
    defaulted = ""
    # what @dataclass's __init__ would refuse, refused here, when the class is declared
    for f in fields(cls):  # type: ignore[arg-type]  # a dataclass from the line above
        if not f.init:
            raise TypeError(f"{cls.__name__}.{f.name}: a record has no init=False fields")
        if f.default is not MISSING or f.default_factory is not MISSING:
            defaulted = f.name
        elif defaulted and not f.kw_only:
            raise TypeError(f"{cls.__name__}: non-default argument {f.name!r} follows default argument {defaulted!r}")
    declared: Any = cls
    declared.__init__ = _first_init  # its own, so that a record never runs its base's compiled one
    return cls


def _first_init(self: Record, *args: Any, **kwargs: Any) -> None:
    """A record's first construction: compile its class's __init__, keep it on the class, run it."""
    init = _compile_init(type(self))
    built: Any = type(self)
    built.__init__ = init
    init(self, *args, **kwargs)


def _compile_init(cls: type) -> Callable[..., None]:
    """The __init__ @dataclass writes for a frozen class: each field set through object.__setattr__, a default
    factory called when its argument is left out, keyword-only fields after `*`."""
    scope: dict[str, Any] = {"_set": object.__setattr__, "_MISSING": MISSING}
    positional: list[str] = []
    keyword: list[str] = []
    body: list[str] = []
    for i, f in enumerate(fields(cls)):
        name = f.name
        if f.default is not MISSING:
            scope[f"_d{i}"] = f.default
            param, value = f"{name}=_d{i}", name
        elif f.default_factory is not MISSING:
            scope[f"_f{i}"] = f.default_factory
            param, value = f"{name}=_MISSING", f"_f{i}() if {name} is _MISSING else {name}"
        else:
            param, value = name, name
        (keyword if f.kw_only else positional).append(param)
        body.append(f"  _set(self, {name!r}, {value})")
    params = ", ".join(["self", *positional, *(["*", *keyword] if keyword else [])])
    if hasattr(cls, "__post_init__"):
        body.append("  self.__post_init__()")
    source = f"def __init__({params}):\n" + ("\n".join(body) or "  pass") + "\n"
    exec(source, scope)  # noqa: S102  # @dataclass's own way: the fields' names, never outside text
    init: Callable[..., None] = scope["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    return init


class Record:
    """Base of a `@record` (see the module's docstring)."""

    __slots__ = ()

    def __setattr__(self, name: str, value: object) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")

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
