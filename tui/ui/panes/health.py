"""Health: each endpoint probed (answer, latency, age), the last action's result, and decode figures once ready."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text

from tui.core.fmt import ago
from tui.core.state import Phase, Readiness
from tui.ui.labels import control_summary, health_is_old, source_failure
from tui.ui.panes.base import StatePane, set_titles
from tui.ui.text import sparkline
from tui.ui.widgetargs import WidgetArgs

if TYPE_CHECKING:
    from typing_extensions import Unpack  # typing's own from 3.11

_OUTCOME_STYLES = {
    "ok": "green",
    "starting": "yellow",
    "refused": "dim",
    "timeout": "red",
    "garbage": "red",
    "http_error": "red",
    "error": "red",
}
SPARK_WIDTH = 20


class HealthPane(StatePane, can_focus=True):
    """What the server answers over HTTP (only /health counts for readiness)."""

    DEFAULT_CSS = """
    HealthPane { width: 48; height: auto; min-height: 6; border: round $panel; border-title-color: $text-muted; padding: 0 1; }
    """

    def __init__(self, **kwargs: Unpack[WidgetArgs]) -> None:
        super().__init__(**kwargs)
        self.border_title = "health · decode"

    def select(self, state: Readiness) -> object:
        return (
            state.health,
            state.health_checked_at,
            state.decode,
            state.decode_history,
            state.last_control,
            state.connection,
            state.source_failures,
            state.timeline[:1],
            state.launches,
            state.phase,
            state.phase_since,
        )

    def draw(self, state: Readiness, now: float) -> Text:
        set_titles(
            self, "health · decode" + ("" if state.connection == "connected" else f" (link {state.connection}: stale)")
        )
        text = Text(no_wrap=True, overflow="ellipsis")
        checked = dict(state.health_checked_at)
        if not state.health:
            text.append("no probe answered yet", style="dim")
        for i, result in enumerate(state.health):
            if i:
                text.append("\n")
            text.append(f"{result.endpoint:<13}", style="bold" if result.endpoint == "/health" else "")
            answer = result.outcome + (f" {result.status}" if result.status is not None else "")
            at = checked.get(result.endpoint)
            ended = (
                state.phase is Phase.FAILED
                and at is not None
                and state.phase_since is not None
                and at <= state.phase_since
            )
            old = ended or health_is_old(state, result.endpoint)  # an answer from before a stop or restart: never green
            text.append(f"{answer:<12}", style="dim strike" if old else _OUTCOME_STYLES.get(result.outcome, ""))
            latency = f"{result.latency_s * 1000:.0f} ms" if result.latency_s is not None else "—"
            text.append(f"{latency:>7}")
            text.append(f"  {ago(now - at) if at is not None else ''}", style="dim")
        decode = state.decode
        if decode is not None or state.decode_history:
            history = state.decode_history
            text.append("\n")
            throughput = decode.gen_throughput if decode else None
            text.append("decode  ", style="bold")
            text.append(f"{throughput:7.1f} tok/s " if throughput is not None else "      — tok/s ")
            text.append(sparkline((h[1] for h in history), SPARK_WIDTH, lo=None), style="cyan")
            accept = decode.accept_len if decode else None
            text.append("\naccept  ", style="bold")
            text.append(f"{accept:7.2f} tokens " if accept is not None else "      — tokens ")
            text.append(sparkline((h[2] for h in history), SPARK_WIDTH, lo=None), style="magenta")
            if decode is not None and decode.running_req is not None:
                text.append(f"\nrunning {decode.running_req} req", style="dim")
                if decode.token_usage is not None:
                    text.append(f"  token usage {decode.token_usage:.2f}", style="dim")
        for source, message, at in state.source_failures:  # a crashed worker, under its own source's name
            text.append("\n")
            text.append(source_failure(source, message), style="bold red")
            text.append(f"  {ago(now - at)}", style="dim")
        if state.last_control is not None:
            text.append("\n")
            text.append(control_summary(state.last_control), style="green" if state.last_control.ok else "bold red")
        return text
