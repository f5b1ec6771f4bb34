"""The `b` key: only once ready, a confirm with the numbers, the result next to the last launch's, Esc stops it.

The app's monitor is the scripted batch source (fake, named so); the bench itself is the real BenchRunner
on a LocalHost against the real simulator."""

from __future__ import annotations

import json

import pytest
from textual.widgets import Label, Static

from tests.helpers.processes import Sims
from tests.helpers.sim import SimServer, http_get
from tests.helpers.sim import wait_ready as _ready
from tests.helpers.ui_fakes import HOST, FakeBatchSource, FakeClock, play, startup_to_capture, startup_to_ready
from tui.core.benchstats import BenchResult
from tui.sources.bench import BenchPlan, BenchRunner
from tui.sources.local import LocalHost
from tui.ui.app import SglangTui, UiSources
from tui.ui.screens.bench import BenchResultScreen
from tui.ui.screens.confirm import ConfirmScreen

SIZE = (160, 48)
LAST_LAUNCH = BenchResult(16, 0, 0.05, 0.09, 141.0, 560.0, 3.10, ("meta_info",), (("meta_info", 3.10),))


@pytest.fixture(scope="module")
def drafter(module_sim: Sims) -> SimServer:
    # speed 20: a request takes longer to generate than to read, so one stopped mid-way is still generating
    return _ready(module_sim(tp=2, shards=4, speed=20, accept_len=1.5))


def stats(sim: SimServer) -> dict[str, int]:
    return json.loads(http_get(sim.port, "/sim_stats")[1])


def make(
    sim: SimServer, plan: BenchPlan, previous: BenchResult | None = None
) -> tuple[SglangTui, FakeBatchSource, FakeClock]:
    source, clock, host = FakeBatchSource(), FakeClock(), LocalHost()
    sources = UiSources(batches=source.batches, host_label=HOST, port=sim.port,
                        bench=lambda: BenchRunner(host, sim.port, plan, log_path=str(sim.log)),
                        previous_bench=(lambda: previous) if previous is not None else None)  # fmt: skip
    return SglangTui(sources, clock=clock), source, clock


def _text(app: SglangTui) -> str:
    screen = app.screen
    return "\n".join([str(w.render()) for w in screen.query(Label)] + [str(w.render()) for w in screen.query(Static)])


async def _until(pilot: object, condition, tries: int = 600) -> None:
    import asyncio

    for _ in range(tries):
        await pilot.pause()  # type: ignore[attr-defined]
        if condition():
            return
        await asyncio.sleep(0.02)
    raise AssertionError("condition never held")


async def _until_gone(condition, tries: int = 1500) -> None:
    """As _until, once the app has exited (no pilot left to pause)."""
    import asyncio

    for _ in range(tries):
        if condition():
            return
        await asyncio.sleep(0.02)
    raise AssertionError("condition never held")


async def test_b_asks_with_the_numbers_then_shows_the_result_next_to_the_last_launch(drafter: SimServer) -> None:
    app, source, clock = make(drafter, BenchPlan(requests=8, concurrency=2, max_new_tokens=128), previous=LAST_LAUNCH)
    async with app.run_test(size=SIZE) as pilot:
        await play(pilot, source, clock, startup_to_capture(36, 36))
        before = stats(drafter)["received"]
        await pilot.press("b")  # not ready yet: nothing asked, nothing sent
        assert not isinstance(app.screen, ConfirmScreen)
        await play(pilot, source, clock, startup_to_ready()[-3:])
        await pilot.press("b")
        assert isinstance(app.screen, ConfirmScreen)
        asked = _text(app)
        assert "8 streaming POST /generate requests" in asked and "2 at a time" in asked
        assert "max_new_tokens 128" in asked and "at most 1024 new tokens" in asked and HOST in asked
        await pilot.press("n")
        assert stats(drafter)["received"] == before  # No sends nothing
        await pilot.press("b", "y")
        await _until(pilot, lambda: isinstance(app.screen, BenchResultScreen))
        shown = _text(app)
        assert "requests: 8 ok, 0 failed" in shown
        result = app.bench_results[-1].result
        assert result is not None and result.accept_len == pytest.approx(1.5, abs=0.1)
        # the measured figure, to one decimal (1.44 shows ~1.4×: the figure shown is rounded once, from the value)
        assert f"at most ~{result.accept_len:.1f}× over plain decoding" in shown
        assert "last launch 3.10" in shown and "last 141" in shown
        assert stats(drafter)["received"] - before == 8
        await pilot.press("escape")
        assert not isinstance(app.screen, BenchResultScreen)
        assert any("sglang-tui bench: 8 ok, 0 failed" in line.text for line in app.log_pane.view.lines)


async def test_escape_stops_a_running_bench_and_leaves_no_request_running(drafter: SimServer) -> None:
    key = "escape"  # ctrl+c quits (issue 23), asking first while a bench runs: the next test
    # Requests far longer than the test takes to press the key (32768 tokens: seconds each, however busy the
    # machine), so the two in flight are still generating when it is pressed.
    app, source, clock = make(drafter, BenchPlan(requests=400, concurrency=2, max_new_tokens=32768))
    async with app.run_test(size=SIZE) as pilot:
        await play(pilot, source, clock, startup_to_ready()[-3:])
        before = stats(drafter)
        await pilot.press("b", "y")
        await _until(pilot, lambda: stats(drafter)["in_flight"] >= 2)
        await pilot.press(key)
        await _until(pilot, lambda: bool(app.bench_results))
        finished = app.bench_results[-1]
        assert finished.result is None and "no request is left running" in finished.problem
        await _until(pilot, lambda: stats(drafter)["in_flight"] == 0, tries=1500)
        after = stats(drafter)
        assert after["aborted"] > before["aborted"] and after["received"] - before["received"] < 400
        await pilot.press(key)  # no bench running: the key does what it did before (nothing here, no crash)
        await pilot.pause()
        assert len(app.bench_results) == 1


async def test_ctrl_c_while_a_bench_runs_asks_then_quits_and_leaves_no_request_running(drafter: SimServer) -> None:
    """Issue 23: ctrl+c quits, as in k9s or lazygit; while a bench runs it asks first (quitting stops the bench)."""
    app, source, clock = make(drafter, BenchPlan(requests=400, concurrency=2, max_new_tokens=32768))
    async with app.run_test(size=SIZE) as pilot:
        await play(pilot, source, clock, startup_to_ready()[-3:])
        before = stats(drafter)
        await pilot.press("b", "y")
        await _until(pilot, lambda: stats(drafter)["in_flight"] >= 2)
        await pilot.press("ctrl+c")
        assert isinstance(app.screen, ConfirmScreen) and "bench" in app.screen.title_text
        await pilot.press("n")  # keep it running
        await pilot.pause()
        assert app._bench_running() and app.is_running
        await pilot.press("ctrl+c", "y")  # the app exits: the context ends once it has
    assert app.return_code == 0
    await _until_gone(lambda: stats(drafter)["in_flight"] == 0)
    after = stats(drafter)
    assert after["aborted"] > before["aborted"] and after["received"] - before["received"] < 400
