"""The state is small records, one per fact (issue 10): equal facts give equal states, a Tick with nothing new
gives an equal state, an event rebuilds only the record it touches, and the words are the views' (wording, explain)."""

from __future__ import annotations

from dataclasses import fields

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.test_readiness_property import events
from tui.core.events import BarProgress, Event, HealthResult, Milestone, ServerArgs, Tick
from tui.core.explain import evidence
from tui.core.readiness import reduce
from tui.core.state import Readiness
from tui.core.wording import verdict_line


def _loading() -> Readiness:
    s = Readiness()
    events: list[Event] = [
        ServerArgs(model="m", tp_size=2),
        Milestone("load_begin", rank="TP0"),
        BarProgress("weights", 3, 8),
    ]
    for i, ev in enumerate(events):
        s = reduce(s, ev, 100.0 + i)
    return s


def test_two_ticks_with_nothing_new_give_an_equal_state_and_the_words_still_age() -> None:
    s = _loading()
    a, b = reduce(s, Tick(), 110.0), reduce(s, Tick(), 111.0)
    assert a == b and a == s
    assert a.updated_at == 110.0 and b.updated_at == 111.0  # the clock stamp is kept, outside equality
    stalled = reduce(s, Tick(), 2000.0)
    later = reduce(stalled, Tick(), 2010.0)
    assert stalled.stall is not None and later == stalled
    assert verdict_line(stalled, 2000.0) != verdict_line(later, 2010.0)  # the age is the views' words, from equal facts


def test_the_words_are_not_facts() -> None:
    names = {f.name for f in fields(Readiness)}
    assert "reason" not in names and "evidence" not in names
    assert not hasattr(Readiness, "reason") and not hasattr(Readiness, "evidence")  # the views' words, not the state's
    s = _loading()
    assert verdict_line(s) == verdict_line(s, s.updated_at) and evidence(s) == evidence(s, s.updated_at)
    assert verdict_line(s).startswith("loading weights: 3/8 shards") and "log: shards 3/8" in evidence(s)


def test_an_event_rebuilds_only_the_records_it_touches() -> None:
    s = _loading()
    probed = reduce(s, HealthResult("/health", "starting", status=503), 105.0)
    assert probed.probes is not s.probes
    for untouched in ("bars", "rankset", "logged", "shape", "gpu", "link", "control", "setup", "server"):
        assert getattr(probed, untouched) is getattr(s, untouched), untouched
    barred = reduce(s, BarProgress("weights", 4, 8), 106.0)
    assert barred.bars is not s.bars and barred.shards is not None and barred.shards.done == 4
    for untouched in ("probes", "gpu", "link", "control", "setup", "proc"):
        assert getattr(barred, untouched) is getattr(s, untouched), untouched


def test_unknown_facts_are_refused() -> None:
    try:
        Readiness.of(no_such_fact=1)  # type: ignore[call-arg]
    except TypeError as err:
        assert "no_such_fact" in str(err)
    else:
        raise AssertionError("an unknown fact was accepted")


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(events, st.floats(min_value=0, max_value=1e6, allow_nan=False)), max_size=30))
def test_same_events_give_equal_states_and_a_quiet_tick_changes_nothing_but_the_stall(
    sequence: list[tuple[object, float]],
) -> None:
    a, b = Readiness(), Readiness()
    for event, now in sequence:
        a, b = reduce(a, event, now), reduce(b, event, now)  # type: ignore[arg-type]
    assert a == b
    last = max((now for _, now in sequence), default=0.0)
    ticked = reduce(a, Tick(), last + 0.5)
    again = reduce(ticked, Tick(), last + 1.0)
    if again.stall == ticked.stall:
        assert again == ticked
