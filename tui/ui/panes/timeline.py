"""Timeline: each startup phase with its duration; the current one ticks and shows an ETA when one is known."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text

from tui.core import fmt
from tui.core.eta import estimate
from tui.core.fmt import clock_of, duration
from tui.core.state import Phase, Readiness
from tui.core.timeline import span_duration
from tui.ui.labels import PHASE_NAMES, draft_label, failed_phase, stopped_by_tool
from tui.ui.panes.base import StatePane
from tui.ui.widgetargs import WidgetArgs

if TYPE_CHECKING:
    from typing_extensions import Unpack  # typing's own from 3.11

STARTUP: tuple[Phase, ...] = (
    Phase.STARTING,
    Phase.INIT,
    Phase.LOADING_WEIGHTS,
    Phase.KV_CACHE,
    Phase.CUDA_GRAPH,
    Phase.WARMUP,
    Phase.READY,
)


def _clock(at: str | None) -> str:
    return f"{clock_of(at):<8}"


def _eta(state: Readiness, phase: Phase, now: float) -> float | None:
    """The current phase's time left (honest: withdrawn when progress stopped; from history when there is one)."""
    if phase is not state.phase:
        return None
    return estimate(state, now).phase_left_s


def _usual(state: Readiness, phase: Phase) -> float | None:
    """The phase's median over the earlier launches of this key (shown for phases not reached yet)."""
    return state.past.median(phase.value) if state.past is not None else None


class TimelinePane(StatePane):
    """One row per phase: ✓ done, ▶ current (ticking), · not reached."""

    DEFAULT_CSS = """
    TimelinePane { width: 50; height: auto; border: round $panel; border-title-color: $text-muted; padding: 0 1; }
    """

    def __init__(self, **kwargs: Unpack[WidgetArgs]) -> None:
        super().__init__(**kwargs)
        self.border_title = "timeline"

    def select(self, state: Readiness) -> object:
        return (
            state.phase,
            state.timeline,
            state.shards,
            state.capture,
            state.stall,
            state.past,
            state.weights_mem,
            state.error,
        )

    def draw(self, state: Readiness, now: float) -> Text:
        text = Text(no_wrap=True, overflow="ellipsis")
        main = [s for s in state.timeline if s.model == "main"]
        draft = [s for s in state.timeline if s.model != "main"]
        phases = list(STARTUP)
        if state.phase is Phase.SERVING or any(s.phase is Phase.SERVING for s in main):
            phases.append(Phase.SERVING)
        if state.phase is Phase.FAILED:
            phases.append(Phase.FAILED)
        stopped = stopped_by_tool(state) is not None
        broken = failed_phase(state)  # ✗ (red) where it failed, ■ (yellow) where we stopped it: never a ✓
        first = True
        for phase in phases:
            spans = [s for s in main if s.phase is phase]
            if not first:
                text.append("\n")
            first = False
            name = PHASE_NAMES[phase]
            if phase is Phase.FAILED and stopped:
                name = "stopped (by sglang-tui)"
            if phase is state.phase and not (spans and spans[-1].ended_at is not None):
                current = spans[-1] if spans else None
                style = (
                    ("bold yellow" if stopped else "bold red")
                    if phase is Phase.FAILED
                    else ("bold yellow" if state.stall else "bold")
                )
                text.append(
                    "■ " if phase is Phase.FAILED and stopped else ("✗ " if phase is Phase.FAILED else "▶ "),
                    style=style,
                )
                text.append(f"{_clock(current.start if current else state.phase_since_log)} ", style="dim")
                text.append(f"{name:<19}", style=style)
                if phase not in (Phase.READY, Phase.SERVING, Phase.FAILED):
                    since = current.started_at if current else (state.phase_since or state.first_seen_at or now)
                    text.append(f"{duration(now - since):>7}", style=style)
                    eta = _eta(state, phase, now)
                    if eta is not None and state.stall is None:
                        text.append(f" {fmt.eta(eta)}", style="cyan")
            elif spans:
                seconds = sum(span_duration(s, now) or 0.0 for s in spans)
                if phase is broken:
                    mark, style = ("■ ", "bold yellow") if stopped else ("✗ ", "bold red")
                else:
                    mark, style = "✓ ", "green"
                text.append(mark, style=style)
                text.append(f"{_clock(spans[0].start)} ", style="dim")
                text.append(f"{name:<19}{duration(seconds):>7}", style="" if phase is not broken else style)
            else:
                text.append("·          ", style="dim")
                usual = _usual(state, phase)
                text.append(f"{name:<19}{'~' + duration(usual):>7}" if usual is not None else name, style="dim")
            for span in (s for s in draft if s.phase is phase):
                text.append("\n")
                text.append(f"  {'':<9}{draft_label(span):<19}{duration(span_duration(span, now)):>7}", style="dim")
        return text
