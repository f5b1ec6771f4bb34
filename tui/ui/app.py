"""The Textual app: folds monitor batches into one Readiness state that the panes render; keys become intents."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, cast

from textual import events, work
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.css.query import NoMatches
from textual.dom import DOMNode
from textual.driver import Driver
from textual.notifications import SeverityLevel
from textual.reactive import var
from textual.screen import Screen
from textual.widget import Widget

from tui.core.benchstats import BenchResult, bound
from tui.core.control import ServerControlLike
from tui.core.events import ConnectionState, ControlResult, Event, LogActivity, LogReset, ServerProcess, Tick
from tui.core.fold import Fold
from tui.core.loglines import LineSplitter
from tui.core.remedy import tried_change
from tui.core.state import Phase, Readiness
from tui.core.termtext import terminal_safe
from tui.core.vocab import control_action
from tui.core.wording import verdict_line
from tui.history.paths import state_dir  # where ctrl+s, c and C save ($XDG_STATE_HOME/sglang-tui)
from tui.ui import actions, offers
from tui.ui.labels import control_summary, copy_words, phase_words, stopped_by_tool
from tui.ui.messages import BenchFinished, ControlFinished, EventsReceived
from tui.ui.offers import Offer
from tui.ui.panes.base import StateAt
from tui.ui.panes.gpu_chart import GpuChart
from tui.ui.panes.gpus import GpuPane
from tui.ui.panes.header import HeaderPane
from tui.ui.panes.health import HealthPane
from tui.ui.panes.keybar import KeyBar, key_for
from tui.ui.panes.log_pane import LogPane
from tui.ui.panes.log_view import LogLine
from tui.ui.panes.shards import ShardsPane
from tui.ui.panes.timeline import TimelinePane
from tui.ui.screens.bench import BenchResultScreen
from tui.ui.screens.confirm import ConfirmScreen, summary_lines
from tui.ui.screens.help import HelpScreen
from tui.ui.screens.overlay import Overlay
from tui.ui.toasts import newest_that_fit, toast_rows, toast_width

DANGER_DEBOUNCE_S = 0.5  # a second press of a dangerous key within this window is ignored
HELD_LINES_MAX = 50_000  # log lines kept while the display is paused
CLOCK_STEP = 0.9  # the shown clock moves when it is this many ticks behind (under 1: the tick timer's jitter)
_UP = (Phase.READY, Phase.SERVING)
READY_CLOCK_TICKS = 5  # the real TUI: once up, ages and "in phase" step every 5 ticks (idle CPU; events redraw at once)
TOAST_CHARS = 140  # a failure toast longer than this would cover half of an 80x24 screen
SMALL_ROWS = 30  # under this many rows the failure toast is short and brief: the log pane under it has ~4 lines
TOAST_CHARS_SMALL = 60
TOAST_SMALL_S = 5.0
SHORT_BELOW = 36  # rows: the vertical breakpoint under which panes fold (VERTICAL_BREAKPOINTS' "-short")

#: The panes keys 1-4 focus, by the name the action registry uses.
PANES: dict[str, str] = {"log": "#log", "shards": "#shards", "gpus": "#gpus", "health": "#health"}


class BenchLike(Protocol):
    """What the app needs from tui.sources.bench.BenchRunner (one per bench)."""

    def describe(self, where: str) -> str: ...

    async def check_ready(self) -> None: ...

    async def run(self) -> BenchResult: ...


@dataclass
class UiSources:
    """Everything the app reads from or acts on, built at the edge (tests pass fakes)."""

    batches: Callable[[], AsyncIterator[list[Event]]]
    """Called once: the monitor's batches (Monitor.batches)."""
    control: ServerControlLike | None = None
    """Restart/terminate/kill; None: watch only."""
    host_label: str = "local"
    """The host as the user typed it (shown in the header and the confirm dialog)."""
    port: int | None = None
    """The server's port on the host (the header names it when no server process is found)."""
    launch_if_absent: bool = False
    """On start, launch the server through `control` when no process of it is found (`--launch`)."""
    dump: Callable[[], Awaitable[tuple[str, str | None]]] | None = None
    """The `d` key: py-spy every process of the server and save it; (one line, the file) (issue 13)."""
    bench: Callable[[], BenchLike] | None = None
    """A new bench runner for the `b` key (None: no bench)."""
    previous_bench: Callable[[], BenchResult | None] | None = None
    """The last launch's bench of the same launch key, from the history store (None: no store wired)."""
    record_bench: Callable[[BenchResult], None] | None = None
    """Keep a finished bench with this launch in the history store (None: no store wired)."""
    fold: Fold = field(default_factory=Fold)
    """Folds each batch, tick and control result (the Session's: the reducer, the weight files' stat, the launch
    history, and the phase fed back to the Monitor); the default: the reducer alone."""
    quit_words: str = actions.QUIT_WORDS
    """What quitting does to the server, for the help (the demo stops its simulated one)."""
    verdict_hook: Callable[[Readiness], str | None] | None = None
    """--on-ready / --on-fail: run once per kind ("ready", "fail") when the state turns ready, or failed or
    stalled; blocking, so the app calls it in a thread worker; returns what went wrong (shown), or None."""


_RESET_WORDS = {
    "truncated": "log restarted (truncated)",
    "rotated": "log restarted (new file)",
    "started_at_last_launch": "showing the log from its last launch",
    "skipped": "a large log: its launch's first lines, then its last ones",
    "missing": "log file missing",
    "appeared": "log file appeared",
}


def marker(words: str, kind: str | None = "warning") -> LogLine:
    """A line of our own in the log pane (never from the server), drawn as a rule."""
    return LogLine(f"──── {words} ────", kind, None)


def reset_marker(event: LogReset) -> LogLine:
    """The log pane's line for a LogReset, e.g. "──── log restarted (truncated): … ────"."""
    words = _RESET_WORDS.get(event.reason, f"log {event.reason}")
    return marker(words + (f": {event.detail}" if event.detail else ""))


def control_lines(result: ControlResult) -> list[LogLine]:
    """The log pane's record of an action: its outcome, and the exact launch command when one ran."""
    lines = [marker(f"sglang-tui {control_summary(result)}", "milestone" if result.ok else "error")]
    if result.command and (result.action == "launch" or (result.action == "restart" and result.ok)):
        lines.append(LogLine(f"$ {result.command.splitlines()[-1]}", None, None))
    return lines


def split_log_events(splitter: LineSplitter, batch: Iterable[Event]) -> tuple[LineSplitter, list[LogLine]]:
    """Display lines out of a batch's LogActivity bytes; a LogReset flushes and starts a fresh splitter."""
    lines: list[LogLine] = []
    for event in batch:
        if isinstance(event, LogActivity) and event.data:
            lines.extend(map(LogLine, splitter.feed(event.data)))
        elif isinstance(event, LogReset):
            lines.extend(map(LogLine, splitter.flush()))
            splitter = LineSplitter()
            lines.append(reset_marker(event))
    return splitter, lines


if TYPE_CHECKING:
    _Node = DOMNode  # what the mixin's methods may use: what both an App and a Screen have
else:
    _Node = object  # at run time a plain mixin, so that Textual's CSS follows App's or Screen's own bases


class ServerView(_Node):
    """One server's full view: the panes, the folds and the keys, on the node that holds them: the app of
    `sglang-tui HOST` (SglangTui, its default screen holds the panes), or a screen that the fleet board pushes
    (ServerScreen, the panes on it). What only an App has (the terminal, the themes) is reached as `self.app`.
    A mixin, first in its classes' bases: each concrete class names its BINDINGS (Textual merges those of DOM
    nodes only)."""

    state: var[Readiness] = var(Readiness(), init=False)
    """The readiness state shown (held still while paused)."""
    now: var[float] = var(0.0, init=False)
    """The clock as last read (ticks once a second)."""
    paused: var[bool] = var(False, init=False)
    """The display is frozen; batches are still folded."""
    view: var[StateAt] = var(StateAt(Readiness(), 0.0), init=False)
    """`state` and `now` together: what the panes are bound to (one redraw per fold, not one per field)."""

    def __init__(
        self,
        sources: UiSources,
        *,
        read_only: bool = False,
        clock: Callable[[], float] = time.time,
        initial: Readiness | None = None,
        max_log_lines: int = 20_000,
        tick_s: float = 1.0,
        monotonic: Callable[[], float] = time.monotonic,
        ready_clock_ticks: int = 1,
        keymap: dict[str, str] | None = None,
        theme: str | None = None,
        keep_theme: Callable[[str], str | None] | None = None,
    ) -> None:
        super().__init__()
        self._remaps = dict(keymap or {})  # action id -> keys, from the settings ([keys])
        self._theme_wanted = theme
        self._keep_theme_in = keep_theme  # keeps a theme chosen in the palette (None: not kept); a problem as a line
        self._theme_kept: str | None = None
        self.ready_clock_ticks = max(1, ready_clock_ticks)
        """Once ready, the shown clock steps every this many ticks (watch passes READY_CLOCK_TICKS)."""
        self.sources = sources
        self.read_only = read_only
        self.clock = clock
        self.max_log_lines = max_log_lines
        self.tick_s = tick_s
        self._monotonic = monotonic
        self._live = initial if initial is not None else Readiness()
        self._held_lines: list[LogLine] = []
        self._held_live: str | None = None
        self._last_danger_press: dict[str, float] = {}
        self.batches_seen = 0
        """Monitor batches folded so far (tests wait on it)."""
        self.control_results: list[ControlResult] = []
        """Every ControlResult that came back (newest last)."""
        self.bench_results: list[BenchFinished] = []
        """Every bench that came back, finished or stopped (newest last)."""
        self._control_in_flight: str | None = None  # the restart/terminate/kill running now
        self.last_saved: Path | None = None
        self.notices: list[str] = []
        """Every notice shown (newest last; tests read it)."""
        self.last_copied: Path | None = None
        """Where c or C last saved what it sent to the clipboard."""
        self._folding_own_result = False  # on_control_finished is folding this app's own action's result
        self._told_tmux = False  # what tmux needs to pass OSC 52 on: said with the first copy only
        self._hooks_run: set[str] = set()  # the --on-ready / --on-fail kinds started so far
        self.hooks_done: list[str] = []
        """The verdict hooks that finished ("ready", "fail"; tests wait on it)."""
        """Where ctrl+s last wrote the log."""
        self.set_reactive(ServerView.state, self._live)
        self.set_reactive(ServerView.now, clock())
        self.set_reactive(ServerView.view, StateAt(self._live, self.now))

    # ------------------------------------------------------------------------------------------ layout

    def compose(self) -> ComposeResult:
        view = ServerView.view
        yield HeaderPane(
            self.sources.host_label, read_only=self.read_only, port=self.sources.port, id="header"
        ).data_bind(view, ServerView.paused)
        with Horizontal(id="top"):
            yield TimelinePane(id="timeline").data_bind(view)
            yield ShardsPane(id="shards").data_bind(view)
            yield HealthPane(id="health").data_bind(view)
        yield GpuPane(id="gpus").data_bind(view)
        yield GpuChart(id="gpu-chart").data_bind(view)
        yield LogPane(max_lines=self.max_log_lines, id="log")
        yield KeyBar(id="keys")

    @property
    def _home(self) -> Screen[object] | None:
        """The screen that holds the panes (None before the app has one)."""
        if isinstance(self, Screen):
            return self
        stack = self.app.screen_stack
        return stack[0] if stack else None

    @property
    def _top(self) -> Screen[object]:
        """The screen on top now (a dialog, the help, or the panes' own)."""
        return self.app.screen

    @property
    def log_pane(self) -> LogPane:
        return self.query_one(LogPane)

    def on_mount(self) -> None:
        from tui.ui.panes import keybar

        keybar.KEYMAP.clear()  # one app per process in use; tests run many: each starts from its own remaps
        keybar.KEYMAP.update(self._remaps)
        app = self.app
        if app is cast(object, self):  # the terminal's own: a screen pushed by the board leaves them to the board
            if self._remaps:
                app.set_keymap(self._remaps)
            if self._theme_wanted:
                if self._theme_wanted in app.available_themes:
                    app.theme = self._theme_wanted
                else:
                    self.notify(
                        f"config: theme {self._theme_wanted!r} is not known (ctrl+p lists the themes)",
                        severity="warning",
                        timeout=10,
                    )
            if self._keep_theme_in is not None:
                self._theme_kept = app.theme
                app.theme_changed_signal.subscribe(app, self._keep_theme)
        self.log_pane.view.focus()
        home = self._home
        assert home is not None
        self.watch(home, "focused", self._refresh_keys, init=False)
        self.watch(home, "maximized", self._apply_layout, init=False)
        self.call_after_refresh(self._apply_layout)
        self.set_interval(self.tick_s, self._tick)
        self._consume()
        if self.sources.launch_if_absent and not self.read_only and self.sources.control is not None:
            self._launch_if_absent()

    def on_resize(self, event: events.Resize) -> None:
        self.call_after_refresh(self._apply_layout)

    def _apply_layout(self, *_: object) -> None:
        """Fold what a short terminal cannot hold: ranks on one grouped line, no routine last-action line."""
        screen = self._home
        if screen is None:
            return
        short = self.app.size.height < SHORT_BELOW
        shards, header = screen.query_one(ShardsPane), screen.query_one(HeaderPane)
        wanted = (short and screen.maximized is not shards, short)
        for pane, compact in zip((shards, header), wanted, strict=True):
            if pane.compact != compact:
                pane.compact = compact
                pane._drawn = None
                pane.redraw()
        chart = screen.query_one(GpuChart)
        chart.active = screen.maximized is screen.query_one(GpuPane)  # the GPUs over time, under the maximized table
        self._refresh_keys()
        self._keep_toasts_below_header()

    def _refresh_keys(self, *_: object) -> None:
        """The footer for the focused pane and what the log view is doing."""
        try:
            home = self._home
            assert home is not None
            bar = home.query_one(KeyBar)
        except Exception:  # not mounted yet, or shutting down
            return
        focused = home.focused
        name = ""
        for pane_name, selector in PANES.items():
            pane = home.query_one(selector)
            if focused is not None and (focused is pane or pane in focused.ancestors):
                name = pane_name
        bar.show_for(offered=offers.offered(self.offer()), focused=name, searching=bool(self.log_pane.view.search_term))

    # ------------------------------------------------------------------------------ data in (one way)

    @work(exclusive=True, group="monitor", exit_on_error=False)
    async def _consume(self) -> None:
        """Read monitor batches; split log bytes into lines; post both. Never touches a widget."""
        splitter = LineSplitter()
        try:
            async for batch in self.sources.batches():
                splitter, lines = split_log_events(splitter, batch)
                self.post_message(EventsReceived(tuple(batch), tuple(lines), splitter.current))
                await asyncio.sleep(0)  # a source that never awaits must not starve the keyboard
        except asyncio.CancelledError:
            raise
        except Exception as err:  # the app shows a dead source; it never crashes on one
            detail = f"monitor stopped: {type(err).__name__}: {err}"
            self.post_message(EventsReceived((ConnectionState("failed", detail),)))

    @work(exclusive=True, group="control", exit_on_error=False)
    async def _launch_if_absent(self) -> None:
        """`--launch`: start the server when no process of it is found; a running one is only watched."""
        control = self.sources.control
        assert control is not None
        try:
            found = await control.process_state()
        except Exception as err:  # an unknown state is no licence to launch a second server
            self.notify(
                f"not launching: process state unknown ({type(err).__name__}: {err})", severity="error", timeout=10
            )
            return
        if found.alive:
            self.post_message(EventsReceived((found,)))
            return
        where = f":{self.sources.port}" if self.sources.port else "its port"
        self.post_message(EventsReceived((found,), (marker(f"no server process found on {where}: launching it"),)))
        self.notify(f"no server process found on {where}: launching it", title="launch", timeout=5)
        try:
            result = await control.launch()
        except Exception as err:  # the failure is a result to show, not a crash
            result = ControlResult("launch", ok=False, detail=f"{type(err).__name__}: {err}")
        self.post_message(ControlFinished(result))

    def on_events_received(self, message: EventsReceived) -> None:
        self.batches_seen += 1
        events = message.events
        if self._control_in_flight is not None:
            # While our own restart/terminate/kill runs, "no process left" is what we are doing, not a failure:
            # its ControlResult says how it ended (no flash of "failed: server process exited").
            events = tuple(e for e in events if not (isinstance(e, ServerProcess) and not e.alive))
        self._fold(events)
        self._show_lines(message.lines, message.live)

    def _show_lines(self, lines: Iterable[LogLine], live: str | None) -> None:
        """Append to the log pane, or hold while the display is paused."""
        if self.paused:
            self._held_lines.extend(lines)
            del self._held_lines[: max(0, len(self._held_lines) - HELD_LINES_MAX)]
            self._held_live = live
        else:
            try:
                pane = self.log_pane
            except NoMatches:  # the app is exiting and its screen is gone; a batch was still queued (two nodes)
                return
            pane.append(lines)
            pane.set_live(live)

    def on_control_finished(self, message: ControlFinished) -> None:
        result = message.result
        self._control_in_flight = None
        self.control_results.append(result)
        self._folding_own_result = True  # its toast below says how the stop went: no second one for the same news
        try:
            self._fold((result,))
        finally:
            self._folding_own_result = False
        live = self._held_live if self.paused else self.log_pane.live
        self._show_lines(control_lines(result), live)
        self.notify(
            control_summary(result),
            title=f"{result.action}",
            severity="information" if result.ok else "error",
            timeout=10,
        )

    def _tick(self) -> None:
        self._fold((Tick(),))

    def _fold(self, batch: Iterable[Event]) -> None:
        now = self.clock()
        before = self._live
        state = self.sources.fold(before, batch, now, on_error=self.log.error)  # a bug must not freeze the screen
        self._live = state
        if (before.process_alive, before.process_visible) != (state.process_alive, state.process_visible):
            self._refresh_keys()  # the footer offers terminate and kill only while a process runs
        self._announce(before, state)
        self._verdict_hook(before, state)
        if not self.paused:
            self._publish(state, self._shown_clock(now))

    def _shown_clock(self, now: float) -> float:
        """The clock the panes draw with: it steps about once a tick, so every age and "in phase" on screen
        changes in the same repaint instead of one repaint per batch (what a quiet server costs in CPU)."""
        ticks = self.ready_clock_ticks if self._live.phase in _UP and self._live.stall is None else 1
        if now < self.now or now - self.now >= CLOCK_STEP * self.tick_s * ticks:
            return now
        return self.now

    def _publish(self, state: Readiness, now: float) -> None:
        """Show a state at a clock reading (the panes redraw once, and only where their text changed).

        A state with the same facts at the same clock (a tick between two steps of the shown clock) is not handed
        to the panes at all: at ready that is most ticks, and each would cost every pane a compare or a draw."""
        self.now = now
        self.state = state
        view = StateAt(state, now)
        if not view.looks_like(self.view):
            self.view = view

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = False,
    ) -> None:
        """A toast; its words carry host and log text (file names, titles, a dump's frames): shown as text, never as
        markup, with every character a terminal would obey made visible (tui.core.termtext). Never over a dialog:
        while one is open the notice is on the dialog's own message line (and the toast waits until it closes);
        never over the header: the toasts stack below it (the oldest scroll out of view)."""
        message, title = terminal_safe(message), terminal_safe(title)
        self.notices.append(message)
        App.notify(self.app, message, title=title, severity=severity, timeout=timeout, markup=markup)  # the App's toast
        self._keep_toasts_below_header()
        self.call_after_refresh(self._keep_toasts_below_header)  # the header may grow with what brought the notice
        top = self._top if self.app.screen_stack else None
        if isinstance(top, Overlay):
            top.show_notice(message, title, severity)

    def _keep_toasts_below_header(self) -> None:
        """The main screen's toasts may use the rows under the header and above the footer, no more: the newest
        that fit there stay, older ones are dismissed (tui/ui/toasts.py says why a stack may not overflow)."""
        main = self._home
        if main is None:
            return
        try:
            header = main.query_one(HeaderPane)
        except NoMatches:
            return
        rows = max(3, self.app.size.height - header.region.bottom - 1)  # the rack docks above the footer's row
        self._drop_toasts_that_do_not_fit(rows)

    def _drop_toasts_that_do_not_fit(self, rows: int) -> None:
        """The newest toasts that fit in `rows` stay; older ones are dismissed (tui/ui/toasts.py says why)."""
        app = self.app
        shown = list(app._notifications)  # Textual's own list (textual==8.2.8 is pinned), oldest first
        width = toast_width(app.size.width)
        keep = newest_that_fit([toast_rows(n.title, n.message, width) for n in shown], rows)
        for notification in shown[: len(shown) - keep]:
            app._unnotify(notification, refresh=False)
        if keep < len(shown):
            app._refresh_notifications()

    def _desktop_notify(self, title: str, body: str) -> None:
        """A notification outside the terminal where it supports one (OSC 9 / 777); never fails the screen."""
        import os

        from tui.ui.notify import osc_notification

        seq = osc_notification(dict(os.environ), title, body)
        driver = getattr(self.app, "_driver", None)
        if seq is None or driver is None or self.app.is_headless:
            return
        try:
            driver.write(seq)
        except Exception as err:  # a terminal that refuses it still has the bell and the toast
            self.log.error(f"desktop notification failed: {err}")

    def _announce(self, old: Readiness, new: Readiness) -> None:
        """Bell, toast and (where the terminal has them) a desktop notification when it turns ready, fails or stalls."""
        said = verdict_line(new)  # the header's line: a notification says the verdict in the same words
        if new.phase in _UP and old.phase not in _UP:
            self.app.bell()
            self._desktop_notify(f"{self.sources.host_label}: the server is ready", said)
            facts = [
                f for f, seen in (("log says fired up", new.log_ready), ("/health says 200", new.health_ready)) if seen
            ]
            self.notify("; ".join(facts) or said, title=f"{self.sources.host_label}: the server is ready", timeout=10)
        elif new.phase is Phase.FAILED and old.phase is not Phase.FAILED and stopped_by_tool(new) is not None:
            if self._folding_own_result:
                return
            self.notify(said, title=f"{self.sources.host_label}: the server stopped", timeout=10)  # asked for: no bell
        elif new.phase is Phase.FAILED and old.phase is not Phase.FAILED:
            self.app.bell()
            small = self.app.size.height < SMALL_ROWS  # the toast would sit over the log pane's few lines
            chars = TOAST_CHARS_SMALL if small else TOAST_CHARS
            why = said if len(said) <= chars else said[: chars - 1] + "…"  # the header and log have it whole
            self._desktop_notify(f"{self.sources.host_label}: the server failed", why)
            self.notify(why, title=f"{self.sources.host_label}: the server failed", severity="error",
                        timeout=TOAST_SMALL_S if small else 30)  # fmt: skip
        elif new.stall is not None and old.stall is None and new.phase not in (*_UP, Phase.FAILED):
            self.app.bell()
            self._desktop_notify(f"{self.sources.host_label}: stalled", said)
            self.notify(said, title=f"{self.sources.host_label}: stalled", severity="warning", timeout=30)

    def _verdict_hook(self, old: Readiness, new: Readiness) -> None:
        """--on-ready when it turns ready, --on-fail when it fails or stalls (not on a stop asked for); once each."""
        hook = self.sources.verdict_hook
        if hook is None:
            return
        if new.phase in _UP and old.phase not in _UP:
            kind = "ready"
        elif (
            new.phase is Phase.FAILED
            and old.phase is not Phase.FAILED
            and stopped_by_tool(new) is None
            or new.stall is not None
            and old.stall is None
            and new.phase not in (*_UP, Phase.FAILED)
        ):
            kind = "fail"
        else:
            return
        if kind in self._hooks_run:
            return
        self._hooks_run.add(kind)

        def work() -> None:
            try:
                trouble = hook(new)
            except Exception as err:  # a hook that cannot run must not take the screen down
                trouble = f"could not run the hook: {err}"
            self.hooks_done.append(kind)
            if trouble:
                self.app.call_from_thread(self.notify, trouble, title=f"--on-{kind}", severity="warning", timeout=15)

        self.run_worker(work, thread=True, group="verdict-hook", exit_on_error=False)

    # -------------------------------------------------------------------------------- keys → intents

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "bench":
            return self.sources.bench is not None  # no bench wired (replays, tests): not in the footer
        if action == "stop_bench":
            return self._bench_running()  # otherwise escape goes on to whatever else uses it
        if action in actions.DANGEROUS_ACTIONS:
            if self.read_only:
                return False
            if self.sources.control is None:
                return None
        return True

    def action_help(self) -> None:
        if not isinstance(self._top, HelpScreen):
            self.app.push_screen(HelpScreen(self.read_only, self._remaps, self.sources.quit_words))

    async def action_quit(self) -> None:
        """q, ctrl+q, ctrl+c: leave at once, but ask first while a bench runs (quitting stops it)."""
        if not self._bench_running():
            self.app.exit()
            return
        if isinstance(self._top, ConfirmScreen):
            return

        def answered(yes: bool | None) -> None:
            if yes:
                self.action_stop_bench()
                self.app.exit()

        lines = [
            f"host:    {self.sources.host_label}",
            "bench:   running; quitting stops it (every open stream is closed, so no request is left running)",
            "escape here keeps it running; escape on the main screen stops the bench alone",
        ]
        self.app.push_screen(ConfirmScreen("Quit while a bench runs?", self.sources.host_label, None, lines), answered)

    def action_log_scroll(self, rows: int) -> None:
        """j / k: the focused pane down or up a row (the log's view when no other pane has the focus)."""
        target = self._scroll_target()
        target.scroll_relative(y=rows, animate=False, immediate=True)

    def action_log_top(self) -> None:
        """g: the top of the focused pane (the log: its oldest line kept, which stops following)."""
        self._scroll_target().scroll_home(animate=False, immediate=True)

    def _scroll_target(self) -> Widget:
        home = self._home
        if home is None or self._top is not home:
            return self.log_pane.view
        focused = home.focused
        for selector in ("#shards", "#gpus", "#health"):
            pane = home.query_one(selector)
            if focused is not None and (focused is pane or pane in focused.ancestors):
                return pane
        return self.log_pane.view

    def action_process_tree(self) -> None:
        from tui.ui.screens.proctree import ProcTreeScreen

        if not isinstance(self._top, ProcTreeScreen):
            self.app.push_screen(ProcTreeScreen(self.sources.host_label, lambda: self._live))

    def action_pane(self, name: str) -> None:
        """Focus a pane; pressed again on the focused pane: maximize it; again: restore the layout."""
        screen = self._home
        if screen is None or self._top is not screen or name not in PANES:
            return  # a dialog is open (its keys come first), or an unknown pane from a remapped key
        pane = screen.query_one(PANES[name])
        target = self.log_pane.view if name == "log" else pane
        focused = screen.focused
        here = focused is not None and (focused is pane or pane in focused.ancestors)
        if screen.maximized is pane:
            screen.minimize()
        elif screen.maximized is not None or here or not pane.display:
            screen.maximize(pane, container=False)  # a hidden pane (80 columns) is shown maximized at once
        target.focus()

    def action_follow(self) -> None:
        self.log_pane.follow()

    def action_search(self) -> None:
        self.log_pane.start_search()

    def action_search_next(self) -> None:
        self.log_pane.search_next()
        self._refresh_keys()

    def action_search_previous(self) -> None:
        self.log_pane.search_next(backwards=True)
        self._refresh_keys()

    def action_search_filter(self) -> None:
        if not self.log_pane.toggle_only_matches():
            self.notify("search first (/), then F shows only the matching lines", timeout=3)

    def action_next_problem(self) -> None:
        error = self._live.error
        view = self.log_pane.view
        if (
            view.cursor is None
            and self._live.phase is Phase.FAILED
            and error is not None
            and not error.stopped_by
            and view.find_containing(error.line.strip())
        ):
            self.log_pane.refresh_status()  # the first e on a failure: the line the verdict names, then e/E go on
            return
        if not self.log_pane.next_problem():
            self.notify("no error or warning line in the log", timeout=3)

    def action_previous_problem(self) -> None:
        if not self.log_pane.next_problem(backwards=True):
            self.notify("no error or warning line in the log", timeout=3)

    def action_severity_filter(self) -> None:
        from tui.ui.panes.log_pane import SEVERITY_WORDS

        severity = self.log_pane.cycle_severity()
        words = f"log: {SEVERITY_WORDS[severity]}" if severity else "log: all lines"
        if severity and not self.log_pane.view.shown_rows:
            words += f" (none of the {self.log_pane.view.line_count} lines kept; {key_for('severity-filter')}: next)"
        self.notify(words, timeout=3)

    def action_rank_filter(self) -> None:
        rank = self.log_pane.cycle_rank_filter()
        self.notify(f"log: rank {rank} only" if rank else "log: all ranks", timeout=2)

    def action_wrap(self) -> None:
        self.log_pane.toggle_wrap()

    def action_hide_probes(self) -> None:
        hidden = self.log_pane.toggle_probes()
        self.notify("log: sglang-tui's probe lines hidden" if hidden else "log: probe lines shown (dimmed)", timeout=2)

    def action_copy(self) -> None:
        text = self.log_pane.view.selected_text()
        what = "selected line"
        if text is None and self._live.error is not None:
            text, what = self._live.error.line, "error line"
        if text is None and self.log_pane.view.lines:
            text, what = self.log_pane.view.lines[-1].text, "last line"
        if text is None:
            self.notify("nothing to copy", severity="warning", timeout=3)
            return
        self._send_to_clipboard(text, f"the {what} ({len(text)} chars)", "copied-{host}.txt")

    def action_copy_report(self) -> None:
        from tui.ui.report import markdown_report

        text = markdown_report(self._live, self.clock(), self.sources.host_label)
        self._send_to_clipboard(text, f"a Markdown report ({len(text.splitlines())} lines)", "report-{host}.md")

    def _send_to_clipboard(self, text: str, what: str, name: str) -> None:
        """OSC 52 (through tmux or screen where it runs in one), and the text saved to a file; the notice says both,
        since no terminal says whether it obeyed."""
        import os

        from tui.ui import clipboard

        env = dict(os.environ)
        self.app._clipboard = text  # what Textual's own copy keeps (app.clipboard)
        driver = getattr(self.app, "_driver", None)
        if driver is not None and not self.app.is_headless:
            for sequence in clipboard.sequences(text, env):
                driver.write(sequence)
        path = state_dir() / name.format(host=clipboard.file_label(self.sources.host_label))
        problem = clipboard.save(text, path)
        self.last_copied = None if problem else path
        through = clipboard.through(env)
        words = copy_words(what, str(path), through, problem)
        if through == "tmux" and not self._told_tmux:
            self._told_tmux = True
            words += f" ({clipboard.TMUX_NEEDS})"
        self.notify(words, severity="warning" if problem else "information", timeout=8)

    def action_save_log(self) -> None:
        from tui.ui.clipboard import file_label, save

        lines = [line.text for line in self.log_pane.view.lines]
        name = f"sglang-tui-{file_label(self.sources.host_label)}-{time.strftime('%Y%m%d-%H%M%S')}.log"
        path = state_dir() / "logs" / name
        problem = save("\n".join(lines) + ("\n" if lines else ""), path)
        if problem:
            self.notify(f"cannot save the log: {problem}", severity="error", timeout=10)
            return
        self.last_saved = path
        self.notify(f"saved {len(lines)} lines to {path}", timeout=8)

    def action_pause(self) -> None:
        self.paused = not self.paused
        if not self.paused:
            held, self._held_lines = self._held_lines, []
            self.log_pane.append(held)
            self.log_pane.set_live(self._held_live)
            self._publish(self._live, self.clock())

    def action_dump(self) -> None:
        """`d`: where every rank is stuck (py-spy of each process), saved to a file the notice names."""
        if self.sources.dump is None:
            self.notify("no dump for this server", severity="warning", timeout=3)
            return
        self.notify(f"dumping every process of the server on {self.sources.host_label} (py-spy)…", timeout=3)
        self._run_dump()

    @work(exclusive=True, group="dump", exit_on_error=False)
    async def _run_dump(self) -> None:
        assert self.sources.dump is not None
        try:
            line, path = await self.sources.dump()
        except Exception as err:  # a failed dump is a notice, not a crash
            line, path = f"dump failed: {type(err).__name__}: {err}", None
        text = f"{line}\nsaved to {path}" if path else line
        self.notify(text, title="dump", severity="information" if path else "error", timeout=30)

    def action_restart_server(self) -> None:
        self._ask_then_control("restart")

    def action_terminate_server(self) -> None:
        self._ask_then_control("terminate")

    def action_kill_server(self) -> None:
        self._ask_then_control("kill")

    def offer(self) -> Offer:
        """What decides which of restart, terminate and kill can work now (tui.ui.offers)."""
        control = self.sources.control
        return Offer.of(
            self._live,
            read_only=self.read_only,
            has_control=control is not None,
            relaunch=control.relaunch if control is not None else None,
        )

    def _ask_then_control(self, verb: str) -> None:
        """Confirm (what will happen, the exact commands one key away, No focused), then run the intent in a worker;
        an action that cannot work now says why instead (a binding is not the only way to call one)."""
        offer = self.offer()
        refused = offers.refusal(verb, offer)
        if refused is not None:
            self.notify(refused, severity="warning", timeout=6)
            return
        control = self.sources.control
        assert control is not None  # refusal() said so
        stamp = self._monotonic()
        last = self._last_danger_press.get(verb)
        self._last_danger_press[verb] = stamp
        if last is not None and stamp - last < DANGER_DEBOUNCE_S:
            return
        if isinstance(self._top, ConfirmScreen):
            return
        if any(w.group == "control" and w.is_running for w in self.workers):
            self.notify("an action is still running", severity="warning", timeout=3)
            return
        change = offers.remedy_change(self._live, offer) if verb == "restart" else None
        new_launch = change.command if change is not None else None
        try:
            command = control.describe(verb, new_launch)
            if change is not None:  # `c` shows the two commands' difference first, then what runs
                command = offers.change_comment(change) + "\n" + command
        except Exception as err:
            self.notify(f"cannot {verb}: {err}", severity="error", timeout=10)
            return

        def answered(yes: bool | None) -> None:
            if yes:
                if change is not None and new_launch is not None:  # the relaunch (and every later one) runs it
                    control.relaunch_with(new_launch)
                    # the watch's setup, set by its caller: the history keeps the change with each launch after
                    tried = tried_change(self._live, change)
                    self._live = self._live.evolve(launch_command=new_launch, tried_change=tried)
                self.notify(f"{verb}: running on {self.sources.host_label}", timeout=5)
                self._run_control(verb, command)

        summary = summary_lines(self.sources.host_label, self._live, offers.will(verb, offer, change))
        if change is not None:
            summary += offers.change_lines(change)
        title = offers.title(verb, offer) if change is None else "Restart with this change?"
        self.app.push_screen(ConfirmScreen(title, self.sources.host_label, command, summary), answered)

    # ------------------------------------------------------------------------------------------- bench

    def _bench_running(self) -> bool:
        return any(w.group == "bench" and w.is_running for w in self.workers)

    def _keep_theme(self, theme: object) -> None:
        """A theme chosen in the app (the palette) sticks: written to the config file, once per change."""
        name = str(getattr(theme, "name", theme))
        if self._keep_theme_in is None or name == self._theme_kept:
            return
        self._theme_kept = name
        problem = self._keep_theme_in(name)
        if problem:
            self.notify(problem, severity="warning", timeout=10)

    def _bench_where(self) -> str:
        label, port = self.sources.host_label, self.sources.port
        return f"{label} port {port}" if port and not label.endswith(f":{port}") else label  # the demo's names it

    def action_bench(self) -> None:
        """Once ready: confirm with the numbers (what will be sent, the caps), then run it in a worker."""
        factory = self.sources.bench
        if factory is None:
            self.notify("no bench for this server", severity="warning", timeout=3)
            return
        if self._bench_running():
            self.notify("a bench is running (escape stops it)", severity="warning", timeout=3)
            return
        if isinstance(self._top, (ConfirmScreen, BenchResultScreen)):
            return
        if self._live.phase not in _UP:
            self.notify(
                f"bench: the server is not ready yet ({phase_words(self._live.phase)})", severity="warning", timeout=5
            )
            return
        runner = factory()
        plan = runner.describe(self._bench_where())

        def answered(yes: bool | None) -> None:
            if yes:
                self.notify("bench: running (escape stops it)", title="bench", timeout=5)
                self._run_bench(runner)

        self.app.push_screen(ConfirmScreen("Benchmark the server?", self.sources.host_label, plan), answered)

    def action_stop_bench(self) -> None:
        for worker in self.workers:
            if worker.group == "bench" and worker.is_running:
                worker.cancel()

    @work(exclusive=True, group="bench", exit_on_error=False)
    async def _run_bench(self, runner: BenchLike) -> None:
        try:
            await runner.check_ready()
            result = await runner.run()
        except asyncio.CancelledError:
            self.post_message(
                BenchFinished(None, "stopped; every open stream was closed, so no request is left running")
            )
            raise
        except Exception as err:  # not ready, the link went away: a line to show, not a crash
            self.post_message(BenchFinished(None, str(err) or type(err).__name__))
            return
        self.post_message(BenchFinished(result))

    def on_bench_finished(self, message: BenchFinished) -> None:
        self.bench_results.append(message)
        result = message.result
        live = self._held_live if self.paused else self.log_pane.live
        if result is None:
            self._show_lines([marker(f"sglang-tui bench: {message.problem}")], live)
            self.notify(message.problem, title="bench", severity="warning", timeout=10)
            return
        accept = "accept len none" if result.accept_len is None else bound(result.accept_len)
        rate = "—" if result.tok_s_p50 is None else f"{result.tok_s_p50:.0f}"
        summary = f"{result.ok} ok, {result.failed} failed; {accept}; {rate} tok/s per request"
        self._show_lines([marker(f"sglang-tui bench: {summary}", "milestone")], live)
        previous = None
        if self.sources.previous_bench is not None:
            try:
                previous = self.sources.previous_bench()
            except Exception as err:  # a history read must not lose the result
                self.log.error(f"previous bench: {err}")
        if self.sources.record_bench is not None:
            try:
                self.sources.record_bench(result)
            except Exception as err:  # nor a history write
                self.log.error(f"record bench: {err}")
        if not isinstance(self._top, (ConfirmScreen, BenchResultScreen)):
            self.app.push_screen(
                BenchResultScreen(result, self._bench_where(), previous, self.sources.previous_bench is not None)
            )

    @work(exclusive=True, group="control", exit_on_error=False)
    async def _run_control(self, verb: str, command: str) -> None:
        control = self.sources.control
        assert control is not None
        self._control_in_flight = verb
        try:
            result = await getattr(control, verb)()
        except Exception as err:  # the failure is a result to show, not a crash
            result = ControlResult(
                control_action(verb), ok=False, detail=f"{type(err).__name__}: {err}", command=command
            )
        self.post_message(ControlFinished(result))


class SglangTui(ServerView, App[None]):
    """sglang-tui: one screen that tells the truth about an SGLang startup."""

    TITLE = "sglang-tui"
    CSS_PATH = "app.tcss"
    BINDINGS: ClassVar[list[BindingType]] = actions.bindings()  # type: ignore[assignment]
    ALLOW_IN_MAXIMIZED_VIEW = (
        "HeaderPane, KeyBar, GpuChart"  # the phase and the keys stay in view (the chart: only under maximized GPUs)
    )
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (110, "-wide"), (160, "-widest")]
    VERTICAL_BREAKPOINTS = [(0, "-short"), (36, "-tall")]

    def get_driver_class(self) -> type[Driver]:
        """Textual's driver, but on Linux/macOS the one whose input thread does not poll (tui/ui/driver.py)."""
        driver = super().get_driver_class()
        if driver.__module__ == "textual.drivers.linux_driver" and driver.__name__ == "LinuxDriver":
            from tui.ui.driver import QuietLinuxDriver

            return QuietLinuxDriver
        return driver

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        for action in actions.visible_actions(self.read_only):
            if action.builtin or action.action in ("quit", "help"):
                continue
            yield SystemCommand(
                action.description,
                f"key {action.display_key.replace('`', '')}",
                partial(self.run_action, action.action),
            )


class ServerScreen(ServerView, Screen[None]):
    """One server's full view as a screen of another app (the fleet board): the same panes, folds and keys as
    `sglang-tui HOST`; escape goes back (popping it ends its workers; the board's Session keeps running)."""

    CSS_PATH = "app.tcss"
    ALLOW_IN_MAXIMIZED_VIEW = SglangTui.ALLOW_IN_MAXIMIZED_VIEW
    HORIZONTAL_BREAKPOINTS = SglangTui.HORIZONTAL_BREAKPOINTS
    VERTICAL_BREAKPOINTS = SglangTui.VERTICAL_BREAKPOINTS
    BINDINGS: ClassVar[list[BindingType]] = [
        *actions.bindings(),
        Binding("escape", "back", "board", show=False, id="fleet-back"),  # after bench-stop: a bench stops first
    ]

    def action_back(self) -> None:
        if self.app.screen is self:
            self.dismiss(None)
