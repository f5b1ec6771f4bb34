"""The board's one timer for the clocks (issue 32): a board whose rows are all up has nothing to redraw until the
next minute (their time in phase is whole minutes), so its timer is set for then; a row that starts brings it to
the next second. Driven by Textual's pilot over the board's own sources, with a clock that stands still."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

from textual.screen import Screen

from tui.core.fleet import FleetEntry
from tui.core.state import Phase, Readiness
from tui.ui.fleet_app import BoardSources, FleetApp

NOW = 1000.5  # the sources' clock: the next second is 1001, the next minute 1020


def board(entries: list[FleetEntry], changes: asyncio.Queue[int], clock: Callable[[], float]) -> FleetApp:
    """The board over these rows: a row's index put on `changes` tells it that row changed; no row opens a view."""

    async def changed() -> AsyncIterator[int]:
        while True:
            yield await changes.get()

    def no_view(index: int) -> Screen[object] | None:
        return None

    return FleetApp(BoardSources(lambda: list(entries), changed, no_view, clock=clock))


async def test_a_board_at_rest_sets_its_clock_for_the_next_minute_and_a_starting_row_for_the_next_second() -> None:
    entries = [FleetEntry(f"s{i}", "gpu1", Readiness().evolve(phase=Phase.READY), order=i) for i in range(3)]
    changes: asyncio.Queue[int] = asyncio.Queue()
    app = board(entries, changes, lambda: NOW)
    async with app.run_test(size=(160, 20)) as pilot:
        await pilot.pause()
        assert app.table.row_count == 3 and app.clock_due == 1020.0
        entries[1] = FleetEntry("s1", "gpu1", Readiness().evolve(phase=Phase.LOADING_WEIGHTS), order=1)
        changes.put_nowait(1)
        for _ in range(200):
            if app.clock_due != 1020.0:
                break
            await pilot.pause(0.05)
        assert app.clock_due == 1001.0
        assert str(app.table.get_row_at(1)[2]) != "ready"


async def test_an_up_rows_minutes_roll_over_with_the_clock_not_with_its_next_change() -> None:
    """A ready row whose minute rolled over (59.5 s in phase, then 60.5 s) keeps "<1m" through a change of its state
    within the same minute of the clock: only that change's cell is drawn, not IN PHASE. Once the clock's minute
    moves, the next redraw rolls every up row's minutes over together (one repaint for all, issue 32)."""
    clock = [NOW]
    ready = Readiness().evolve(phase=Phase.READY, phase_since=NOW - 59.5, connection="connected")
    entries = [FleetEntry(f"s{i}", "gpu1", ready, order=i) for i in range(2)]
    changes: asyncio.Queue[int] = asyncio.Queue()

    def cell(row: int, column: str) -> str:
        return str(app.table.get_cell(str(row), column))

    async def after_change(row: int, state: Readiness, column: str, words: str) -> None:
        entries[row] = FleetEntry(f"s{row}", "gpu1", state, order=row)
        changes.put_nowait(row)
        for _ in range(200):
            if cell(row, column) == words:
                return
            await pilot.pause(0.05)
        raise AssertionError(f"row {row}'s {column} never said {words!r}: {cell(row, column)!r}")

    app = board(entries, changes, lambda: clock[0])
    async with app.run_test(size=(160, 20)) as pilot:
        await pilot.pause()
        assert cell(0, "in_phase") == cell(1, "in_phase") == "<1m"
        clock[0] = NOW + 1.0  # 60.5 s in phase, the same minute of the clock (1001.5 < 1020)
        await after_change(0, ready.evolve(health_probed=False), "health", "off")
        assert cell(0, "in_phase") == "<1m"
        clock[0] = 1021.0  # the clock's next minute: the next redraw (here row 1's change) rolls both rows over
        await after_change(1, ready.evolve(health_probed=False), "health", "off")
        assert cell(1, "in_phase") == "1m" and cell(0, "in_phase") == "1m"
