"""SGLang's version and /server_info's startup_time in the launch history: the simulator's real /server_info,
`python -m tui wait --history FILE` against it (a real SQLite file), the parser's `sglang version:` line, the
version presumed from the history until /server_info says it, and the cross-check from startup_time alone."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

from tests.helpers.processes import Cli, Sims
from tests.helpers.sim import http_get, wait_ready
from tui.core.events import Milestone, ServerArgs, ServerInfoAnswer
from tui.core.launchkey import key_fields, launch_key
from tui.core.logparse import LogParser
from tui.core.readiness import reduce
from tui.core.serverinfo import parse_server_info, startup_figures
from tui.core.state import Readiness, ServerInfo
from tui.history.recorder import Recorder
from tui.history.store import HistoryStore, LaunchRecord

SERVER_ARGS = "server_args=ServerArgs(model_path='/m/Qwen', tp_size=2, port=30000, load_format='auto')"
TIMINGS = re.compile(rb"Engine startup timings \(s\): load_weight=([\d.]+).*tokenizer_e2e=([\d.]+)")


def test_sim_server_info_has_version_and_startup_time_like_0523(tmp_path: Path, sim: Sims) -> None:
    server = wait_ready(sim(tmp_path, speed=200.0, tp=2, shards=8))
    try:
        status, body = http_get(server.port, "/server_info")
        assert status == 200
        raw = json.loads(body)
        assert raw["version"] == "0.5.23" and raw["frontend"] == "python"
        assert set(raw["startup_time"]) == {"load_weight", "kv_cache_allocation", "scheduler_e2e", "cuda_graph",
                                            "tokenizer_e2e"}  # fmt: skip
        parsed = parse_server_info(body)
        assert parsed is not None
        version, figures, model = parsed
        assert version == "0.5.23" and model == raw["model_path"]
        found = dict(figures)
        line = TIMINGS.search(server.log.read_bytes())
        assert line is not None  # the same numbers as the log's line (which prints two decimals)
        assert abs(found["load_weight"] - float(line.group(1))) < 0.01
        assert abs(found["tokenizer_e2e"] - float(line.group(2))) < 0.01
        assert found["cuda_graph_total"] == round(sum(v for k, v in figures if k.startswith("cuda_graph.")), 4)
        status, old = http_get(server.port, "/get_server_info")  # the 0.4.x name still answers
        assert status == 200 and json.loads(old)["version"] == "0.5.23"
    finally:
        server.stop()


def test_sim_0_5_9_has_version_but_no_startup_time(tmp_path: Path, sim: Sims) -> None:
    server = wait_ready(sim(tmp_path, speed=200.0, tp=2, shards=8, fmt="0.5.9", speculative="none"))
    try:
        status, body = http_get(server.port, "/server_info")
        parsed = parse_server_info(body)
        assert status == 200 and parsed is not None
        assert parsed[0] == "0.5.9" and parsed[1] == () and "startup_time" not in json.loads(body)
    finally:
        server.stop()


def test_wait_reads_server_info_once_and_stores_version_and_startup_time(tmp_path: Path, sim: Sims, cli: Cli) -> None:
    history = tmp_path / "history.sqlite3"
    server = sim(tmp_path, speed=50.0, tp=2, shards=8)
    try:
        done = cli(
            "wait",
            "local",
            "--log",
            str(server.log),
            "--port",
            str(server.port),
            "--sim-gpus",
            str(server.gpu_state),
            "--timeout",
            "120",
            "--history",
            str(history),
            timeout=180,
        )
        assert done.returncode == 0, done.stderr
        log = server.log.read_bytes()
    finally:
        server.stop()
    # one read, never a poll, and marked as the tool's own in the server's access log
    assert log.count(b"GET /server_info?from=sglang-tui HTTP/1.1") == 1
    assert b"GET /server_info HTTP" not in log
    shown = cli("history", "--json", "--history", str(history), timeout=60)
    assert shown.returncode == 0, shown.stderr
    launches = json.loads(shown.stdout)
    rows = launches if isinstance(launches, list) else launches["launches"]
    assert len(rows) == 1
    row = rows[0]
    assert row["outcome"] == "ready" and row["key"]["version"] == "0.5.23"
    line = TIMINGS.search(log)
    assert line is not None and row["startup_time_s"] is not None
    assert abs(row["startup_time_s"] - float(line.group(2))) < 0.01
    table = cli("history", "--history", str(history), timeout=60)
    assert "version 0.5.23" in table.stdout


def test_the_log_names_the_version_when_a_launch_script_prints_it() -> None:
    parser = LogParser()
    events = parser.feed(b"sglang version: 0.5.23\n[2026-01-01 10:00:00] " + SERVER_ARGS.encode() + b"\n")
    args = [e for e in events if isinstance(e, ServerArgs)]
    assert len(args) == 1 and args[0].version == "0.5.23"
    state = Readiness()
    for e in events:
        state = reduce(state, e, 1.0)
    assert state.server.version == "0.5.23"
    key = launch_key(state.server, "gpu1")
    assert key is not None and '"version":"0.5.23"' in key
    plain = [
        e
        for e in LogParser().feed(b"[2026-01-01 10:00:00] " + SERVER_ARGS.encode() + b"\n")
        if isinstance(e, ServerArgs)
    ]
    assert plain[0].version is None  # SGLang's own log never says it
    assert not [e for e in LogParser().feed(b"the sglang version: is unknown\n") if isinstance(e, ServerArgs)]


def test_server_info_answer_sets_version_and_figures_unless_it_names_another_model() -> None:
    state = reduce(Readiness(), ServerArgs(model="/m/Qwen", tp_size=2), 1.0)
    figures = startup_figures({"load_weight": 50.0, "cuda_graph": {"prefill": 20.0, "decode": 1.5},
                               "tokenizer_e2e": 90.0, "bogus": "x"})  # fmt: skip
    assert dict(figures)["cuda_graph_total"] == 21.5 and "bogus" not in dict(figures)
    foreign = reduce(state, ServerInfoAnswer("/server_info", "ok", "0.5.22", figures, "/other/model"), 2.0)
    assert foreign.server.version is None and foreign.startup_time == ()
    failed = reduce(state, ServerInfoAnswer("/server_info", "timeout"), 2.0)
    assert failed.server.version is None
    ours = reduce(state, ServerInfoAnswer("/server_info", "ok", "0.5.23", figures, "/m/Qwen"), 2.0)
    assert ours.server.version == "0.5.23" and dict(ours.startup_time)["tokenizer_e2e"] == 90.0


def test_crosscheck_uses_server_info_startup_time_when_the_log_has_no_line() -> None:
    from tests.test_readiness_phases import at, feed, ranks
    from tui.core.crosscheck import crosscheck, total_check
    from tui.core.report import format_report

    s = feed([ServerArgs(model="m", tp_size=2, **at(0))] + ranks("init_begin", 2) + ranks("load_begin", 4)
             + ranks("load_end", 60) + ranks("kv_alloc", 61) + ranks("graph_begin", 62) + ranks("graph_end", 104)
             + [Milestone("uvicorn_started", **at(105))])  # fmt: skip
    figures = startup_figures({"load_weight": 50.0, "kv_cache_allocation": 1.0, "scheduler_e2e": 100.0,
                               "cuda_graph": {"prefill": 41.7}, "tokenizer_e2e": 80.0})  # fmt: skip
    s = reduce(s, ServerInfoAnswer("/server_info", "ok", "0.5.23", figures, "m"), 200.0)
    assert s.startup_timings == () and s.startup_time
    assert {name for name, *_ in crosscheck(s)} == {"load_weight"}  # 56 s vs 50; capture agrees
    total = total_check(s)
    assert total is not None and total[0] == "tokenizer_e2e" and total[2] > 100  # 105 s of phases vs 80
    report = format_report(s)
    assert "load_weight: SGLang 50.00 s" in report and "tokenizer_e2e: SGLang 80.00 s" in report


def _record(store: HistoryStore, server: ServerInfo, mark: str, total: float) -> None:
    key = launch_key(server, "gpu1")
    assert key is not None
    store.record_launch(LaunchRecord(key=key, key_fields=key_fields(server, "gpu1"), start_mark=mark, source="wait",
                                     outcome="ready", started_at=float(len(mark)), total_s=total,
                                     phases=(("loading_weights", "main", None, None, total),)))  # fmt: skip


def test_version_is_presumed_from_the_history_until_server_info_says_it(tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite3"
    server = ServerInfo(model="/m/Qwen", tp_size=2, version="0.5.23")
    with HistoryStore(path) as store:
        _record(store, server, "log a", 100.0)
        _record(store, replace(server, version="0.5.22"), "log", 300.0)  # older (started_at smaller)
    rec = Recorder(path, "gpu1", "wait", warn=False)
    state = reduce(Readiness(), ServerArgs(model="/m/Qwen", tp_size=2, at="2026-01-01 10:00:00", t=0.0), 1.0)
    state = rec.update(state)
    assert state.server.version is None  # a presumption, not a fact of the state
    assert state.past is not None and [p.total_s for p in state.past.launches] == [100.0]  # the newest: 0.5.23
    # /server_info says 0.5.22 after all: the past of that version is used instead
    told = reduce(state, ServerInfoAnswer("/server_info", "ok", "0.5.22", (("tokenizer_e2e", 12.0),), "/m/Qwen"), 2.0)
    told = rec.update(told)
    assert told.past is not None and [p.total_s for p in told.past.launches] == [300.0]
    rec.finish(told)


def test_a_launch_recorded_before_its_version_is_known_stays_one_row(tmp_path: Path) -> None:
    from tests.test_readiness_phases import at, feed, ranks

    path = tmp_path / "h.sqlite3"
    rec = Recorder(path, "gpu1", "wait", warn=False)
    s = feed([ServerArgs(model="/m/Qwen", tp_size=2, **at(0))] + ranks("init_begin", 2) + ranks("load_begin", 4))
    rec.update(s)
    first = rec.record(s, "stalled")  # recorded with no version (say the launch stalled, then went on)
    s = reduce(s, ServerInfoAnswer("/server_info", "ok", "0.5.23", (("tokenizer_e2e", 12.0),), "/m/Qwen"), 50.0)
    second = rec.record(s, "ready")
    rec.finish(s)
    with HistoryStore(path) as store:
        rows = store.launches()
    assert first == second and len(rows) == 1
    assert rows[0]["key"]["version"] == "0.5.23" and rows[0]["startup_time_s"] == 12.0
    assert rows[0]["outcome"] == "ready"
