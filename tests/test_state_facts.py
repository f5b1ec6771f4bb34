"""`Readiness.evolve`'s keywords (the `Facts` TypedDict that mypy checks every write against) are exactly the
state's records and its flat facts, each with the type its Fact reads: the two declarations cannot drift apart."""

from __future__ import annotations

import typing
from dataclasses import fields

import pytest

import tui.core.state as state_module
from tui.core.state import Fact, Facts, Phase, Readiness


def fact_types() -> dict[str, object]:
    """Each flat fact's type, as its `Fact[T]` declaration reads it."""
    found: dict[str, object] = {}
    for name, value in vars(Readiness).items():
        if isinstance(value, Fact):
            (found[name],) = typing.get_args(value.__orig_class__)  # type: ignore[attr-defined]
    return found


def test_the_keywords_are_the_records_and_the_facts_each_with_its_type() -> None:
    hints = typing.get_type_hints(Facts, vars(state_module))
    records = {f.name: hints.get(f.name) for f in fields(Readiness)}
    assert all(records.values()), records  # every record can be given whole (`evolve(server=replace(…))`)
    facts = fact_types()
    assert len(facts) > 80  # the descriptors were read
    assert set(hints) == set(records) | set(facts)
    wrong = {name: (hints[name], kind) for name, kind in facts.items() if hints[name] != kind}
    assert not wrong, wrong


def test_evolve_still_refuses_a_name_the_state_does_not_have() -> None:
    with pytest.raises(TypeError, match="no fact 'phaze'"):
        Readiness().evolve(phaze=Phase.READY)  # type: ignore[call-arg]
