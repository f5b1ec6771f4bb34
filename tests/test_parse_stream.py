"""Streaming: bytes cut anywhere give the same events; any bytes never raise; the splitter's display lines."""

from __future__ import annotations

import random
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from tui.core.events import BarProgress, BatchStats, Event, Milestone, RankSeen
from tui.core.loglines import LineSplitter, classify_line
from tui.core.logparse import LogParser

LOGS = Path(__file__).resolve().parent / "fixtures" / "logs"
FIXTURES = sorted(LOGS.glob("*.log"))


def parse_chunks(chunks: list[bytes]) -> list[Event]:
    parser = LogParser()
    events: list[Event] = []
    for chunk in chunks:
        events += parser.feed(chunk)
    return events + parser.flush()


def cut(data: bytes, points: list[int]) -> list[bytes]:
    edges = [0, *sorted(p % (len(data) + 1) for p in points), len(data)]
    return [data[a:b] for a, b in zip(edges, edges[1:], strict=False)]


def normalized(events: list[Event]) -> list[object]:
    """Events with each run of BatchStats merged per stage (the parser coalesces a run per chunk):
    the last line's numbers and the run's total line count."""
    out: list[object] = []
    run: dict[str, tuple[BatchStats, int]] = {}
    for event in events:
        if isinstance(event, BatchStats):
            prior = run.get(event.stage)
            run[event.stage] = (event, event.count + (prior[1] if prior else 0))
            continue
        if run:
            out.append(
                {stage: (repr(last.__class__(**{**last.__dict__, "count": 0})), n) for stage, (last, n) in run.items()}
            )
            run = {}
        out.append(event)
    if run:
        out.append(
            {stage: (repr(last.__class__(**{**last.__dict__, "count": 0})), n) for stage, (last, n) in run.items()}
        )
    return out


def test_every_fixture_same_events_in_one_chunk_or_many() -> None:
    rng = random.Random(20251129)
    for path in FIXTURES:
        data = path.read_bytes()
        whole = normalized(parse_chunks([data]))
        for _ in range(6):
            points = [rng.randrange(len(data) + 1) for _ in range(rng.choice([1, 3, 17, 200]))]
            assert normalized(parse_chunks(cut(data, points))) == whole, (path.name, sorted(points))
        assert normalized(parse_chunks([data[i : i + 1] for i in range(len(data))])) == whole, path.name


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_fixture_cut_at_arbitrary_points(data: st.DataObject) -> None:
    path = data.draw(st.sampled_from(FIXTURES))
    raw = path.read_bytes()
    points = data.draw(st.lists(st.integers(0, len(raw)), max_size=40))
    assert normalized(parse_chunks(cut(raw, points))) == normalized(parse_chunks([raw]))


# Pieces that steer the parser through its states, shuffled with random bytes.
_TOKENS = [
    b"\n",
    b"\r",
    b"\x1b[32m",
    b"\xff\xfe",
    b"\xe2\x96",
    b"[2025-11-29 10:00:09",
    b"[23:59:59 TP1] ",
    b" TP0] ",
    b"[2025-11-29 10:00:09 DP1 TP3 EP3] ",
    b"0: ",
    b"sglang-1  | ",
    b"Load weight begin. avail mem=1.0 GB",
    b"Load weight end. type=LlamaForCausalLMEagle3, avail mem=2 GB, mem usage=3 GB.",
    b"Decode batch, accept len: 1.5, ",
    b"Prefill batch. #running-req: 1, ",
    b"server_args=ServerArgs(tp_size=8, speculative_algorithm=None)",
    b"server_args={'tp_size': 99999999999999999999}",
    b"Traceback (most recent call last):",
    b'  File "x", line 1',
    b"RuntimeError: CUDA out of memory",
    b"Capturing batches (bs=9 avail_mem=1.5 GB):  50%|##| 1/2 [00:01<00:01, 1.0it/s]",
    b"  0%|   | 0/3 [00:00<?, ?it/s]",
    b"Loading safetensors checkpoint shards:  50% Completed | 1/2 [00:01<00:01,  1.00s/it]",
    b"\rLoading safetensors checkpoint shards: 100% Completed | 2/2 [00:02<00:00,  1.0s/it]   ",
    b"INFO:     Started server process [12]",
    b'INFO:     1.2.3.4:5 - "GET /model_info HTTP/1.1" 200 OK',
    b"The server is fired up and ready to roll!",
    b"Capture cuda graph begin.",
    b"[rank7]:[E1129 x] NCCL error",
    b"#tokens: " + b"9" * 5000,
    b"Capture target decode CUDA graph end. bs=[1, 2, x], elapsed=1 s",
]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.one_of(st.sampled_from(_TOKENS), st.binary(max_size=12)), max_size=60),
    st.lists(st.integers(0, 10_000), max_size=12),
)
def test_any_bytes_never_raise_and_chunking_does_not_matter(parts: list[bytes], points: list[int]) -> None:
    raw = b"".join(parts)
    whole = parse_chunks([raw])
    assert normalized(parse_chunks(cut(raw, points))) == normalized(whole)
    splitter = LineSplitter()
    lines = [line for chunk in cut(raw, points) for line in splitter.feed(chunk)] + splitter.flush()
    one = LineSplitter()
    assert lines == one.feed(raw) + one.flush()
    for line in lines:
        classify_line(line)


def test_open_bar_frames_reach_the_parser_before_the_line_ends() -> None:
    """0.5.14+ bars end their line only at close: progress must be seen frame by frame while loading."""
    parser = LogParser()
    first = parser.feed(b"\rMulti-thread loading shards:   0% Completed | 0/4 [00:00<?, ?it/s]\rMulti-thread load")
    assert [(b.done, b.total) for b in first if isinstance(b, BarProgress)] == [(0, 4)]
    second = parser.feed(b"ing shards:  25% Completed | 1/4 [00:02<00:06,  2.00s/it]\rMulti")
    assert [(b.done, b.elapsed_s, b.remaining_s) for b in second if isinstance(b, BarProgress)] == [(1, 2.0, 6.0)]


def test_a_partial_last_line_is_parsed_at_flush() -> None:
    parser = LogParser()
    assert parser.feed(b"[2025-11-29 10:00:00 TP0] Load weight begin. avail mem=9.50 GB") == []
    rank, event = parser.flush()
    assert isinstance(rank, RankSeen) and rank.rank == "TP0"
    assert isinstance(event, Milestone) and event.kind == "load_begin" and event.get("avail_mem_gb") == 9.5


def test_serving_runs_are_coalesced_with_counts() -> None:
    lines = b"".join(
        b"[2025-11-29 10:00:%02d TP0] Decode batch, #running-req: 2, #token: 9, token usage: 0.10, "
        b"cuda graph: True, gen throughput (token/s): %d.00, #queue-req: 0\n"
        % (i % 60, i)
        + b'[2025-11-29 10:00:00] INFO:     1.2.3.4:5 - "POST /generate HTTP/1.1" 200 OK\n'
        for i in range(500)
    )
    parser = LogParser()
    evs = parser.feed(lines) + parser.flush()
    stats = [e for e in evs if isinstance(e, BatchStats)]
    # the first access line says HTTP is up (with no launch in view): the one event that splits the run
    assert [e.kind for e in evs if isinstance(e, Milestone)] == ["http_access"]
    assert [s.count for s in stats] == [1, 499] and stats[-1].gen_throughput == 499.0


# -------------------------------------------------------------------------------------------------- splitter


def test_display_collapses_cr_frames_and_splits_glued_lines() -> None:
    splitter = LineSplitter()
    data = (
        b"\x1b[32mINFO\x1b[0m:     ok\n"
        b"\r  0%|          | 0/13 [00:00<?, ?it/s][2025-03-08 12:29:21 TP1] Capture cuda graph begin.\n"
        b"\rA: 50% Completed | 1/2 [00:01<00:01, 1.00s/it]\rA: 100% Completed | 2/2 [00:02<00:00, 1.00s/it]\n"
        b"bad \xff byte\r\n"
        b"\n"
    )
    assert splitter.feed(data[:50]) == ["INFO:     ok"]
    assert splitter.feed(data[50:]) == [
        "  0%|          | 0/13 [00:00<?, ?it/s]",
        "[2025-03-08 12:29:21 TP1] Capture cuda graph begin.",
        "A: 100% Completed | 2/2 [00:02<00:00, 1.00s/it]",
        "bad \ufffd byte",
        "",
    ]


def test_display_current_frame_of_open_line() -> None:
    splitter = LineSplitter()
    assert (
        splitter.feed(b"\rX:  0% Completed | 0/2 [00:00<?, ?it/s]\rX:  50% Completed | 1/2 [00:01<00:01, 1.0s/it]\r")
        == []
    )
    assert splitter.current == "X:  50% Completed | 1/2 [00:01<00:01, 1.0s/it]"
    assert splitter.flush() == ["X:  50% Completed | 1/2 [00:01<00:01, 1.0s/it]"]
    assert splitter.flush() == []


def test_classify_line() -> None:
    assert (
        classify_line("Loading safetensors checkpoint shards:  40% Completed | 12/30 [00:37<00:55,  3.10s/it]")
        == "progress"
    )
    assert (
        classify_line("Capturing batches (bs=48 avail_mem=25.71 GB):   4%|▍         | 1/23 [00:00<00:16,  1.33it/s]")
        == "progress"
    )
    assert classify_line("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.96 GiB.") == "error"
    assert (
        classify_line("[2025-11-29 10:01:02 TP5] Scheduler hit an exception: Traceback (most recent call last):")
        == "error"
    )
    assert (
        classify_line("0: [2025-11-29 10:02:26] ERROR:    [Errno 98] error while attempting to bind on address")
        == "error"
    )
    assert classify_line("[2025-11-29 10:00:00 TP0] The following error message 'x' can be ignored.") == "warning"
    assert classify_line("WARNING:sglang.srt.server_args:Overlap scheduler is disabled") == "warning"
    assert classify_line("[2025-11-29 10:00:12 DP1 TP3 EP3] Load weight begin. avail mem=138.05 GB") == "milestone"
    assert classify_line("sglang-1  | [2025-11-29 10:02:29] The server is fired up and ready to roll!") == "milestone"
    assert classify_line("[2025-11-29 10:00:11 TP0] sglang is using nccl==2.27.3") is None


def test_a_stream_without_newlines_is_cut_into_bounded_lines_the_same_way_for_any_chunking() -> None:
    from tui.core.loglines import MAX_PENDING

    raw = b"x" * (MAX_PENDING * 2 + 10) + b"\rtail\n" + b"y" * (MAX_PENDING + 5)
    one = LineSplitter()
    whole = one.feed(raw) + one.flush()
    assert [len(line) for line in whole] == [MAX_PENDING, MAX_PENDING, 4, MAX_PENDING, 5]
    assert whole[2] == "tail"  # the 10 bytes before "\r" were a frame replaced by "tail"
    for size in (4096, 300_000, MAX_PENDING - 1):
        splitter = LineSplitter()
        lines = [line for i in range(0, len(raw), size) for line in splitter.feed(raw[i : i + size])]
        assert lines + splitter.flush() == whole, size
        assert len(splitter._pending) < MAX_PENDING
    parser = LogParser()
    assert parser.feed(raw) + parser.flush() == []


def test_a_line_glued_after_a_space_padded_bar_frame_is_still_parsed() -> None:
    # tqdm pads a frame to its width; another rank's line written right after it must not be lost.
    frame = b"\rCapturing batches (bs=96 avail_mem=20.10 GB):  71%|xx  | 30/42 [00:16<00:06,  1.85it/s]"
    line = (
        b"[2026-11-29 15:39:44 TP7] Load weight end. elapsed=1.96 s, type=LlamaForCausalLM, "
        b"avail mem=120.89 GB, mem usage=0.60 GB.\n"
    )
    for pad in (b"", b" ", b"    "):
        parser = LogParser()
        events = parser.feed(frame + pad + line) + parser.flush()
        kinds = [e.kind for e in events if isinstance(e, Milestone)]
        assert kinds == ["load_end"], (pad, events)
        assert [e.done for e in events if isinstance(e, BarProgress)] == [30]


def test_the_last_tqdm_frame_counts_without_its_terminator() -> None:
    """tqdm writes "\\r" before each frame: the newest frame has no terminator until the next one comes. It counts
    now (the log says 24/64: so does the state, not 23/64), and not again when its terminator comes."""

    def frame(done: int, pad: str = "") -> str:
        return f"\rLoading safetensors checkpoint shards:  {100 * done // 64:2d}% Completed | {done}/64 [00:{done:02d}<00:40,  1.32s/it]{pad}"

    parser = LogParser()
    bars = [e for e in parser.feed((frame(22) + frame(23) + frame(24)).encode()) if isinstance(e, BarProgress)]
    assert [b.done for b in bars] == [22, 23, 24]
    assert not [e for e in parser.feed(b"   ") if isinstance(e, BarProgress)]  # tqdm's padding: the same frame
    half = frame(25).encode()
    assert not [e for e in parser.feed(half[:40]) if isinstance(e, BarProgress)]  # half a frame is no frame
    assert [e.done for e in parser.feed(half[40:]) if isinstance(e, BarProgress)] == [25]
    assert not [e for e in parser.feed(b"\n") + parser.flush() if isinstance(e, BarProgress)]


def test_the_log_panes_live_bar_is_the_newest_frame_drawn() -> None:
    splitter = LineSplitter()
    splitter.feed(b"\rLoading shards:  34% Completed | 22/64 [00:22<00:40,  1.32s/it]")
    assert splitter.current is not None and "22/64" in splitter.current
    splitter.feed(b"\rLoading shards:  35% Completed | 23/64 [00:23<00:40,  1.32s/it]\rLoading sh")
    assert "23/64" in splitter.current
