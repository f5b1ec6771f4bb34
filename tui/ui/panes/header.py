"""Header: host and server, the phase with time in phase and total, the evidence, the link, the last action."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual import events
from textual.reactive import var

from tui.core.eta import estimate, eta_words
from tui.core.explain import evidence as evidence_of
from tui.core.explain import nothing_found_headline
from tui.core.fmt import ago, duration
from tui.core.remedy import remedy
from tui.core.srtlayout import disagreement_line
from tui.core.state import Phase, Readiness
from tui.core.wording import verdict_line
from tui.ui.labels import (
    PHASE_STYLES,
    control_summary,
    error_badge,
    health_is_old,
    phase_label,
    stopped_by_tool,
    stopped_by_us,
)
from tui.ui.panes.base import StatePane
from tui.ui.widgetargs import WidgetArgs

if TYPE_CHECKING:
    from typing_extensions import Unpack  # typing's own from 3.11

STALE_AFTER_S = 5.0  # data older than this (with the link not connected) is labelled stale


def _health_words(state: Readiness, now: float) -> str:
    for result in state.health:
        if result.endpoint == "/health":
            status = f" {result.status}" if result.status is not None else ""
            age = dict(state.health_checked_at).get("/health")
            when = f", {ago(now - age)}" if age is not None else ""
            old = "before this launch: " if health_is_old(state, "/health") else ""
            if (
                not old
                and state.phase is Phase.FAILED
                and age is not None
                and state.phase_since is not None
                and age <= state.phase_since
            ):
                old = "before it stopped: " if stopped_by_tool(state) is not None else "before it failed: "
            return f"{old}{result.outcome}{status}{when}"
    return "not probed yet"


def _alive_words(pids: tuple[int, ...]) -> str:
    """ "alive (pid 4242)", "alive (9 pids)" or just "alive"."""
    if not pids:
        return "alive"
    return f"alive (pid {pids[0]})" if len(pids) == 1 else f"alive ({len(pids)} pids)"


class HeaderPane(StatePane):
    """The top of the screen: what is watched and what the model says about it, on what evidence."""

    DEFAULT_CSS = """
    HeaderPane { height: auto; min-height: 3; padding: 0 1; background: $boost; }
    """

    paused: var[bool] = var(False, init=False)

    def __init__(
        self, host_label: str, *, read_only: bool = False, port: int | None = None, **kwargs: Unpack[WidgetArgs]
    ) -> None:
        super().__init__(**kwargs)
        self.host_label = host_label
        self.read_only = read_only
        self.port = port
        self.compact = False
        """Short terminal: a successful launch or restart is not repeated on a line of its own (the log has it)."""

    def watch_paused(self) -> None:
        self.redraw()

    def on_resize(self, event: events.Resize) -> None:
        """A header that grew or shrank (a failure adds its cause line): the open dialog stays under it."""
        follow = getattr(self.app.screen, "follow_header", None)
        if follow is not None:
            follow()

    def draw(self, state: Readiness, now: float) -> Text:
        # Said again at the shown clock: the reducer's own words carry ages at each batch's time, which would
        # redraw the header on every batch instead of once a tick.
        reason, evidence = verdict_line(state, now), evidence_of(state, now)
        text = Text(no_wrap=True, overflow="ellipsis")
        # line 1: host, link (first: it must survive 80 columns), server
        text.append(" sglang-tui ", style="bold reverse")
        text.append(f" {self.host_label}", style="bold")
        if self.read_only:
            text.append("  [read-only]", style="bold")
        if self.paused:
            text.append("  [PAUSED: p resumes]", style="bold reverse yellow")
        text.append("   link: ")
        link_style = (
            "green" if state.connection == "connected" else ("bold red" if state.connection == "failed" else "yellow")
        )
        text.append(state.connection, style=link_style)
        if state.connection != "connected" and state.connection_since is not None:
            text.append(f" for {duration(now - state.connection_since)}", style=link_style)
        newest = max(
            (t for t in (state.gpus_at, *(t for _, t in state.health_checked_at)) if t is not None), default=None
        )
        if newest is not None and now - newest > STALE_AFTER_S:
            text.append(f"  data {duration(now - newest)} old (stale)", style="bold yellow")
        if state.connection != "connected" and state.connection_detail:
            text.append(f"  ({state.connection_detail})", style="dim")
        server = state.server
        parts = [server.model or "model ?"]
        if server.tp_size:
            parts.append(f"TP{server.tp_size}")
        elif state.tp_ranks_seen and state.tp_ranks_seen[-1] >= 1:  # the tags' lower bound (evidence says which)
            parts.append(f"TP≥{state.tp_ranks_seen[-1] + 1}")
        if server.speculative:
            parts.append(f"spec {server.speculative}")
        port = server.port or self.port
        if port:
            parts.append(f":{port}")
        text.append("   " + " · ".join(parts))
        text.append("\n")
        # line 2: phase, time in phase, total, why
        stalled = state.stall is not None and state.phase not in (Phase.FAILED, Phase.READY, Phase.SERVING)
        stop = stopped_by_tool(state)
        lost = state.lost_at is not None and state.phase in (Phase.READY, Phase.SERVING)  # UNREACHABLE
        stopped = phase_label(state) == "STOPPED"  # by us, or a signal from another shell
        warn = stalled or stopped or lost or bool(nothing_found_headline(state))  # LOG MISSING too
        style = "bold reverse yellow" if warn else PHASE_STYLES.get(state.phase, "bold reverse")
        text.append(f" {phase_label(state)} ", style=style)
        ahead = eta_words(estimate(state, now))  # "ready in ~4m10s · last 3 launches 9m02s–9m40s" (history)
        if ahead and self.compact:  # a short terminal is a narrow one too: the ETA first, before the line is cut
            text.append(f"  {ahead} ·", style="bold cyan")
        since = state.phase_since or state.first_seen_at  # 0.0: the phase began before the first event
        text.append(f"  {duration(now - since) if since is not None else '—'} in phase")
        began = state.timeline[0].started_at if state.timeline else state.first_seen_at  # this launch, not the session
        if began is not None:
            text.append(f" · {duration(now - began)} total")
        if ahead and not self.compact:
            text.append(f" · {ahead}", style="bold cyan")
        if reason:
            text.append(f"   {reason}", style="italic")
        text.append("\n")
        # line 3: the two facts kept apart, and the process
        text.append(" log says: ")
        text.append("fired up" if state.log_ready else "not ready", style="green" if state.log_ready else "")
        text.append("   health says: ")
        # green only while it is this launch's answer and the launch is alive (never after a stop or a failure)
        text.append(
            _health_words(state, now), style="green" if state.health_ready and state.phase is not Phase.FAILED else ""
        )
        if state.process_alive is not None:
            text.append("   process: ")
            if state.process_alive:
                text.append(_alive_words(state.process_pids), style="green")
            elif state.launched or state.timeline:
                text.append("gone", style="bold red")
            else:  # nothing of a server was ever seen: say where we looked
                port = state.server.port or self.port
                text.append(
                    f"no server process found on :{port}" if port else "no server process found", style="bold yellow"
                )
        if evidence:
            text.append("   evidence: " + "; ".join(evidence), style="dim")
        # line 4: the cause, the stall, or the result of the last action
        if stop is not None:
            text.append("\n")
            clean = stop.ok and not stop.survivors and not stop.gpu_held
            text.append(" ■ STOPPED ", style="bold reverse yellow")
            text.append(f" {control_summary(stop)}", style="yellow" if clean else "bold red")
        elif state.error is not None:
            text.append("\n")
            badge, badge_style = error_badge(state.error)
            text.append(badge, style=badge_style)
            text.append(f" {state.error.line}", style="bold yellow" if stopped_by_us(state.error) else "bold red")
            found = remedy(state)
            if found is not None:  # what to change: the table's or SGLang's own words (tui/core/remedy.py)
                text.append("\n")
                text.append(" ➜ REMEDY ", style="bold reverse cyan")
                text.append(f" {found.headline()}", style="cyan")
        elif stalled and state.stall is not None:
            text.append("\n")
            text.append(" ⚠ STALLED ", style="bold reverse yellow")
            text.append(
                f" no progress for {duration(now - state.stall.since)} (this phase allows {duration(state.stall.limit_s)})"
                + (f": {state.stall.detail}" if state.stall.detail else ""),
                style="yellow",
            )
        # an srtctl job's benchmark word where it disagrees with the workers' own (the fact the fold made:
        # tui.core.deployment.Combined.benchmark_disagrees), worded against the verdict line as `wait` words it
        disagrees = getattr(state, "benchmark_disagrees", None)
        if disagrees is not None:
            text.append("\n")
            text.append(" ⚠ BENCHMARK ", style="bold reverse yellow")
            text.append(f" {disagreement_line(disagrees, reason)}", style="yellow")
        routine = (
            state.last_control is not None
            and state.last_control.ok
            and state.last_control.action in ("launch", "restart")
        )
        if state.last_control is not None and state.last_control is not stop and not (self.compact and routine):
            text.append("\n")
            ok = state.last_control.ok
            text.append(" last action: ", style="bold")
            text.append(control_summary(state.last_control), style="green" if ok else "bold red")
        return text
