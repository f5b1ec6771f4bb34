"""Regenerates screenshots/fleet_*.svg from `sglang-tui demo --fleet`'s own servers (-m screenshots): the board as
the demo opens it, its seven simulators launched through their rows' own controls, once the stalled, the failed and
the one slower than its history say so, at 80×24, 120×40 and 200×50. Deselected by default (it rewrites tracked
files); look at the pictures as PNGs after (CONTRIBUTING.md)."""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import pytest

from tests.helpers.processes import Spawner
from tests.test_screenshots import SCREENSHOTS, portable_fonts
from tests.test_ui_fleet import _until
from tui.commands import demo_fleet
from tui.commands.fleet_board import board_app
from tui.commands.fleet_watch import Fleet
from tui.commands.options import DemoOptions
from tui.core.fleet import UP
from tui.sources.hostpool import HostPool
from tui.ui import fleet_rows

SIZES = ((80, 24), (120, 40), (200, 50))


@pytest.mark.screenshots
async def test_the_demo_fleet_board_at_three_sizes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spawn: Spawner
) -> None:
    """(`spawn`: the e2e lane; the demo starts its simulators in-process, through LocalHost.)"""
    monkeypatch.setattr(demo_fleet, "demo_fleet_history", lambda: tmp_path / "history.sqlite3")  # a first run's
    opts, rows = demo_fleet.fleet_options(
        DemoOptions(speed=20.0, stall_after=8.0), Path(tempfile.mkdtemp(dir=tmp_path))
    )
    fleet = Fleet(opts, HostPool(remote_python=sys.executable))
    await fleet.open(rows)
    fleet.start()
    app = board_app(opts, fleet)
    late = next(i for i, s in enumerate(demo_fleet.SERVERS) if s.after)
    try:
        async with app.run_test(size=SIZES[1]) as pilot:
            for i in range(len(demo_fleet.SERVERS)):
                if i != late:
                    await demo_fleet.launch(fleet, i)

            def by_name(name: str) -> str:
                """The row's words whole (the board cuts long cells: "weights was 2.9× sl…" once serving)."""
                entry = next(e for e in fleet.entries if e.name == name)
                return " ".join(fleet_rows.cells(entry, time.time()).values())

            await _until(pilot, lambda: all(fleet.entries[i].state.phase in UP for i in (0, 1)), "chat-a, chat-b up")
            await demo_fleet.launch(fleet, late)
            await _until(pilot, lambda: "slower" in by_name("chat-c") and "STALLED" in by_name("stuck-cap")
                         and "FAILED" in by_name("oom-load"), "the stall, the OOM and the slow one", tries=6000)  # fmt: skip
            for width, height in SIZES:
                await pilot.resize_terminal(width, height)
                await pilot.pause(0.5)
                path = Path(app.save_screenshot(filename=f"fleet_{width}x{height}.svg", path=str(SCREENSHOTS)))
                svg = portable_fonts(path.read_text())
                path.write_text(svg)
                text = svg.replace("&#160;", " ")
                assert "STALLED" in text and "FAILED" in text and "out of memory" in text, path
    finally:
        await demo_fleet.stop_all(fleet)
        await fleet.close()


def fleet_rows_words(app: object, name: str) -> list[str]:
    table = app.table  # type: ignore[attr-defined]
    for i in range(table.row_count):
        row = [str(c) for c in table.get_row_at(i)]
        if row[0] == name:
            return row
    return []
