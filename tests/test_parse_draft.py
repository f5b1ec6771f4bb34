"""Which bars and loads are the speculative draft model's is decided by the parser alone (issue 10): from the
order of the log's own lines, fed as text."""

from __future__ import annotations

from tui.core.events import BarProgress, Milestone
from tui.core.logparse import LogParser
from tui.core.readiness import reduce
from tui.core.state import Phase, Readiness

ARGS_EAGLE = "[2025-11-29 10:00:00] server_args=ServerArgs(model_path='m', tp_size=2, speculative_algorithm='EAGLE3')"
ARGS_PLAIN = "[2025-11-29 10:00:00] server_args=ServerArgs(model_path='m', tp_size=2, speculative_algorithm=None)"


def _ranks(sec: int, text: str) -> list[str]:
    return [f"[2025-11-29 10:00:{sec:02d} TP{r}] {text}" for r in range(2)]


def _shards(total: int, upto: int | None = None) -> list[str]:
    end = total if upto is None else upto
    return [f"Loading safetensors checkpoint shards: {100 * d // total:3d}% Completed | {d}/{total} [00:0{d}<00:00, 1.00s/it]"
            for d in range(end + 1)]  # fmt: skip


def _main_load(total: int = 4) -> list[str]:
    return [
        *_ranks(4, "Load weight begin. avail mem=138.00 GB"),
        *_shards(total),
        *_ranks(10, "Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=120.00 GB, mem usage=16.50 GB."),
    ]  # fmt: skip


def _capture() -> list[str]:
    return [
        *_ranks(11, "KV Cache is allocated. #tokens: 100000, K size: 8.00 GB, V size: 8.00 GB"),
        *_ranks(12, "Capture cuda graph begin. This can take up to several minutes. avail mem=20.00 GB"),
        *_ranks(16, "Capture cuda graph end. Time elapsed: 4.00 s. mem usage=2.00 GB. avail mem=18.00 GB."),
    ]


def _events(lines: list[str]) -> list[object]:
    parser = LogParser()
    return [*parser.feed(("\n".join(lines) + "\n").encode()), *parser.flush()]


def _state(lines: list[str]) -> Readiness:
    s = Readiness()
    for i, ev in enumerate(_events(lines)):
        s = reduce(s, ev, 36000.0 + i)  # type: ignore[arg-type]
    return s


def test_a_weight_bar_after_the_main_load_end_is_the_drafts() -> None:
    bars = [e for e in _events([ARGS_EAGLE, *_main_load(), *_shards(1)]) if isinstance(e, BarProgress)]
    assert {e.bar for e in bars[:5]} == {"weights"} and {e.bar for e in bars[5:]} == {"draft_weights"}
    s = _state([ARGS_EAGLE, *_main_load(), *_shards(1)])
    assert s.shards is not None and (s.shards.done, s.shards.total) == (4, 4)
    assert s.draft_shards is not None and (s.draft_shards.done, s.draft_shards.total) == (1, 1)


def test_a_bar_of_another_size_while_the_main_one_loads_is_the_drafts_with_speculative_on() -> None:
    lines = [*_ranks(4, "Load weight begin. avail mem=138.00 GB"), *_shards(4, upto=2), *_shards(1)]
    eagle = [e.bar for e in _events([ARGS_EAGLE, *lines]) if isinstance(e, BarProgress)]
    assert eagle[-2:] == ["draft_weights", "draft_weights"]
    plain = [e.bar for e in _events([ARGS_PLAIN, *lines]) if isinstance(e, BarProgress)]
    assert "draft_weights" not in plain  # speculative off: never a draft


def test_an_unflagged_second_load_after_capture_is_the_drafts() -> None:
    second = [*_ranks(30, "Load weight begin. avail mem=18.00 GB"), *_ranks(32, "Load weight end. avail mem=17.00 GB")]
    loads = [e for e in _events([ARGS_EAGLE, *_main_load(), *_capture(), *second])
             if isinstance(e, Milestone) and e.kind in ("load_begin", "load_end")]  # fmt: skip
    assert [e.draft for e in loads] == [False] * 4 + [True] * 4
    s = _state([ARGS_EAGLE, *_main_load(), *_capture(), *second])
    assert s.phase is Phase.CUDA_GRAPH
    assert [span.phase for span in s.timeline if span.model == "draft"] == [Phase.LOADING_WEIGHTS]


def test_an_untagged_load_after_the_kv_cache_is_the_drafts_only_with_speculative_on() -> None:
    late = ["[2025-11-29 10:00:30] Load weight begin. avail mem=18.00 GB"]
    for args, want in ((ARGS_EAGLE, True), (ARGS_PLAIN, False)):
        loads = [e for e in _events([args, *_main_load(), *_capture()[:2], *late])
                 if isinstance(e, Milestone) and e.kind == "load_begin"]  # fmt: skip
        assert loads[-1].rank is None and loads[-1].draft is want, args
