"""A server ready 70 s before anyone looked (issue 30), on the real simulator: every view counts from the log's
fired-up line, not from the look. `simulate --backdate 70` writes its stamps and the log's mtime 70 s back: the
launch began, and went ready, 70 s before the watcher's first look, without waiting 70 s.

- `wait --json`'s first object is the state the first look found: ready, never "waiting for the first log line";
  its ready span begins at the log's fired-up stamp; the history records the launch `late`, on the log's clock.
- `fleet --once` says the row has been in its phase for over a minute; `export`'s phase_elapsed is over 60 s.
- `fleet --json` opens with the server's current state, once: ready, never a replayed starting → warmup → ready.
- A launch `wait` saw from its first line keeps its record when `wait` and `fleet --once` look again after ready."""

from __future__ import annotations

import json
import re
import signal
import time
from pathlib import Path

from tests.helpers.processes import Cli, PipeLines, Sims
from tests.helpers.sim import SimServer, wait_for_log
from tests.helpers.sshd import free_port
from tests.test_export_sim import scrape
from tui.history.store import HistoryStore

BACKDATE_S = 70.0
FIRED_UP = re.compile(rb"^\[(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2})[^\]]*\] .*fired up", re.M)


def ready_long_ago(sim: Sims) -> tuple[SimServer, str]:
    """A simulator whose log said fired up BACKDATE_S s ago (its stamp as printed)."""
    server = sim(speed=100.0, shards=4, speculative="none", extra=("--backdate", str(BACKDATE_S)))
    found = FIRED_UP.search(wait_for_log(server, b"fired up", 90))
    assert found is not None
    return server, found.group(1).decode()


def test_a_server_ready_before_the_first_look(sim: Sims, cli: Cli, tmp_path: Path) -> None:
    server, fired = ready_long_ago(sim)
    history = tmp_path / "h.sqlite3"
    target = ("local", "--log", str(server.log), "--port", str(server.port), "--sim-gpus", str(server.gpu_state))
    proc = cli.popen("wait", *target, "--json", "--timeout", "60", "--history", history)
    assert proc.stdout is not None
    objects = [json.loads(line) for line in proc.stdout]
    assert proc.wait(30) == 0, proc.stderr.read() if proc.stderr else ""
    first = objects[0]
    assert first["phase"] in ("ready", "serving"), [(o["phase"], o["reason"]) for o in objects[:3]]
    ready = next(span for span in first["timeline"] if span["phase"] == "ready")
    warmup = next(span for span in first["timeline"] if span["phase"] == "warmup" and span["model"] == "main")
    assert ready["start"] == fired == warmup["end"]  # on the log's clock, not when we looked
    assert warmup["duration_s"] is not None and warmup["duration_s"] < 10.0

    with HistoryStore(history) as store:
        (row,) = store.launches()
    assert row["seen_from"] == "late" and row["outcome"] == "ready"
    assert row["total_s"] is not None and row["total_s"] < 30.0  # the log's start to fired up, not to our look
    assert all(p["duration_s"] is None or p["duration_s"] < 30.0 for p in row["phases"])

    once = cli("fleet", "--once", f"local:{server.port}:{server.log}", "--no-history", "--timeout", "60", timeout=90)
    assert once.returncode == 0, (once.stdout, once.stderr)
    header, row_text = once.stdout.splitlines()[:2]
    at = header.index("IN PHASE")
    assert row_text[at:].split()[0] == "1m", once.stdout  # ready since the fired-up stamp 70 s ago, not "<1m"


def test_export_counts_the_phase_from_the_fired_up_line(sim: Sims, cli: Cli) -> None:
    server, _fired = ready_long_ago(sim)
    port = free_port()
    exporter = cli.popen("export", "--listen", f"127.0.0.1:{port}", "--no-history", f"local:{server.port}:{server.log}")
    deadline = time.monotonic() + 90
    found: dict[str, float] = {}
    while True:
        assert time.monotonic() < deadline, f"the server never turned ready in /metrics: {found}"
        try:
            found = scrape(port)
        except OSError:
            found = {}
        key = next((k for k, v in found.items() if k.startswith("sglang_tui_ready{") and v == 1), "")
        if key:
            break
        time.sleep(0.3)
    labels = key[len("sglang_tui_ready") :]
    assert found[f"sglang_tui_phase_elapsed_seconds{labels}"] >= 60.0, found
    exporter.send_signal(signal.SIGTERM)
    assert exporter.wait(30) == 0


def test_later_looks_leave_the_first_lines_record(sim: Sims, cli: Cli, tmp_path: Path) -> None:
    """`wait` from the first line records the launch; a second `wait` and a `fleet --once` after ready (their
    looks come seconds after the ready: the old record's warmup ran to the look) leave the row as it was."""
    history = tmp_path / "h.sqlite3"
    port, log = free_port(), tmp_path / "run" / "sim.log"
    log.parent.mkdir()
    target = ("local", "--log", str(log), "--port", str(port), "--history", str(history), "--timeout", "90")
    proc = cli.popen("wait", *target, "--json")
    assert proc.stdout is not None
    for line in proc.stdout:  # until it has looked at the log (missing): it reads the launch from its first byte
        if "log file missing" in json.loads(line)["reason"]:
            break
    sim(log.parent, port=port, speed=100.0, tp=2, shards=4, speculative="none")
    for _ in proc.stdout:
        pass
    assert proc.wait(30) == 0, proc.stderr.read() if proc.stderr else ""
    with HistoryStore(history) as store:
        (before,) = store.launches()
    assert before["seen_from"] == "first_line" and before["source"] == "wait" and before["outcome"] == "ready"

    again = cli("wait", *target, timeout=120)
    assert again.returncode == 0, again.stderr
    board = cli("fleet", "--once", f"local:{port}:{log}", "--history", str(history), "--timeout", "60", timeout=90)
    assert board.returncode == 0, (board.stdout, board.stderr)
    with HistoryStore(history) as store:
        (after,) = store.launches()
    assert after == before


def test_fleet_json_opens_with_the_current_state(sim: Sims, cli: Cli) -> None:
    server, _fired = ready_long_ago(sim)
    stream = cli.popen("fleet", "--json", "--no-history", f"local:{server.port}:{server.log}")
    assert stream.stdout is not None
    lines = PipeLines(stream.stdout)
    lines.wait_for(lambda line: json.loads(line)["phase"] in ("ready", "serving"), timeout=90)
    stream.send_signal(signal.SIGTERM)
    assert stream.wait(30) == 0
    phases = [json.loads(line)["phase"] for line in lines.text(5).splitlines()]
    assert phases[0] in ("ready", "serving"), phases  # its first object is what its first look found
