"""Freshness is a fact of the verdict (tui/core/freshness.py), pure: link and process-watch events folded by the one
reducer, the clock handed in. A lost host is never ready; a startup keeps its verdict through a reconnect; the
facts that come back clear it."""

from __future__ import annotations

from tui.core.events import ConnectionState, Event, ServerProcess, Tick
from tui.core.fleet import FleetEntry, exit_code
from tui.core.freshness import FRESH_S, WATCH_QUIET_S, last_seen_s
from tui.core.metrics import series
from tui.core.readiness import reduce
from tui.core.state import Phase, Readiness
from tui.core.verdict import decide
from tui.core.wording import verdict_line


def fold(state: Readiness, *timed: tuple[float, Event]) -> Readiness:
    for now, event in timed:
        state = reduce(state, event, now)
    return state


def ready_at(t: float) -> Readiness:
    """A server up since t: connected, its processes alive, its phase ready (the fold's facts, set directly)."""
    s = fold(Readiness(), (t, ConnectionState("connected", "gpu1")), (t, ServerProcess(alive=True, pids=(7,))))
    return s.evolve(phase=Phase.READY, phase_since=t)


def metric(s: Readiness, name: str, now: float) -> float | None:
    return next((v for n, _, v in series(s, now) if n == name), None)


def test_a_reconnect_is_ridden_out_until_fresh_s_then_nothing_is_ready() -> None:
    s = fold(ready_at(100.0), (110.0, ConnectionState("reconnecting", "connection lost: reset")))
    assert decide(s).kind == "ready" and s.lost_at is None  # a blip: not an outage yet
    s = fold(s, (110.0 + FRESH_S, Tick()))
    assert decide(s).kind == "cannot_connect" and decide(s).code == 4
    assert s.lost_at == 110.0 and s.lost_by == "link"
    assert verdict_line(s, 170.0) == "cannot connect: connection lost: reset; last seen ready 1m00s ago"
    assert metric(s, "sglang_tui_ready", 170.0) == 0 and metric(s, "sglang_tui_up", 170.0) == 0
    assert metric(s, "sglang_tui_last_seen_seconds", 170.0) == 60.0
    assert exit_code(FleetEntry("a", "gpu1", s)) == 4
    back = fold(s, (171.0, ConnectionState("connected", "gpu1 (reconnected)")))
    assert back.lost_at is None and decide(back).kind == "ready"  # its facts are the ones seen now
    assert metric(back, "sglang_tui_last_seen_seconds", 171.0) is None and metric(back, "sglang_tui_up", 171.0) == 1


def test_a_startup_keeps_its_verdict_while_lost_and_a_first_connection_that_never_came_is_lost_at_once() -> None:
    starting = fold(Readiness(), (0.0, ConnectionState("connected", "gpu1")))
    s = fold(starting, (5.0, ConnectionState("reconnecting", "lost")), (5.0 + FRESH_S, Tick()))
    assert s.lost_by == "link" and decide(s).kind == "starting"  # `wait` rides a reconnect out
    assert exit_code(FleetEntry("a", "gpu1", s)) == 4  # but the board's row costs itself: UNREACHABLE
    never = fold(Readiness(), (1.0, ConnectionState("reconnecting", "connection refused")))
    assert never.lost_at == 1.0 and exit_code(FleetEntry("b", "gpu2", never)) == 4


def test_a_failed_look_after_a_ready_one_is_lost_since_the_last_look() -> None:
    """A probe's memo: the last call saw it ready at 100; this call's connection failed at 130."""
    s = fold(ready_at(100.0), (100.0, Tick()), (130.0, ConnectionState("failed", "no connection within --timeout")))
    assert decide(s).kind == "cannot_connect" and s.lost_at == 100.0
    assert last_seen_s(s, 130.0) == 30.0


def test_a_process_watch_quiet_past_its_cadence_is_a_host_that_does_not_answer() -> None:
    s = ready_at(100.0)
    s = fold(s, (100.0 + WATCH_QUIET_S, Tick()))
    assert decide(s).kind == "ready"  # not past it yet
    s = fold(s, (101.0 + WATCH_QUIET_S, Tick()))
    assert s.lost_by == "watch" and decide(s).kind == "cannot_connect"
    assert "the host does not answer" in verdict_line(s, 120.0) and "last seen ready" in verdict_line(s, 120.0)
    s = fold(s, (125.0, ServerProcess(alive=True, pids=(7,))))
    assert s.lost_at is None and decide(s).kind == "ready"


def test_a_deployment_with_a_lost_node_is_not_ready_and_names_it() -> None:
    from tui.core import deployment as dm

    s0 = ready_at(100.0).evolve(log_ready=True, health_ready=True)
    s1 = fold(ready_at(100.0), (110.0, ConnectionState("reconnecting", "connection lost")), (116.0, Tick()))
    dep = dm.nodes([("node0", "h0"), ("node1", "h1")]).with_state("node0", s0).with_state("node1", s1)
    whole = dm.combined(dep)
    assert whole.lost_at == 110.0 and decide(whole).kind == "cannot_connect"
    assert verdict_line(whole).startswith("cannot connect: node1 (h1): connection lost")


def test_a_mux_agents_retries_flipping_connecting_and_reconnecting_are_one_outage() -> None:
    """A host behind the mux agent (fleet, export: sources/muxhost.py) says "connecting" at each retry of a lost
    link and "reconnecting" when it fails again: one outage since the first drop, lost once it lasts FRESH_S (the
    exporter's `sglang_tui_ready` stayed 1 for minutes after its host died while the words flipped)."""
    s = fold(ready_at(100.0), (110.0, ConnectionState("reconnecting", "connection lost: reset")))
    for i in range(1, 6):
        retry = ConnectionState("connecting", "retry") if i % 2 else ConnectionState("reconnecting", "refused")
        s = fold(s, (110.0 + i, retry), (110.0 + i, Tick()))
    assert s.connection_since == 110.0 and s.connection == "connecting"
    assert s.lost_at == 110.0 and s.lost_by == "link" and decide(s).kind == "cannot_connect"
    assert metric(s, "sglang_tui_ready", 116.0) == 0 and metric(s, "sglang_tui_up", 116.0) == 0
