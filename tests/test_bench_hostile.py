"""`bench` against a hostile HTTP server (issue 26, item 10): a real server process of its own
(tests/helpers/hostile_http.py) that drips /metrics, sends a 2 GB body, a stream line that never ends, or
`completion_tokens: Infinity`. The bench still ends within its --timeout with its result and one line for what it
could not read; what the server managed to send shows the read stopped at its cap (tui.core.limits)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.helpers import hostile_http
from tests.helpers.processes import Cli, Spawner
from tui.core.limits import METRICS_BODY_MAX, MIB, STREAM_LINE_MAX

SLACK = 48 * MIB  # what the kernel's socket buffers can take beyond what the client read

Bench = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def hostile(tmp_path: Path, spawn: Spawner, request: pytest.FixtureRequest) -> hostile_http.Hostile:
    return hostile_http.start(spawn, tmp_path, **request.param)


@pytest.fixture
def bench(cli: Cli, hostile: hostile_http.Hostile) -> Bench:
    """`bench local --port HOSTILE … --no-history`, run to its end (`timeout`: the stop condition)."""

    def run(*args: str, timeout: float) -> subprocess.CompletedProcess[str]:
        return cli("bench", "local", "--port", str(hostile.port), *args, "--no-history", timeout=timeout)

    return run


@pytest.mark.parametrize("hostile", [{"metrics": "drip"}], indirect=True)
def test_a_dripping_metrics_ends_within_the_time_cap_with_the_result(
    hostile: hostile_http.Hostile, bench: Bench
) -> None:
    # the subprocess timeout is the stop condition: before, the drip held the bench 90 s past --timeout 10
    done = bench("--requests", "2", "--timeout", "4", "--json", timeout=40)
    assert done.returncode == 0, done.stderr
    obj = json.loads(done.stdout)
    assert obj["requests"] == {"ok": 2, "failed": 0} and obj["accept_len_sources"] == ["meta_info"]
    (note,) = obj["notes"]
    assert note.startswith("no /metrics cross-check: no whole answer in")
    assert f"sglang-tui bench: {note}" in done.stderr.splitlines() and "Traceback" not in done.stderr


@pytest.mark.parametrize("hostile", [{"metrics": "huge"}], indirect=True)
def test_a_2_gb_metrics_is_read_up_to_its_cap(hostile: hostile_http.Hostile, bench: Bench) -> None:
    done = bench("--requests", "2", timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("requests: 2 ok, 0 failed")
    assert lines[-1] == "no /metrics cross-check: /metrics answered more than 16 MiB, more than SGLang ever sends"
    assert hostile.sent("/metrics") < METRICS_BODY_MAX + SLACK  # of 2 GiB offered


@pytest.mark.parametrize("hostile", [{"generate": "longline"}], indirect=True)
def test_a_stream_line_without_a_newline_fails_that_request_at_the_cap(
    hostile: hostile_http.Hostile, bench: Bench
) -> None:
    done = bench("--requests", "1", "--json", timeout=120)
    assert done.returncode == 1 and "Traceback" not in done.stderr  # every request failed: 1, as before
    obj = json.loads(done.stdout)
    assert obj["requests"] == {"ok": 0, "failed": 1}
    assert obj["errors"] == ["/generate sent a line of more than 16 MiB, more than SGLang ever sends"]
    assert hostile.sent("/generate") < STREAM_LINE_MAX + SLACK


@pytest.mark.parametrize("hostile", [{"generate": "infinity"}], indirect=True)
def test_completion_tokens_infinity_is_a_failed_request_not_a_crash(
    hostile: hostile_http.Hostile, bench: Bench
) -> None:
    done = bench("--requests", "2", "--json", timeout=60)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    obj = json.loads(done.stdout)
    assert obj["requests"] == {"ok": 0, "failed": 2}
    assert obj["errors"] == ["2× Infinity in the stream: not JSON, and no figure SGLang sends"]
    assert done.stderr.splitlines()[-1] == ("sglang-tui bench: every request failed (2× Infinity in the stream: "
                                            "not JSON, and no figure SGLang sends)")  # fmt: skip


@pytest.mark.parametrize("hostile", [{"generate": "error-huge"}], indirect=True)
def test_a_2_gb_error_body_is_read_only_for_its_first_words(hostile: hostile_http.Hostile, bench: Bench) -> None:
    done = bench("--requests", "1", "--json", timeout=60)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert json.loads(done.stdout)["errors"] == ["HTTP 500: " + "x" * 120]
    assert hostile.sent("/generate") < SLACK
