"""Shards: main and draft weight bars (57/64, rate, ETA), CUDA graph capture batches, per-rank milestones."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from rich.text import Text

from tui.core.capture import current_capture
from tui.core.eta import bar_left, pace
from tui.core.fmt import duration, eta, rate
from tui.core.state import BarState, Phase, RankState, Readiness
from tui.ui.labels import MILESTONE_SHORT, stopped_by_tool
from tui.ui.panes.base import StatePane
from tui.ui.text import bar
from tui.ui.widgetargs import WidgetArgs

if TYPE_CHECKING:
    from typing_extensions import Unpack  # typing's own from 3.11

_NUMBERED = re.compile(r"^(.*?)(\d+)$")
FAILED_WORD = "failed"  # the rank whose line says why the launch failed (ErrorInfo.rank)


def _rank_word(kind: str) -> str:
    draft = kind.startswith("draft ")
    word = MILESTONE_SHORT.get(kind.removeprefix("draft "), kind or "—")
    return f"d:{word}" if draft else word


def rank_word(rank: RankState, state: Readiness | None = None) -> str:
    """A rank's word: its last milestone ("graph…"); once the launch failed, "failed" for the rank that failed
    and, for the others, where they stopped without the "…" of work going on (nothing runs any more)."""
    word = _rank_word(rank.last_milestone or "")
    if state is None or state.phase is not Phase.FAILED:
        return word
    if state.error is not None and state.error.rank == rank.name:
        return FAILED_WORD
    return word.removesuffix("…")


def _word_style(word: str, state: Readiness | None = None) -> str:
    if word == FAILED_WORD:
        return "bold red"
    if state is not None and state.phase is Phase.FAILED:
        return "dim"
    return (
        "green"
        if word.endswith("✓") or word in ("ready", "http", "up")
        else ("yellow" if "!" in word or "slow" in word else "")
    )


def free_words(gb: float | None) -> str:
    """Free GPU memory as a rank's line says it (`avail mem=138.05 GB`), labelled so that no one reads it as
    the memory used next to the GPU pane's figures."""
    if gb is None:
        return "—"
    return f"{gb:.1f}G free" if gb < 10 else f"{gb:.0f}G free"  # whole GiB from 10 up: three ranks a row at 120


def rank_groups(ranks: tuple[RankState, ...], state: Readiness | None = None) -> list[tuple[str, str]]:
    """Neighbouring ranks at the same milestone, as ("TP0–5", "load✓"): every rank named in a few words."""
    groups: list[tuple[str, int | None, int | None, str]] = []  # (prefix, first, last, word); numbers None: a name
    for rank in ranks:
        word = rank_word(rank, state)
        m = _NUMBERED.match(rank.name)
        prefix, n = (m.group(1), int(m.group(2))) if m else (rank.name, None)
        if groups and n is not None:
            p, first, last, w = groups[-1]
            if p == prefix and w == word and last is not None and n == last + 1:
                groups[-1] = (p, first, n, w)
                continue
        groups.append((prefix, n, n, word))
    out = []
    for prefix, first, last, word in groups:
        if first is None:
            name = prefix
        elif first == last:
            name = f"{prefix}{first}"
        else:
            name = f"{prefix}{first}–{last}"
        out.append((name, word))
    return out


def compact_ranks(text: Text, ranks: tuple[RankState, ...], width: int, state: Readiness | None = None) -> None:
    """One line naming every rank by group ("ranks TP0–5 load✓  TP6–7 load…"), or "+N" for what does not fit."""
    text.append(f"{'ranks':<8}", style="bold")
    groups = rank_groups(ranks, state)
    used = 8
    for i, (name, word) in enumerate(groups):
        piece = f"{name} {word}  "
        rest = len(groups) - i
        if used + len(piece) > width - (0 if rest == 1 else 8):
            text.append(f"+{rest} more (2)", style="bold yellow")
            return
        text.append(f"{name} ", style="bold")
        text.append(f"{word}  ", style=_word_style(word, state))
        used += len(piece)


def rank_grid(text: Text, state: Readiness, width: int) -> None:
    """One cell per rank ("TP3 graph… 17G free"), as many a row as fit, the columns as wide as their words."""
    cells = [(r.name, rank_word(r, state), free_words(r.avail_mem_gb)) for r in state.ranks]
    name_w, word_w, mem_w = (max(len(cell[i]) for cell in cells) for i in range(3))
    per_row = max(1, (width + 2) // (name_w + word_w + mem_w + 4))
    for i, (name, word, free) in enumerate(cells):
        text.append("\n" if i % per_row == 0 else "  ")
        text.append(f"{name:>{name_w}} ", style="bold")
        text.append(f"{word:<{word_w}} ", style=_word_style(word, state))
        text.append(f"{free:>{mem_w}}", style="dim")


def _bar_line(
    text: Text,
    label: str,
    state: BarState | None,
    unit: str,
    width: int,
    extra: str = "",
    halted: str | None = None,
    now: float | None = None,
    whole: Readiness | None = None,
) -> None:
    text.append(f"{label:<8}", style="bold")
    if state is None:
        text.append(bar(None, width), style="dim")
        text.append("  waiting", style="dim")
        return
    fraction = state.done / state.total if state.total else None
    complete = state.total > 0 and state.done >= state.total
    drawn = bar(fraction, width)
    filled = drawn.rstrip("░")
    text.append(filled, style="green" if complete else "cyan")
    text.append(drawn[len(filled) :], style="dim")
    text.append(f" {state.done:>3}/{state.total:<3}", style="bold")
    if complete:
        text.append("  done", style="green")
    elif halted:  # a rate and an ETA would promise progress that is not coming
        text.append(f"  {halted}", style="bold red" if halted == "failed" else "bold yellow")
    else:
        if now is None:
            left, silent = state.eta_s, None
        else:  # the one ETA rule (the header's "ready in" rests on the same figure)
            left, silent = pace(whole, state, now) if whole is not None else bar_left(state, now)
        if silent is not None:  # withdrawn: a frozen small ETA would lie (issue 9)
            text.append(f"  no progress for {duration(silent)}", style="yellow")
        else:
            text.append(f"  {rate(state.rate_per_s, unit)}")
            text.append(f"  {eta(left)}", style="cyan")
    if extra:
        text.append(extra, style="dim")


class ShardsPane(StatePane, can_focus=True):
    """Progress of what the startup is doing right now."""

    DEFAULT_CSS = """
    ShardsPane { width: 1fr; height: auto; min-height: 6; border: round $panel; border-title-color: $text-muted; padding: 0 1; }
    """

    @property
    def uses_clock(self) -> bool:  # type: ignore[override]
        """Ticks redraw the pane only while a bar moves: its ETA decays with the clock, and is withdrawn."""
        return self.state.phase in (Phase.LOADING_WEIGHTS, Phase.CUDA_GRAPH)

    def __init__(self, **kwargs: Unpack[WidgetArgs]) -> None:
        super().__init__(**kwargs)
        self.border_title = "weights · cuda graphs · ranks"
        self.compact = False
        """Ranks on one grouped line (short terminals), instead of one cell per rank."""

    def select(self, state: Readiness) -> object:
        return (
            state.shards,
            state.draft_shards,
            current_capture(state),
            state.ranks,
            state.server.speculative,
            state.stall is not None,
            state.phase is Phase.FAILED,
            state.error,
            stopped_by_tool(state) is not None,
            self.compact,
        )

    def draw(self, state: Readiness, now: float) -> Text:
        pane_width = self.content_size.width or 80
        width = max(8, min(40, pane_width - 46))
        text = Text(no_wrap=True, overflow="ellipsis")
        halted = "failed" if state.phase is Phase.FAILED else ("stalled" if state.stall is not None else None)
        if halted == "failed" and stopped_by_tool(state) is not None:
            halted = "stopped"
        _bar_line(text, "weights", state.shards, "shards", width, halted=halted, now=now, whole=state)
        if state.draft_shards is not None or state.server.speculative:
            text.append("\n")
            _bar_line(text, "draft", state.draft_shards, "shards", width, halted=halted, now=now)
        text.append("\n")
        which, capture = current_capture(state)  # the count the header's reason gives too
        extra = ""
        if which == "piecewise":
            extra += "  piecewise" + (
                " (compiling)" if capture is not None and capture.label.startswith("Compiling") else ""
            )
        if capture is not None:
            if capture.bs is not None and which == "capture":
                extra += f"  bs={capture.bs}"
            if capture.avail_mem_gb is not None:
                extra += f"  {capture.avail_mem_gb:.1f}G free"
        line_start = len(text.plain)
        unit = "sizes" if which == "piecewise" else "batches"
        _bar_line(text, "graphs", capture, unit, width, halted=halted, now=now, whole=state)
        if extra:  # what is captured and the free memory: on the bar's line when they fit, else under it
            fits = len(text.plain) - line_start + len(extra) <= pane_width
            text.append(extra if fits else "\n" + " " * 8 + extra.strip(), style="dim")
        if state.ranks and self.compact:
            text.append("\n")
            compact_ranks(text, state.ranks, pane_width, state)
        elif state.ranks:
            rank_grid(text, state, pane_width)
        else:
            text.append("\nranks   none seen yet", style="dim")
        return text
