"""The TUI for a whole deployment (`sglang-tui HOST0 HOST1 …`, `--deployment FILE`): the single-server app,
fed the deployment's combined state (core/deployment.combined), plus a members pane.

Each member's batches fold into that member's own state through the `fold` the command layer hands in
(the same MemberFolder `wait` uses); the panes then show the combined state: the header the one verdict,
the GPU pane every node's GPUs grouped by node with global indexes, the log pane every member's lines,
each prefixed with the member's name. Watch only: the keys that signal a server are off (use `stop`).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass
from typing import Any

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.message import Message
from textual.widgets import Static

from tui.core import deployment as dm
from tui.core import fmt
from tui.core.events import ConnectionState, Event
from tui.core.loglines import LineSplitter
from tui.core.state import Phase
from tui.core.timeline import span_duration
from tui.core.wording import member_words
from tui.ui.app import ServerScreen, ServerView, SglangTui, UiSources, split_log_events
from tui.ui.labels import PHASE_NAMES, PHASE_STYLES
from tui.ui.panes.gpus import GpuPane
from tui.ui.panes.log_view import LogLine
from tui.ui.text import safe_text

Fold = Callable[[dm.Deployment, str, list[Any], float], dm.Deployment]


@dataclass
class MemberEventsReceived(Message):
    """One member's batch (reducer events, and other facts such as the router's) and its log lines."""

    name: str
    items: tuple[Any, ...]
    lines: tuple[LogLine, ...] = ()
    live: str | None = None


SHORT = {"starting": "start", "init": "init", "loading_weights": "weights", "kv_cache": "kv", "cuda_graph": "graphs",
         "warmup": "warmup", "ready": "ready", "serving": "serving", "failed": "failed"}  # fmt: skip


def member_timeline(m: dm.Member, now: float, up_at: float | None = None) -> str:
    """A member's own timeline in one line: each main-model phase and how long it took (the open one so far).
    up_at: when the deployment came up, for a member whose own log ends before (a non-zero node prints no
    "fired up"): its open phase ended then, and is not ticking on."""
    parts = []
    for span in m.state.timeline:
        if span.model != "main":
            continue
        end = now if up_at is None else max(span.started_at, min(now, up_at))
        took = span_duration(span, end if span.ended_at is None else None)
        open_ = "+" if span.ended_at is None and up_at is None else ""
        parts.append(f"{SHORT.get(span.phase.value, span.phase.value)} {fmt.duration(took)}{open_}")
    return " · ".join(parts[-6:])


def _up_at(dep: dm.Deployment) -> float | None:
    """When the first member's own log said ready (the deployment's ready moment), None before."""
    found = [span.started_at for m in dep.members for span in m.state.timeline
             if span.model == "main" and span.phase is Phase.READY]  # fmt: skip
    return min(found) if found else None


def member_rows(dep: dm.Deployment, now: float = 0.0) -> Text:
    """The members pane's text: two lines per member (name, role, host, phase, what it is doing; its timeline)."""
    out = Text()
    width = max([10, *(len(m.name) + 1 for m in dep.members)])  # `prefill0.node1`: a worker's node 1 (srtctl)
    for i, m in enumerate(dep.members):
        phase = dm.member_phase(dep, m)
        if i:
            out.append("\n")
        out.append(f"{m.name:<{width}}", style="bold")
        out.append(f"{m.role:<8} {m.host:<16} ")
        out.append(f"{PHASE_NAMES[phase]:<20}", style=PHASE_STYLES.get(phase, ""))
        out.append(" " + member_words(dep, m), style="dim")
        up = phase in (Phase.READY, Phase.SERVING) and m.state.phase not in (Phase.READY, Phase.SERVING)
        line = member_timeline(m, now, _up_at(dep) if up else None)
        if line:
            out.append(f"\n{'':<{width}}{line}", style="dim")
    return out


class MembersPane(Static):
    DEFAULT_CSS = """
    MembersPane { height: auto; max-height: 12; border: round $panel; border-title-color: $text-muted; }
    """

    def on_mount(self) -> None:
        self.border_title = "members"


class DeploymentView(ServerView):
    """The single-server view over a deployment's combined state, with a members pane (as an app or a screen)."""

    def __init__(self, sources: UiSources, dep: dm.Deployment, member_batches: Callable[[], AsyncIterator[tuple[str, list[Any]]]],
                 fold: Fold, **kwargs: Any) -> None:  # fmt: skip
        super().__init__(sources, read_only=True, initial=dm.combined(dep), **kwargs)
        self.dep = dep
        self.member_batches = member_batches
        self.fold_member = fold
        self.prefix = len(dep.members) > 1

    def compose(self) -> ComposeResult:
        for widget in super().compose():
            if isinstance(widget, GpuPane):
                yield MembersPane(member_rows(self.dep), id="members")
            yield widget

    @work(exclusive=True, group="monitor", exit_on_error=False)
    async def _consume(self) -> None:
        splitters: dict[str, LineSplitter] = {}
        try:
            async for name, items in self.member_batches():
                splitter, lines = split_log_events(splitters.get(name, LineSplitter()), items)  # only log bytes count
                splitters[name] = splitter
                if self.prefix:
                    lines = [LogLine(f"[{name}] {line.text}", line.kind, line.rank) for line in lines]
                self.post_message(MemberEventsReceived(name, tuple(items), tuple(lines), splitter.current))
                await asyncio.sleep(0)
        except asyncio.CancelledError:
            raise
        except Exception as err:  # the app shows a dead source; it never crashes on one
            self.post_message(MemberEventsReceived(self.dep.members[0].name,
                                                   (ConnectionState("failed", f"monitor stopped: {err}"),)))  # fmt: skip

    def on_member_events_received(self, message: MemberEventsReceived) -> None:
        self.batches_seen += 1
        self._apply(lambda dep, now: self.fold_member(dep, message.name, list(message.items), now))
        self._show_lines(message.lines, message.live)

    def _fold(self, batch: Iterable[Event]) -> None:
        """Ticks and control results: every member's."""
        events = list(batch)

        def all_members(dep: dm.Deployment, now: float) -> dm.Deployment:
            for m in dep.members:
                dep = self.fold_member(dep, m.name, events, now)
            return dep

        self._apply(all_members)

    def _apply(self, change: Callable[[dm.Deployment, float], dm.Deployment]) -> None:
        now = self.clock()
        before = self._live
        try:
            self.dep = change(self.dep, now)
        except Exception as err:  # a fold bug must not freeze the screen
            self.log.error(f"deployment fold failed: {err}")
            return
        state = dm.combined(self.dep)
        self._live = state
        self._announce(before, state)
        if not self.paused:
            self._publish(state, self._shown_clock(now))
            try:
                self.query_one(MembersPane).update(safe_text(member_rows(self.dep, now)))
            except Exception:  # not mounted yet
                pass


class DeploymentTui(DeploymentView, SglangTui):
    """`sglang-tui HOST0 HOST1 …`, `--deployment FILE`, `slurm:JOBID`: the deployment's own app."""


class DeploymentScreen(DeploymentView, ServerScreen):
    """A deployment (a Slurm job's nodes) as a screen of the fleet board; escape goes back."""
