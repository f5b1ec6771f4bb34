"""The parser side of ../shared/real-logs/expected.json: real SGLang log excerpts from public threads.

The logs are read in place (never copied here). What the parser must give: the main weight bar's max done/total,
tp_size (server_args, else inferable from the ranks seen), speculative (server_args, else a hint), the line that
says why it failed, the last decode line's numbers, and enough milestones/bars to derive the last phase.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from tui.core.events import BarProgress, BatchStats, Event, Failure, Milestone, RankSeen, ServerArgs, SpeculativeHint
from tui.core.logparse import LogParser
from tui.core.readiness import BAR_PHASE, PER_RANK_KINDS, infer_tp_size, untagged_scheduler_line
from tui.core.readiness import MILESTONE_PHASE as REDUCER_PHASES

PHASES = ["starting", "init", "loading_weights", "kv_cache", "cuda_graph", "warmup", "ready", "serving"]
MILESTONE_PHASE = {
    "init_begin": "init", "init_end": "init", "mem_baseline": "init", "load_begin": "loading_weights",
    "load_end": "loading_weights", "kv_alloc": "kv_cache", "mem_pool_end": "kv_cache", "graph_begin": "cuda_graph",
    "graph_end": "cuda_graph", "max_tokens": "warmup", "uvicorn_started": "warmup", "uvicorn_running": "warmup",
    "app_startup_complete": "warmup", "warmup_request": "warmup", "fired_up": "ready",
}  # fmt: skip
MILESTONE_PHASE.update({k: v.value for k, v in REDUCER_PHASES.items() if k not in MILESTONE_PHASE})  # 0.5.23 kinds


def cases(real_logs_dir: Path | None) -> list[dict]:
    if real_logs_dir is None:
        pytest.skip("../shared/real-logs is not present")
    return json.loads((real_logs_dir / "expected.json").read_text())


def parse(data: bytes, chunks: int = 1, seed: int = 0) -> list[Event]:
    rng = random.Random(seed)
    points = sorted(rng.randrange(len(data) + 1) for _ in range(chunks - 1))
    parser = LogParser()
    events: list[Event] = []
    for a, b in zip([0, *points], [*points, len(data)], strict=True):
        events += parser.feed(data[a:b])
    return events + parser.flush()


def derived(events: list[Event]) -> dict:
    """What a reducer reads off these events, in the vocabulary of `replay --json` (a test oracle)."""
    weights = [e for e in events if isinstance(e, BarProgress) and e.bar == "weights"]
    args = [e for e in events if isinstance(e, ServerArgs)]
    tp_size = args[-1].tp_size if args else None
    if tp_size is None:
        seen = tuple(sorted({e.tp_rank for e in events if isinstance(e, RankSeen) and e.tp_rank is not None}))
        tp_size = infer_tp_size(seen)[0] if seen and max(seen) > 0 else None  # TP0 alone: TP>1, size unknown
        if seen == (0,) and any(isinstance(e, Milestone) and e.kind in PER_RANK_KINDS and e.rank and "TP0" in e.rank
                                and not e.draft for e in events):  # fmt: skip
            tp_size = 1  # every rank prints these lines: TP0's alone means TP=1
        elif not seen and any(isinstance(e, Milestone) and e.kind in PER_RANK_KINDS and e.rank is None and not e.draft
                              and untagged_scheduler_line(e) for e in events):  # fmt: skip
            tp_size = 1  # SGLang prints the TP token only when TP > 1
    speculative = args[-1].speculative if args else None
    if speculative is None:
        hints = [e for e in events if isinstance(e, SpeculativeHint)]
        if hints:
            speculative = max(hints, key=lambda h: h.algorithm is not None).algorithm or "unknown"
    failures = [e for e in events if isinstance(e, Failure)]
    roots = [f for f in failures if f.root_cause]
    error = next((f for f in roots if f.kind not in ("exception", "other")), roots[0] if roots else None)
    # among markers, a scheduler's exception outranks a generic "other" (sigquit) printed before it
    error = error or next((f for f in failures if f.kind != "other"), failures[0] if failures else None)
    decodes = [e for e in events if isinstance(e, BatchStats) and e.stage == "decode"]
    phase = "starting"
    prefills = 0
    for e in events:
        step = None
        if isinstance(e, Milestone):
            step = MILESTONE_PHASE.get(e.kind)
        elif isinstance(e, BarProgress):
            if e.bar in BAR_PHASE:
                step = BAR_PHASE[e.bar].value if BAR_PHASE[e.bar] is not None else None
            else:
                step = "cuda_graph" if e.bar == "capture" else "loading_weights"
        elif isinstance(e, BatchStats) and e.stage == "decode":
            step = "serving"
        elif isinstance(e, BatchStats) and e.stage == "prefill" and phase in ("starting", "ready"):
            prefills += e.count  # requests being served (health checks' prefills never reach here); one alone
            busy = (e.running_req or 0) > 0 or (e.queue_req or 0) > 0 or (e.token_usage or 0.0) > 0.0
            if phase == "ready" or busy or prefills >= 2:  # with no startup in view may be the warmup's
                step = "serving"
        if step and PHASES.index(step) > PHASES.index(phase):
            phase = step
    return {
        "phase": "failed" if failures else phase,
        "shards": {"done": max(b.done for b in weights), "total": weights[-1].total} if weights else None,
        "tp_size": tp_size,
        "speculative": speculative,
        "error_kind": error.kind if error else None,
        "error_line": error.line if error else None,
        "accept_len": decodes[-1].accept_len if decodes else None,
        "gen_throughput": decodes[-1].gen_throughput if decodes else None,
    }


def test_real_logs_match_expected(real_logs_dir: Path | None) -> None:
    for case in cases(real_logs_dir):
        expect = case["expect"]
        got = derived(parse((real_logs_dir / case["file"]).read_bytes()))
        for key in ("phase", "shards", "tp_size", "speculative", "error_kind", "accept_len", "gen_throughput"):
            assert got[key] == expect[key], (case["file"], key, got[key])
        if expect["error_line"] is None:
            assert got["error_line"] is None, case["file"]
        else:  # the printed line holds the quote (it may carry the envelope, or be cut), or one of the alternatives
            wanted = [expect["error_line"], *expect.get("error_line_alternatives", [])]
            assert any(w in got["error_line"] for w in wanted), (case["file"], got["error_line"])


def test_real_logs_same_result_in_random_chunks(real_logs_dir: Path | None) -> None:
    for case in cases(real_logs_dir):
        data = (real_logs_dir / case["file"]).read_bytes()
        whole = derived(parse(data))
        for seed in range(5):
            assert derived(parse(data, chunks=1 + seed * 7, seed=seed)) == whole, (case["file"], seed)


def test_real_logs_ready_without_cuda_graph_and_capture_only_phase(real_logs_dir: Path | None) -> None:
    """017 reaches ready with CUDA graphs disabled; 016 (--log-level warning) shows only bars."""
    by_file = {c["file"][:3]: c["file"] for c in cases(real_logs_dir)}
    ev = parse((real_logs_dir / by_file["017"]).read_bytes())
    kinds = [e.kind for e in ev if isinstance(e, Milestone)]
    assert "fired_up" in kinds and "graph_begin" not in kinds
    assert [e.bar for e in ev if isinstance(e, BarProgress) and e.bar != "weights"] == ["draft_weights"] * 2
    ev = parse((real_logs_dir / by_file["016"]).read_bytes())
    # no INFO phase line; the [Gloo] connection lines (printed whatever the log level) are distributed init
    assert {e.kind for e in ev if isinstance(e, Milestone)} <= {"dist_init"}
    bars = [e for e in ev if isinstance(e, BarProgress)]
    assert bars[-1].bar == "capture" and bars[-1].done == bars[-1].total == 4
    assert {b.bar for b in bars} == {"weights", "capture", "draft_weights"}


def test_second_set_same_result_in_random_chunks(real_logs_2_dir: Path | None) -> None:
    """../shared/real-logs-2: the parser's events do not depend on where the chunks are cut."""
    if real_logs_2_dir is None:
        pytest.skip("../shared/real-logs-2 is not present")
    for case in json.loads((real_logs_2_dir / "expected.json").read_text()):
        data = (real_logs_2_dir / case["file"]).read_bytes()
        whole = derived(parse(data))
        for seed in range(3):
            assert derived(parse(data, chunks=1 + seed * 7, seed=seed)) == whole, (case["file"], seed)
