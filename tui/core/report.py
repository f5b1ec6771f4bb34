"""View-neutral reports of a `Readiness`: the `replay --json` / `wait --json` object and the text timeline."""

from __future__ import annotations

from tui.core import deployment as dm
from tui.core import fmt
from tui.core import srtlayout as srt
from tui.core.crosscheck import crosscheck_words
from tui.core.eta import estimate, slow_phases, slow_words
from tui.core.ranklabels import tp_floor
from tui.core.remedy import remedy, remedy_json
from tui.core.stall import stall_json
from tui.core.state import Phase, PhaseSpan, Readiness
from tui.core.timeline import span_duration
from tui.core.wording import member_words, verdict_line

JSON_KEYS = (
    "phase", "shards", "tp_size", "speculative", "error", "decode", "timeline", "ranks", "reason", "eta", "stall",
)  # fmt: skip


def to_json(state: Readiness, now: float | None = None) -> dict[str, object]:
    """The DESIGN.md `replay --json` object: exactly JSON_KEYS (the ETA and the quiet time at `now`, default the
    last event's time), and "members" for a deployment's combined state."""
    s = state
    at = s.updated_at if now is None else now
    report: dict[str, object] = {
        "phase": s.phase.value,
        "shards": {"done": s.shards.done, "total": s.shards.total} if s.shards is not None else None,
        "tp_size": s.server.tp_size,
        "speculative": s.server.speculative,
        "error": (
            {"kind": s.error.kind, "line": s.error.line.rstrip(), "remedy": remedy_json(s)}
            if s.error is not None
            else None
        ),
        "decode": (
            {"accept_len": s.decode.accept_len, "gen_throughput": s.decode.gen_throughput}
            if s.decode is not None
            else None
        ),
        "timeline": [_span_json(span) for span in s.timeline],
        "ranks": {
            r.name: {
                "avail_mem_gb": r.avail_mem_gb,
                "mem_usage_gb": r.mem_usage_gb,
                "last_milestone": r.last_milestone,
                "gpu_index": r.gpu_index,
                "pid": r.pid,
            }
            for r in s.ranks
        },
        "reason": verdict_line(s),  # the header's verdict line, word for word
        "eta": estimate(s, at).to_json(),
        "stall": stall_json(s, at),
    }
    if isinstance(s, dm.Combined):
        report["members"] = members_json(s.deployment)
        if s.deployment.benchmark is not None:  # an srtctl job's (issue 36)
            report["benchmark"] = benchmark_json(s)
    return report


def benchmark_json(s: dm.Combined) -> dict[str, object]:
    """An srtctl job's `"benchmark"`: what srtctl's log and benchmark.out say, and the line where that disagrees
    with the servers' own verdict (null when they agree)."""
    word = s.deployment.benchmark or srt.BenchmarkWord()
    found = s.benchmark_disagrees
    return {
        "model_ready": word.ready,
        "done": word.done,
        "generated_tokens": list(word.generated),
        "disagrees": srt.disagreement_line(found, verdict_line(s)) if found is not None else None,
    }


def _span_json(span: PhaseSpan) -> dict[str, object]:
    duration = span.duration_s if span.ended_at is not None else None
    return {
        "phase": span.phase.value,
        "start": span.start,
        "end": span.end,
        "model": span.model,
        "duration_s": round(duration, 3) if duration is not None else None,
    }


def format_timeline(state: Readiness) -> str:
    """The timeline as a text table: phase, model, start, end, duration (an open span runs to the last event)."""
    header = ("PHASE", "MODEL", "START", "END", "DURATION")
    rows = [header]
    for span in state.timeline:
        open_ = span.ended_at is None
        if open_:
            duration = span_duration(span, state.updated_at) if state.updated_at else None  # 0: no clock at all
        else:
            duration = span.duration_s
        rows.append(
            (
                ("  " if span.model == "draft" else "") + span.phase.value,
                span.model,
                span.start or "-",
                "(now)" if open_ else (span.end or "-"),
                fmt.duration(duration) + ("+" if open_ and duration is not None else ""),
            )
        )
    if len(rows) == 1:
        return "timeline: (no phase seen)"
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows)


def format_report(state: Readiness) -> str:
    """Timeline, final state and, for a failure, its cause and line."""
    s = state
    lines = [format_timeline(s), ""]
    lines.append(f"state: {s.phase.value}" + (" (stalled)" if s.stall is not None else ""))
    lines.append(f"why:   {verdict_line(s)}")
    slow = slow_phases(s)
    if slow:
        lines.append("slow:  " + ", ".join(slow_words(p, f) for p, f in slow))
    if s.startup_timings or s.startup_time:
        differ = crosscheck_words(s)
        lines.append("sglang: " + (differ if differ else "its own startup timings agree with the timeline (within 5%)"))
    facts = []
    if s.server.model:
        facts.append(f"model {s.server.model}")
    floor = tp_floor(s.tp_ranks_seen) if s.server.tp_size is None else None
    facts.append(floor if floor is not None else f"tp {s.server.tp_size if s.server.tp_size is not None else '?'}")
    if s.tp_inferred and s.server.tp_size is not None:
        facts[-1] += f" ({s.tp_inferred})"
    if s.server.speculative:
        facts.append(f"speculative {s.server.speculative}")
    if s.shards is not None:
        facts.append(f"shards {s.shards.done}/{s.shards.total}")
    if s.draft_shards is not None:
        facts.append(f"draft shards {s.draft_shards.done}/{s.draft_shards.total}")
    if s.launches:
        facts.append(f"{s.launches + 1} launches in this log (the last one is shown)")
    lines.append("facts: " + ", ".join(facts))
    if s.decode is not None:
        accept = f", accept len {s.decode.accept_len:.2f}" if s.decode.accept_len is not None else ""
        gen = f"{s.decode.gen_throughput:.2f} tok/s" if s.decode.gen_throughput is not None else "-"
        lines.append(f"decode: {gen}{accept}")
    if s.phase is Phase.FAILED:
        if s.error is not None:
            cause = "(root cause)" if s.error.root_cause else "(a failure marker: no root-cause line in the log)"
            lines.append(f"cause: {s.error.kind} {cause}")
            lines.append(f"line:  {s.error.line.rstrip()}")
            lines.extend(remedy_lines(s))
        else:
            lines.append("cause: unknown (no failure line in the log)")
    if s.ranks:
        lines.append("ranks:")
        for r in s.ranks:
            gpu = f" gpu {r.gpu_index}" if r.gpu_index is not None else ""
            lines.append(
                f"  {r.name:<8} {r.last_milestone or '-':<22} avail {fmt.gib(r.avail_mem_gb):>10}"
                f"  used {fmt.gib(r.mem_usage_gb):>10}{gpu}"
            )
    return "\n".join(lines)


def remedy_lines(state: Readiness) -> list[str]:
    """The report's remedy: what to change, where it comes from, and the launch command with it (when known)."""
    found = remedy(state)
    if found is None:
        return ["remedy: none known for this failure"] if state.phase is Phase.FAILED and state.error else []
    lines = [f"remedy: {found.text}"]
    if found.changes:
        lines.append("change: " + ", ".join(
            f"{c.flag} {c.value}" + (f" (was {c.was})" if c.was is not None else "") for c in found.changes
        ))  # fmt: skip
    lines.append(f"from:  {'SGLang, in the log' if found.source == 'log' else 'the known-causes table'} ({found.ref})")
    if found.command:
        lines.append(f"run:   {found.command}")
    return lines


def members_json(dep: dm.Deployment) -> list[dict[str, object]]:
    """The `"members"` list of `wait --json` / `replay --json` (DESIGN.md)."""
    out: list[dict[str, object]] = []
    for m in dep.members:
        s = m.state
        out.append(
            {
                "name": m.name,
                "role": m.role,
                "host": m.host,
                "phase": dm.member_phase(dep, m).value,
                "shards": {"done": s.shards.done, "total": s.shards.total} if s.shards is not None else None,
                "error": {"kind": s.error.kind, "line": s.error.line.rstrip()} if s.error is not None else None,
                "reason": member_words(dep, m),
            }
        )
    return out


def deployment_json(dep: dm.Deployment) -> dict[str, object]:
    """The report's keys for the whole deployment, plus "members"."""
    return to_json(dm.combined(dep))
