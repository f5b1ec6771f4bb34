"""The bench's pure parts: statistics, acceptance sources, the JSON contract, the comparison, the prompts."""

from __future__ import annotations

import json

import pytest

from tui.core.benchprompts import BUILTIN, PromptsError, kinds, parse_jsonl
from tui.core.benchstats import (
    BenchResult,
    Sample,
    Sampling,
    bound,
    compare,
    disagreement,
    log_accept_len,
    meta_accept_len,
    metrics_accept_len,
    percentile,
    render,
    summarize,
)  # fmt: skip
from tui.sim.engine import accept_weights


def ok(ttft: float, latency: float, tokens: int, verify: int | None = None) -> Sample:
    return Sample(True, "p", ttft, latency, tokens, verify)


def test_percentile_interpolates_and_is_none_for_nothing() -> None:
    assert percentile([], 50) is None
    assert percentile([3.0], 90) == 3.0
    assert percentile([1.0, 2.0, 3.0, 4.0], 50) == 2.5
    assert percentile([float(i) for i in range(1, 11)], 90) == pytest.approx(9.1)


def test_per_request_rate_is_decode_speed_after_the_first_token() -> None:
    assert ok(0.5, 2.5, 201).tok_s == pytest.approx(100.0)  # 200 tokens after the first, in 2 s
    assert ok(0.5, 0.5, 1).tok_s == pytest.approx(2.0)  # one chunk only: tokens over latency
    assert Sample(False, error="HTTP 500").tok_s is None


def test_accept_len_is_tokens_over_verify_steps_weighted_by_request() -> None:
    samples = [ok(0.1, 1.0, 300, 100), ok(0.1, 1.0, 100, 100), Sample(False, error="x")]
    assert meta_accept_len(samples) == pytest.approx(2.0)  # 400 / 200, not the mean of 3.0 and 1.0
    assert meta_accept_len([ok(0.1, 1.0, 256, None), ok(0.1, 1.0, 256, 0)]) is None


def test_a_server_without_speculative_decoding_reports_null_not_one() -> None:
    result = summarize([ok(0.1, 1.0, 256)] * 4, elapsed_s=2.0, sampling=Sampling(), planned=4, metrics_accept=None)
    obj = result.to_json()
    assert obj["accept_len"] is None and obj["accept_len_sources"] == []
    assert "no speculative decoding" in render(result)[3]
    assert metrics_accept_len('sglang:spec_accept_length{model_name="m",tp_rank="0"} 0.0\n') is None


def test_metrics_and_log_cross_checks() -> None:
    text = ('# HELP sglang:spec_accept_length Mean\n# TYPE sglang:spec_accept_length gauge\n'
            'sglang:spec_accept_length{engine_type="unified",model_name="m",tp_rank="0"} 3.25\n'
            'sglang:spec_accept_rate{model_name="m"} 0.75\n')  # fmt: skip
    assert metrics_accept_len(text) == 3.25
    assert metrics_accept_len("sglang:gen_throughput 12.0\n") is None
    log = (
        "[2025-11-29 10:05:03 TP0] Decode batch, #running-req: 4, #token: 2304, token usage: 0.00, accept len: 3.00, "
        "accept rate: 0.67, cuda graph: True, gen throughput (token/s): 598.31, #queue-req: 0\n"
        "[2025-11-29 10:05:04 TP0] Prefill batch, #new-seq: 1, #new-token: 9\n"
        "[2025-11-29 10:05:05 TP0] Decode batch, #running-req: 4, accept len: 3.50, gen throughput (token/s): 1.0\n"
    )
    assert log_accept_len(log) == pytest.approx(3.25)
    assert (
        log_accept_len("[2025-11-29 10:05:03 TP0] Decode batch, #running-req: 1, gen throughput (token/s): 9.0\n")
        is None
    )


def test_summary_takes_meta_info_first_and_names_every_source() -> None:
    samples = [
        ok(0.10, 1.10, 257, 100),
        ok(0.30, 2.30, 257, 100),
        Sample(False, error="HTTP 503"),
        Sample(False, error="HTTP 503"),
    ]
    result = summarize(samples, elapsed_s=4.0, sampling=Sampling(0.0, 256), planned=5, concurrency=2,
                       log_accept=2.5, metrics_accept=2.6)  # fmt: skip
    obj = result.to_json()
    assert obj["requests"] == {"ok": 2, "failed": 2}
    assert obj["ttft_s"] == {"p50": pytest.approx(0.2), "p90": pytest.approx(0.28)}
    assert obj["output_tok_s"] == {"per_request_p50": pytest.approx(192.0), "total": pytest.approx(128.5)}
    assert obj["accept_len"] == 2.57 and obj["accept_len_sources"] == ["meta_info", "log", "metrics"]
    assert obj["not_sent"] == 1 and obj["errors"] == ["2× HTTP 503"]
    assert obj["sampling"] == {"temperature": 0.0, "max_new_tokens": 256, "ignore_eos": True}
    assert list(obj)[:5] == ["requests", "ttft_s", "output_tok_s", "accept_len", "accept_len_sources"]  # the contract
    json.dumps(obj)  # serialisable
    assert BenchResult.from_json(json.loads(json.dumps(obj))).to_json() == obj  # a stored result comes back whole


def test_bound_says_what_the_length_limits() -> None:
    assert bound(1.52) == "accept len 1.52: at most ~1.5× over plain decoding"
    assert bound(None).startswith("no speculative decoding")


def test_disagreeing_sources_are_called_out() -> None:
    agree = summarize([ok(0.1, 1.0, 300, 100)], elapsed_s=1, sampling=Sampling(), planned=1, log_accept=3.1)
    assert disagreement(agree) is None
    odd = summarize([ok(0.1, 1.0, 300, 100)], elapsed_s=1, sampling=Sampling(), planned=1, log_accept=1.5)
    assert "meta_info 3.00, log 1.50" in (disagreement(odd) or "")
    assert any("disagree" in line for line in render(odd))


DEFAULT_SAMPLING = Sampling()


def result(accept: float | None, tok_s: float, ttft: float = 0.2, sampling: Sampling = DEFAULT_SAMPLING) -> BenchResult:
    return BenchResult(
        16, 0, ttft, ttft * 2, tok_s, tok_s * 4, accept, ("meta_info",) if accept else (), sampling=sampling
    )


def test_compare_with_the_last_launch() -> None:
    assert compare(result(3.10, 141.2), result(1.52, 52.4)).startswith(
        "accept len 1.52, last launch 3.10; tok/s 52, last 141"
    )
    assert compare(None, result(1.52, 52.4)) == "no earlier bench of this launch to compare with"
    line = compare(result(None, 80.0), result(3.2, 200.0, sampling=Sampling(0.7, 128)))
    assert line.startswith("accept len 3.20, last launch none; tok/s 200, last 80")
    assert "sampling differs: last temperature 0, max_new_tokens 256" in line


def test_the_builtin_prompts_are_varied() -> None:
    assert kinds(BUILTIN) == "code, chat, reasoning, long, short"
    words = {kind: [len(p.text.split()) for p in BUILTIN if p.kind == kind] for kind in ("long", "short")}
    assert min(words["long"]) > 120 and max(words["short"]) < 15
    assert len({p.name for p in BUILTIN}) == len(BUILTIN)


def test_prompts_jsonl() -> None:
    data = b'{"text": "one", "name": "first"}\n\n"two"\n{"prompt": "three"}\n'
    prompts = parse_jsonl(data, "p.jsonl")
    assert [(p.name, p.text) for p in prompts] == [("first", "one"), ("line-3", "two"), ("line-4", "three")]


@pytest.mark.parametrize(
    "data, words",
    [
        (b'{"text": "ok"}\n{"text": "broken"\n', "p.jsonl line 2: not JSON"),
        (b'{"text": "ok"}\n{"txt": "x"}\n', 'p.jsonl line 2: no "text" string'),
        (b"[1, 2]\n", "p.jsonl line 1: a list, not a prompt"),
        (b'{"text": "  "}\n', "p.jsonl line 1: the prompt is empty"),
        (b"\n\n", "p.jsonl: no prompts in the file"),
        (b"\xff\xfe{}", "p.jsonl: not UTF-8 text"),
    ],
)
def test_bad_prompts_files_say_where_in_one_line(data: bytes, words: str) -> None:
    with pytest.raises(PromptsError) as err:
        parse_jsonl(data, "p.jsonl")
    assert str(err.value).startswith(words) and "\n" not in str(err.value)


@pytest.mark.parametrize("mean", [1.0, 1.5, 2.4, 3.2, 4.0])
def test_the_simulated_drafter_accepts_what_it_is_told(mean: float) -> None:
    weights = accept_weights(mean)
    assert sum(weights) == pytest.approx(1.0)
    assert sum(k * w for k, w in enumerate(weights, 1)) == pytest.approx(mean)
