"""A Markdown report of what the screen shows (verdict, root cause, timeline, host facts), for a bug report."""

from __future__ import annotations

from tui.core.explain import evidence as evidence_of
from tui.core.fmt import GIB, clock_of, duration
from tui.core.ranklabels import tp_floor
from tui.core.remedy import remedy
from tui.core.state import Readiness
from tui.core.timeline import span_duration
from tui.core.wording import verdict_line
from tui.ui.labels import draft_label, error_badge, kind_words, phase_label, phase_words


def markdown_report(state: Readiness, now: float, host: str) -> str:
    evidence = evidence_of(state, now)
    server = state.server
    lines = [f"## sglang-tui: {host}", "", f"**{phase_label(state)}**: {verdict_line(state, now)}", ""]
    facts = [
        ("model", server.model),
        ("tp", server.tp_size or tp_floor(state.tp_ranks_seen)),
        ("speculative", server.speculative),
        ("port", server.port),
        ("link", state.connection),
        ("process", None if state.process_alive is None else ("alive" if state.process_alive else "gone")),
    ]
    lines += [f"- {name}: {value}" for name, value in facts if value]
    if state.error is not None:
        badge, rank = error_badge(state.error)[0].strip(), state.error.rank
        lines += [
            "",
            f"### Root cause: {badge} ({kind_words(state.error.kind)})" + (f" on {rank}" if rank else ""),
            "",
            "```",
            state.error.line.strip(),
            "```",
        ]
        found = remedy(state)
        if found is not None:
            source = (
                "SGLang's own suggestion, in the log" if found.source == "log" else "sglang-tui's table of known causes"
            )
            lines += ["", f"### Remedy ({source}: {found.ref})", "", found.text]
            lines += [
                f"- `{c.flag} {c.value}`" + (f" (was {c.was})" if c.was is not None else "") for c in found.changes
            ]
            if found.command:
                lines += ["", "```", found.command, "```"]
    if state.timeline:
        lines += ["", "### Timeline", "", "| phase | log time | took |", "|---|---|---|"]
        for span in state.timeline:
            name = phase_words(span.phase) if span.model == "main" else draft_label(span)
            took = span_duration(span, now)
            lines.append(f"| {name} | {clock_of(span.start) or ''} | {duration(took) if took is not None else ''} |")
    if state.gpus is not None and state.gpus.gpus:
        lines += ["", "### GPUs", "", "| gpu | used / total GiB | util |", "|---|---|---|"]
        for g in state.gpus.gpus:
            used = f"{g.used_bytes / GIB:.1f}" if g.used_bytes is not None else "N/A"
            total = f"{g.total_bytes / GIB:.1f}" if g.total_bytes is not None else "N/A"
            util = f"{g.util_pct:.0f}%" if g.util_pct is not None else "N/A"
            lines.append(f"| {g.index} | {used} / {total} | {util} |")
    if evidence:
        lines += ["", "### Evidence", ""] + [f"- {e}" for e in evidence]
    return "\n".join(lines) + "\n"
