"""Regenerates screenshots/late_attach_*.svg (-m screenshots): the TUI and the board opened on a server whose log
says it was ready minutes before anyone looked (the simulator's `--backdate`: its stamps and mtime read as begun
10 minutes earlier). Every view tells the log's times, as `wait` does: the phase's time from the log's fired-up
stamp (minutes, not the seconds since the look), the timeline's phases from its stamps. Look at them as PNGs after
(CONTRIBUTING.md)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from tests.helpers.processes import Sims
from tests.helpers.sim import SimServer
from tests.test_screenshots import SCREENSHOTS, portable_fonts
from tests.test_ui_fleet import _until
from tui.commands.fleet_board import board_app
from tui.commands.fleet_watch import Fleet
from tui.commands.options import FleetOptions, WatchOptions
from tui.commands.targets import ServerTarget
from tui.commands.watch import build_app
from tui.core.config import Target, WatchConfig
from tui.core.fleet import UP
from tui.core.settings import Settings
from tui.sources.hostpool import HostPool
from tui.sources.local import LocalHost

BACKDATE_S = 600  # the log reads as begun this long before the look
SIZE = (120, 40)


def _ready_in_the_log(server: SimServer, limit: float = 120.0) -> None:
    """The launch is over before anything looks: the log says fired up."""
    deadline = time.monotonic() + limit
    while b"fired up and ready to roll" not in server.log.read_bytes():
        assert time.monotonic() < deadline, "the simulator never said it was ready"
        time.sleep(0.2)


def _save(app: object, name: str, *words: str) -> str:
    path = Path(app.save_screenshot(filename=f"{name}.svg", path=str(SCREENSHOTS)))  # type: ignore[attr-defined]
    svg = portable_fonts(path.read_text())
    path.write_text(svg)
    text = svg.replace("&#160;", " ")
    missing = [w for w in words if w not in text]
    assert not missing, f"{name}: the screen lacks {missing}"
    return text


@pytest.mark.screenshots
async def test_the_tui_and_the_board_after_a_late_attach(sim: Sims, tmp_path: Path) -> None:
    server = sim(speed=50.0, tp=2, shards=8, speculative="none", extra=("--backdate", str(BACKDATE_S)))
    _ready_in_the_log(server)

    opts = WatchOptions(
        Target(("local",)),
        WatchConfig(port=server.port, log=str(server.log), remote_python=sys.executable,
                    sim_gpus=str(server.gpu_state)),
        history=tmp_path / "history.sqlite3", settings=Settings(),
    )  # fmt: skip
    host = LocalHost()
    await host.connect()
    app, session = build_app(host, opts, host_label="gpu-host")
    try:
        async with app.run_test(size=SIZE) as pilot:
            await _until(pilot, lambda: app.state.phase in UP and app.state.last_log_at is not None, "ready")
            await pilot.pause(1.0)  # the panes redraw on the app's own tick
            _save(app, "late_attach_tui", "ready")
            ready_span = next(s for s in app.state.timeline if s.phase in UP)
            assert ready_span.start_t is not None and time.time() - ready_span.start_t > BACKDATE_S / 2
    finally:
        await session.close()
        await host.close()

    args = FleetOptions(remote_python=sys.executable, sim_gpus=str(server.gpu_state))
    fleet = Fleet(args, HostPool(remote_python=sys.executable))
    await fleet.open([(ServerTarget("late", "local", server.port, str(server.log)), "late", "")])
    fleet.start()
    board = board_app(args, fleet)
    try:
        async with board.run_test(size=SIZE) as pilot:
            await _until(pilot, lambda: fleet.entries[0].state.phase in UP, "the row ready")
            await pilot.pause(1.0)
            text = _save(board, "late_attach_board", "late")
            in_phase = str(board.table.get_row_at(0)[3])  # IN PHASE: from the log's fired-up stamp, not the look
            assert in_phase.endswith("m") and in_phase[:-1].isdigit() and int(in_phase[:-1]) >= 5, in_phase
            assert "<1m" not in text
    finally:
        await fleet.close()
