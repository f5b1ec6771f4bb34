"""Regenerates screenshots/*.svg from the demo's own states: `.venv/bin/python -m pytest -m screenshots`.

Each picture is what `sglang-tui demo` shows a newcomer: the real simulator launched through ServerControl, the
real Monitor and the app as `run_tui` builds it (commands/watch.build_app), at the demo's own speed, with the
demo's own history (its launches are recorded, so the second run has an ETA and the third, whose weights the
demo slows on purpose, a regression). Keys are pressed as a user would. Deselected by default: it takes
minutes, and it rewrites tracked files. Re-run it after any change of the screen, then look at the pictures
(CONTRIBUTING.md says how to turn them into PNGs).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from textual.pilot import Pilot

from tests.helpers.processes import Spawner
from tui.commands.demo import (
    DEMO_HOST,
    SLOW_EVERY,
    demo_history_path,
    demo_stall_after,
    ready_launches,
    start_demo,
    stop_demo,
)
from tui.commands.history import helped
from tui.commands.watch import build_app
from tui.core.eta import estimate
from tui.core.readiness import reduce
from tui.core.state import Phase, Readiness
from tui.core.wording import verdict_line
from tui.history.store import HistoryStore
from tui.ui.app import SglangTui
from tui.ui.screens.bench import BenchResultScreen
from tui.ui.screens.confirm import ConfirmScreen
from tui.ui.screens.help import HelpScreen
from tui.ui.screens.proctree import ProcTreeScreen

SCREENSHOTS = Path(__file__).resolve().parent.parent / "screenshots"
SPEED = 10.0  # the demo's default (`sglang-tui demo`): what a newcomer sees
SIZE = (120, 40)
SMALL = (80, 24)
WIDE = (200, 50)  # the header's whole reason: a regression's words come after the phase's figures
PHASE_LIMIT_S = 300.0  # the longest any awaited state may take on a busy machine (a startup takes about a minute)

# Textual's SVG asks for "Fira Code, monospace", loaded from the web. A renderer that cannot fetch it and
# reads only the first family (cairosvg) falls back to a proportional font: text runs drift off their cells
# (the phase badge overlapped the next words). A monospace font that is usually installed comes first.
SVG_FONT = "font-family: Fira Code, monospace;"
PORTABLE_FONT = 'font-family: "DejaVu Sans Mono", "Fira Code", monospace;'


def portable_fonts(svg: str) -> str:
    """The SVG with a monospace font first in its family list (one that renders without the network)."""
    assert SVG_FONT in svg, "Textual's SVG template changed: check the font-family it asks for"
    return svg.replace(SVG_FONT, PORTABLE_FONT)


@dataclass
class Run:
    """One demo launch under Pilot: its app and the pilot that drives it."""

    app: SglangTui
    pilot: Pilot[None]
    misses: list[str]  # pictures that lack the words their state must show (said at the end: the rest are taken)

    @property
    def state(self) -> Readiness:
        return self.app.state

    async def until(self, ok: Callable[[Readiness], bool], what: str, limit: float = PHASE_LIMIT_S) -> None:
        deadline = time.monotonic() + limit
        while not ok(self.state):
            if time.monotonic() > deadline:
                raise AssertionError(f"not within {limit:g} s: {what}; the state: {verdict_line(self.state)}")
            await self.pilot.pause(0.1)

    async def until_screen(self, kind: type, limit: float = PHASE_LIMIT_S) -> None:
        await self.until(lambda _s: isinstance(self.app.screen, kind), f"the {kind.__name__}", limit)

    async def until_notice(self, needle: str, limit: float = PHASE_LIMIT_S) -> None:
        notices = self.app._notifications
        await self.until(lambda _s: any(needle in str(n.message) for n in notices), f"a notice with {needle!r}", limit)

    async def press(self, *keys: str) -> None:
        await self.pilot.press(*keys)
        await self.pilot.pause(0.3)

    async def shot(self, name: str, *, shows: tuple[str, ...] = (), notices: bool = False) -> Path:
        """screenshots/NAME.svg as the screen is now; `shows`: words it must hold (else the state is not the one
        the picture is named for). The notices of earlier steps are cleared first unless the picture is of one."""
        if not notices:
            self.app.clear_notifications()
        await self.pilot.pause(0.5)  # the panes redraw on the app's own tick
        SCREENSHOTS.mkdir(exist_ok=True)
        path = Path(self.app.save_screenshot(filename=f"{name}.svg", path=str(SCREENSHOTS)))
        svg = portable_fonts(path.read_text())
        path.write_text(svg)
        text = svg.replace("&#160;", " ")
        missing = [words for words in shows if words not in text]
        if missing:
            self.misses.append(f"{name}: the screen lacks {missing}")
        return path


@asynccontextmanager
async def demo_run(fault: str | None = None, size: tuple[int, int] = SIZE) -> AsyncIterator[Run]:
    """`sglang-tui demo [--fault F]` as `commands/demo.py` runs it, the app under Pilot instead of a terminal."""
    running = await start_demo(SPEED, fault)
    try:
        opts = running.watch_options(False, demo_stall_after(SPEED, None))
        initial = reduce(Readiness(), running.launched, time.time())
        app, session = build_app(running.host, opts, host_label=DEMO_HOST, initial=initial, control=running.control)
        try:
            async with app.run_test(size=size, notifications=True) as pilot:
                run = Run(app, pilot, [])
                yield run
            assert not run.misses, run.misses
        finally:  # as run_tui's own way out: the Monitor closed, the launch's last record written
            await session.close()
            recorder = getattr(app, "history_recorder", None)
            if recorder is not None:
                recorder.finish(app.state)
    finally:
        await stop_demo(running)


def loading_past(fraction: float) -> Callable[[Readiness], bool]:
    """Loading weights, at least `fraction` of the shards done."""
    return lambda s: (
        s.phase is Phase.LOADING_WEIGHTS and s.shards is not None and s.shards.done >= fraction * s.shards.total
    )


def serving(s: Readiness) -> bool:
    return s.phase is Phase.SERVING and s.decode is not None and s.decode.gen_throughput is not None


@pytest.fixture(autouse=True)
def _state_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spawn: Spawner) -> None:
    """The dumps `d` saves go under the test's own state dir, never the user's; `spawn` puts the tests in the e2e
    lane (the demo starts its processes in-process, through LocalHost)."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))


@pytest.mark.screenshots
async def test_the_demo_three_times_with_its_history() -> None:
    """Three demo launches, one history (the test's own, as the demo's is the user's): the first at work (search,
    process tree), the second recorded (one launch is no median), the third with the ETA from the first two and
    its slower weights flagged (then capture, bench, kill)."""
    history = demo_history_path()
    assert ready_launches(history) == 0, f"{history}: the test's demo history is not fresh"

    async with demo_run() as first:
        await first.until(loading_past(0.4), "the first launch loading its weights")
        await first.shot("demo_first_loading", shows=("LOADING WEIGHTS", "shards"))
        await first.until(serving, "the first launch serving")
        await first.shot("demo_serving", shows=("SERVING", "accept len"))
        await first.press("1", "slash", *"accept len", "enter", "F")  # the log (focused) maximized, then the search
        await first.shot("demo_search_filter", shows=("accept len", "F: all lines"))
        await first.press("escape", "1", "P")
        await first.until_screen(ProcTreeScreen)
        await first.shot("demo_process_tree", shows=("processes of the server", "sglang::scheduler_TP0"))
        await first.press("escape")

    async with demo_run() as second:  # one launch in the history: no median yet (tui.core.past.MIN_LAUNCHES)
        await second.until(serving, "the second launch serving")

    assert ready_launches(history) == 2 and (ready_launches(history) + 1) % SLOW_EVERY == 0
    async with demo_run() as third:  # its weights load slower on purpose: flagged against the first two
        await third.until(
            lambda s: loading_past(0.3)(s) and estimate(s, third.app.clock()).ready_in_s is not None,
            "the third launch loading, with an ETA from the first two",
        )
        await third.shot("demo_history_eta", shows=("ready in ~", "last 2 launches"))
        await third.until(
            lambda s: s.phase is Phase.LOADING_WEIGHTS and estimate(s, third.app.clock()).slow is not None,
            "the third launch's weights flagged slower than usual",
        )
        await third.pilot.resize_terminal(*WIDE)
        await third.shot("demo_regression", shows=("slower than usual", "ready in ~", "last 2 launches"))
        await third.pilot.resize_terminal(*SMALL)
        await third.shot("demo_loading_80x24", shows=("LOADING WEIGHTS",))
        await third.press("question_mark")
        await third.until_screen(HelpScreen)
        await third.shot("demo_help_80x24", shows=("keys",))
        await third.press("escape")
        await third.pilot.resize_terminal(*SIZE)
        await third.until(lambda s: s.phase is Phase.CUDA_GRAPH and s.capture is not None, "the capture")
        await third.shot("demo_capture", shows=("CUDA GRAPH CAPTURE",))
        await third.until(serving, "the third launch serving")
        await third.press("b", "y")
        await third.until_screen(BenchResultScreen)
        await third.shot("demo_bench", shows=("TTFT",))
        await third.press("escape", "K")
        await third.until_screen(ConfirmScreen)
        await third.shot("demo_confirm_kill", shows=("No",))
        await third.press("y")
        await third.until(lambda s: s.phase is Phase.FAILED, "the kill's outcome")
        await third.shot("demo_stopped", shows=("STOPPED",))


@pytest.mark.screenshots
async def test_the_demo_failing_and_stalled() -> None:
    async with demo_run("oom-capture") as failed:
        await failed.until(lambda s: s.phase is Phase.FAILED, "the OOM")
        await failed.shot("demo_failed_oom", shows=("FAILED", "out of memory"))
        await failed.press("r")  # the remedy's edit of the demo's launch command, one key away
        await failed.until_screen(ConfirmScreen)
        await failed.shot("demo_restart_with_change", shows=("Restart with this change?", "--cuda-graph-max-bs"))
        await failed.press("y")
        await failed.until(lambda s: s.phase in (Phase.READY, Phase.SERVING), "the relaunch with the change, ready")
        await failed.shot("demo_relaunch_ready", shows=("ready",))
    with HistoryStore(demo_history_path()) as store:  # both launches, the second with the change it ran with
        launches = store.launches(DEMO_HOST, limit=2)
    after, before = launches
    assert (before["outcome"], before["tried"]) == ("failed", None), before
    assert (
        after["outcome"] == "ready" and after["tried"]["cause"] == "oom" and after["tried"]["after"] == before["start"]
    )
    assert helped(before, after) == "yes"
    async with demo_run("hang-rank") as stalled:  # TP3 blocks in a collective of its own during capture
        await stalled.until(lambda s: s.stall is not None, "the stall")
        await stalled.shot("demo_stalled", shows=("STALLED",))
        await stalled.press("d")  # where every rank is stuck: what `d` is for
        await stalled.until_notice("saved to")
        await stalled.shot("demo_dump", shows=("saved to", "TP3"), notices=True)
