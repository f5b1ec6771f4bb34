"""The fleet board, driven by Textual's pilot over three real simulators watched by the real Fleet (local hosts):
the rows as the servers move, `s` sorting by phase (the failed one first), `/` filtering by group, Enter opening a
server's full view with its log and Esc coming back, `?` the keys."""

from __future__ import annotations

import sys
from collections.abc import Callable

from textual.widgets import DataTable

from tests.helpers.processes import Sims
from tui.commands.fleet_board import board_app
from tui.commands.fleet_watch import Fleet
from tui.commands.options import FleetOptions
from tui.commands.targets import ServerTarget
from tui.core.state import Phase
from tui.sources.hostpool import HostPool
from tui.ui.app import ServerScreen
from tui.ui.fleet_app import FleetApp
from tui.ui.panes.header import HeaderPane
from tui.ui.screens.confirm import ConfirmScreen
from tui.ui.screens.fleet_help import FleetHelpScreen


def _args(sim_gpus: str) -> FleetOptions:
    return FleetOptions(remote_python=sys.executable, sim_gpus=sim_gpus)  # no history: none recorded


def _names(app: FleetApp) -> list[str]:
    table = app.table
    return [str(table.get_row_at(i)[0]) for i in range(table.row_count)]


async def _until(pilot: object, condition: Callable[[], bool], what: str, tries: int = 2400) -> None:
    for _ in range(tries):
        if condition():
            return
        await pilot.pause(0.05)  # type: ignore[attr-defined]
    raise AssertionError(f"never: {what}")


async def test_board_sorts_filters_opens_and_comes_back(sim: Sims) -> None:
    alpha = sim(speed=100.0, shards=8, speculative="none")
    beta = sim(speed=100.0, shards=8, speculative="none", fault="oom-load")
    gamma = sim(speed=100.0, shards=8, speculative="none")
    servers = {"alpha": (alpha, "prod"), "beta": (beta, "canary"), "gamma": (gamma, "prod")}
    args = _args(",".join(str(s.gpu_state) for s, _ in servers.values()))
    fleet = Fleet(args, HostPool(remote_python=sys.executable))
    await fleet.open([(ServerTarget(n, "local", s.port, str(s.log)), n, g) for n, (s, g) in servers.items()])
    fleet.start()
    app = board_app(args, fleet)
    try:
        async with app.run_test(size=(160, 40)) as pilot:

            def phases() -> list[Phase]:
                return [e.state.phase for e in fleet.entries]

            await _until(pilot, lambda: phases() == [Phase.READY, Phase.FAILED, Phase.READY], "2 ready, 1 failed")
            drawn = ["ready", "FAILED (out of memory)", "ready"]  # the failure's cause in the state's own cell
            await _until(pilot, lambda: [str(app.table.get_row_at(i)[2]) for i in range(3)] == drawn, "the rows drawn")
            assert _names(app) == ["alpha", "beta", "gamma"]  # the order given
            table = app.table
            assert app.table.get_row_at(1)[2].style == "bold reverse red"
            assert "out of memory" in str(table.get_row_at(1)[8])
            summary = str(app.query_one("#fleet-summary").render())
            assert "3 servers: 2 ready · 0 starting · 1 failed" in summary, summary
            assert table.fixed_columns == 1  # NAME stays in view when → scrolls the rest

            table.move_cursor(row=2)  # on gamma: the cursor follows gamma through every re-sort below
            for _ in range(3):  # order given -> name -> where -> phase
                await pilot.press("s")
            assert app.sort_column == "phase"
            assert _names(app)[0] == "beta"  # the worst first
            assert [str(c.label).rstrip() for c in table.ordered_columns][2] == "PHASE ▲"
            assert _names(app)[table.cursor_row] == "gamma"
            await pilot.press("S")
            assert _names(app)[-1] == "beta"
            assert [str(c.label).rstrip() for c in table.ordered_columns][2] == "PHASE ▼"
            assert _names(app)[table.cursor_row] == "gamma"
            keys = str(app.query_one("#fleet-keys").render())
            assert "T terminate" in keys and "r restart" not in keys  # no launch command: no restart offered
            await pilot.press("r")
            await pilot.pause()
            assert app.screen is app.screen_stack[0]  # refused on the board, with why (no view opened for nothing)

            await pilot.press("slash")
            for key in "prod":
                await pilot.press(key)
            assert sorted(_names(app)) == ["alpha", "gamma"]  # the group is searched
            await pilot.press("enter")  # done typing: back to the rows
            assert isinstance(app.focused, DataTable)
            await pilot.press("escape")
            assert sorted(_names(app)) == ["alpha", "beta", "gamma"] and app.filter_words == ""

            await pilot.press("slash", "q", "enter")  # a letter typed in the filter is text, not a key
            # the ready rows' words hold no q (beta's may: its remedy can be `try --quantization fp8`)
            assert app.is_running and app.filter_words == "q" and not {"alpha", "gamma"} & set(_names(app))
            await pilot.press("escape")

            table.move_cursor(row=_names(app).index("alpha"))
            await pilot.press("enter")
            await _until(pilot, lambda: isinstance(app.screen, ServerScreen), "the server's view opened")
            view = app.screen
            assert isinstance(view, ServerScreen)
            await _until(pilot, lambda: view.log_pane.view.line_count > 0, "its log shown")
            assert view.state.phase is Phase.READY and view.sources.host_label == "alpha"
            assert "alpha" in str(view.query_one(HeaderPane).render())
            await pilot.press("escape")
            await _until(pilot, lambda: app.screen is app.screen_stack[0], "back on the board")
            assert _names(app)[0] in ("alpha", "gamma")  # still sorted by phase, reversed

            table.move_cursor(row=_names(app).index("gamma"))
            await pilot.press("T")  # terminate: gamma's view opens and asks there, with the exact command
            await _until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the confirm dialog")
            assert isinstance(app.screen_stack[-2], ServerScreen) and app.screen_stack[-2].sources.host_label == "gamma"
            await pilot.press("n")  # no: nothing is done
            await _until(pilot, lambda: isinstance(app.screen, ServerScreen), "back on gamma's view")
            await pilot.press("escape")
            await _until(pilot, lambda: app.screen is app.screen_stack[0], "back on the board")
            assert gamma.alive() and fleet.entries[2].state.phase is Phase.READY

            await pilot.press("question_mark")
            assert isinstance(app.screen, FleetHelpScreen)
            await pilot.press("escape")
            assert not isinstance(app.screen, FleetHelpScreen)
    finally:
        await fleet.close()
