"""The facts behind the figures a screen shows (issue 21, item 4), from log text through the real parser and
reducer: which rank failed, the one capture count every view shows, one timeline span per draft capture."""

from __future__ import annotations

from pathlib import Path

from tui.commands.wait import progress_line
from tui.core.capture import current_capture
from tui.core.events import ControlResult, Event, ServerProcess
from tui.core.explain import evidence
from tui.core.logparse import LogParser
from tui.core.readiness import reduce
from tui.core.state import Phase, PhaseSpan, Readiness
from tui.core.wording import verdict_line

LOGS = Path(__file__).parent / "fixtures" / "logs"
DAY = "2026-01-10"
TP = 4


def ts(sec: float, rank: str | None = None) -> str:
    r = f" {rank}" if rank else ""
    return f"[{DAY} 10:{int(sec) // 60:02d}:{int(sec) % 60:02d}{r}]"


def every_rank(sec: float, text: str) -> str:
    return "".join(f"{ts(sec, f'TP{i}')} {text}\n" for i in range(TP))


def frames(n: int, desc: str, upto: int | None = None) -> str:
    """A tqdm bar as SGLang writes it: a bare first frame, then one frame per step with its description."""
    out = f"\r  0%|          | 0/{n} [00:00<?, ?it/s]"
    for i in range(1, (n if upto is None else upto) + 1):
        out += f"\r{desc}: {100 * i // n:3d}%|#####     | {i}/{n} [00:0{i % 10}<00:01,  2.00it/s]"
    return out + ("\n" if upto is None else "")


def replay(text: str, state: Readiness | None = None) -> Readiness:
    parser = LogParser()
    s = state or Readiness()
    now = 0.0
    events: list[Event] = [*parser.feed(text.encode()), *parser.flush()]
    for ev in events:
        t = getattr(ev, "t", None)
        now = t if t is not None else now
        s = reduce(s, ev, now)
    return s


HEAD = (
    f"{ts(0)} server_args=ServerArgs(model_path='m', tp_size={TP}, speculative_algorithm=None)\n"
    + every_rank(2, "Init torch distributed begin.")
    + every_rank(3, "Init torch distributed ends. mem usage=1.02 GB")
    + every_rank(4, "Load weight begin. avail mem=138.05 GB")
    + every_rank(
        9, "Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=121.49 GB, mem usage=16.56 GB."
    )
    + every_rank(10, "KV Cache is allocated. #tokens: 1048576, K size: 40.00 GB, V size: 40.00 GB")
    + every_rank(10, "Memory pool end. avail mem=26.05 GB")
)
CAPTURE = (
    every_rank(11, "Capture cuda graph begin. This can take up to several minutes. avail mem=25.74 GB")
    + frames(23, "Capturing batches (bs=1 avail_mem=24.10 GB)")
    + every_rank(20, "Capture cuda graph end. Time elapsed: 9.00 s. mem usage=1.64 GB. avail mem=24.10 GB.")
)
PIECEWISE_BEGIN = every_rank(21, "Capture piecewise CUDA graph begin. avail mem=24.00 GB")


# ------------------------------------------------------------------------------------------ the capture


def test_the_capture_is_the_one_that_began_last() -> None:
    during = replay(
        HEAD
        + every_rank(11, "Capture cuda graph begin. avail mem=25.74 GB")
        + frames(23, "Capturing batches (bs=8 avail_mem=24.90 GB)", upto=9)
    )
    which, bar = current_capture(during)
    assert which == "capture" and bar is not None and (bar.done, bar.total) == (9, 23)

    begun = replay(HEAD + CAPTURE + PIECEWISE_BEGIN)  # the regular bar is done; the piecewise one not drawn yet
    assert begun.capture is not None and begun.capture.done == 23 and begun.piecewise is None
    assert current_capture(begun) == ("piecewise", None)
    assert verdict_line(begun).startswith("capturing piecewise CUDA graph: 4/4 ranks began")

    compiling = replay(HEAD + CAPTURE + PIECEWISE_BEGIN + frames(12, "Compiling num tokens (num_tokens=64)", upto=3))
    which, bar = current_capture(compiling)
    assert which == "piecewise" and bar is not None and (bar.done, bar.total) == (3, 12)


def test_header_reason_evidence_and_wait_give_the_same_count() -> None:
    s = replay(
        HEAD + CAPTURE + PIECEWISE_BEGIN + frames(12, "Capturing num tokens (num_tokens=64 avail_mem=23.90 GB)", upto=5)
    )
    assert s.phase is Phase.CUDA_GRAPH
    assert verdict_line(s).startswith("capturing piecewise CUDA graph: 5/12 token sizes")
    captures = [e for e in evidence(s) if e.startswith(("log: capture", "log: piecewise"))]
    assert captures == ["log: piecewise 5/12"]  # the finished 23/23 bar is not a second count beside it
    line = progress_line(s, 30.0)
    assert "piecewise 5/12" in line and "23/23" not in line


def test_a_partial_log_with_only_a_piecewise_bar_shows_it() -> None:
    s = replay(
        f"{ts(30, 'TP0')} Memory pool end. avail mem=60.00 GB\n"
        + frames(4, "Capturing num tokens (num_tokens=64 avail_mem=59.80 GB)", upto=2)
    )
    assert s.capture_now == "piecewise" and current_capture(s)[1] is not None


# ------------------------------------------------------------------------------------------ the failed rank


def test_the_failed_rank_is_the_one_whose_traceback_states_the_cause() -> None:
    oom = (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 448.00 MiB. GPU 3 has a total capacity of "
        "139.72 GiB of which 1.06 GiB is free."
    )
    text = (
        HEAD
        + every_rank(11, "Capture cuda graph begin. This can take up to several minutes. avail mem=25.74 GB")
        + f"{ts(14, 'TP3')} Scheduler hit an exception: Traceback (most recent call last):\n"
        + '  File "/sgl/python/sglang/srt/managers/scheduler.py", line 2009, in run_scheduler_process\n'
        + f"{oom}\n"
        + f"{ts(14)} Received sigquit from a child process. It usually means the child failed.\n"
    )
    s = replay(text)
    assert s.phase is Phase.FAILED and s.error is not None
    assert s.error.kind == "oom" and s.error.line.startswith("torch.OutOfMemoryError") and s.error.rank == "TP3"
    later = replay(text + f"{ts(15, 'TP1')} Scheduler hit an exception: Traceback (most recent call last):\n", s)
    assert later.error is not None and later.error.rank == "TP3"  # another rank's marker after it is not the cause


def test_the_failed_rank_from_a_recorded_log() -> None:
    s = replay((LOGS / "fail-oom-capture-0.5.23.log").read_text())
    assert s.phase is Phase.FAILED and s.error is not None and s.error.kind == "oom"
    assert s.error.rank == "TP2" and "GPU 2" in s.error.line  # the rank prefix agrees with the GPU it names


def test_no_rank_failed_when_the_log_names_none_or_we_stopped_it() -> None:
    traceback = (
        "Traceback (most recent call last):\n"
        '  File "/sgl/python/sglang/srt/model_executor/cuda_graph_runner.py", line 269, in __init__\n'
        "    raise Exception(\n"
        "Exception: Capture cuda graph failed: an illegal memory access was encountered\n"
    )  # no rank prefix anywhere (a traceback printed without SGLang's scheduler marker)
    nameless = replay(HEAD + traceback)
    assert nameless.phase is Phase.FAILED and nameless.error is not None and nameless.error.rank is None
    loading = replay(HEAD)
    stopped = reduce(loading.evolve(process_alive=True), ControlResult("kill", ok=True), 50.0)
    stopped = reduce(stopped, ServerProcess(False), 51.0)
    assert stopped.phase is Phase.FAILED and stopped.error is not None and stopped.error.rank is None


# ------------------------------------------------------------------------------------------ draft captures


def draft_spans(s: Readiness, phase: Phase = Phase.CUDA_GRAPH) -> list[PhaseSpan]:
    return [span for span in s.timeline if span.model == "draft" and span.phase is phase]


EAGLE_HEAD = HEAD.replace("speculative_algorithm=None", "speculative_algorithm='EAGLE3'")


def test_each_draft_capture_is_one_span_of_its_own_name() -> None:
    # 0.5.9's spelling, every rank printing each line, a late rank's begin after an early rank's end
    text = (
        EAGLE_HEAD
        + CAPTURE
        + "".join(f"{ts(21, f'TP{i}')} Capture draft cuda graph begin. This can take up to several minutes. avail mem=22.26 GB\n" for i in range(TP - 1))
        + f"{ts(29, 'TP0')} Capture draft cuda graph end. Time elapsed: 7.91 s. mem usage=0.43 GB. avail mem=21.80 GB.\n"
        + f"{ts(21, 'TP3')} Capture draft cuda graph begin. This can take up to several minutes. avail mem=22.26 GB\n"
        + "".join(f"{ts(29, f'TP{i}')} Capture draft cuda graph end. Time elapsed: 7.93 s. mem usage=0.43 GB. avail mem=21.83 GB.\n" for i in range(1, TP))
        + every_rank(29, "Capture draft extend cuda graph begin. This can take up to several minutes. avail mem=21.83 GB")
        + every_rank(33, "Capture draft extend cuda graph end. Time elapsed: 4.10 s. mem usage=0.30 GB. avail mem=21.50 GB.")
    )  # fmt: skip
    spans = draft_spans(replay(text))
    assert [span.name for span in spans] == ["draft", "draft extend"]
    assert all(span.ended_at is not None for span in spans)
    assert spans[0].duration_s == 8.0 and spans[1].duration_s == 4.0


def test_a_draft_capture_logged_in_steps_is_one_span() -> None:
    steps = "".join(
        f"{ts(21 + 3 * k, 'TP0')} Capture draft extend CUDA graph begin. step={k}, backend=full, num_tokens_per_req=4, bs=[1, 2, 4], avail mem=22.00 GB\n"
        f"{ts(23 + 3 * k, 'TP0')} Capture draft extend CUDA graph end. step={k}, elapsed=2.00 s, mem usage=0.10 GB, avail mem=21.90 GB.\n"
        for k in range(3)
    )  # fmt: skip
    spans = draft_spans(replay(EAGLE_HEAD + CAPTURE + steps))
    assert [span.name for span in spans] == ["draft extend"]
    assert spans[0].duration_s == 8.0  # from the first step's begin to the last step's end


def test_recorded_eagle_logs_name_each_draft_capture_once() -> None:
    for name in ("v0.5.9-tp8-eagle3-ready.log", "v0.5.23-tp8-eagle3-ready.log"):
        s = replay((LOGS / name).read_text())
        names = [span.name for span in draft_spans(s)]
        assert names and len(names) == len(set(names)), (name, names)
        assert len(draft_spans(s, Phase.LOADING_WEIGHTS)) == 1, name
