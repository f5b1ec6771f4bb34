"""The one exit-code table (tui/core/exitcodes.py), command by command, for its cases a script must tell apart:
bad arguments (2), cannot connect (4), nothing found (6) and timed out (7), each run as a user runs it
(`python -m tui …`) against the real sshd and the real simulator. Every case asserts the code, one clear line
(no traceback) and the fact that decides it; each command's row of the table must give the code it is tested for,
so a code taken out of the table (or a command that stops giving it) fails here."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.helpers import hostile_http
from tests.helpers.processes import Cli, Sims, Spawner
from tests.helpers.sim import wait_for_log, wait_ready
from tests.helpers.sshd import Sshd, free_port
from tui.core.exitcodes import EXIT_BAD_ARGS, EXIT_CONNECT, EXIT_NOTHING, EXIT_TIMEOUT, SERVER_CODES, USES

pytestmark = pytest.mark.e2e


def _prog(command: str) -> str:
    return "sglang-tui" if command == "watch" else f"sglang-tui {command}"


def _one_line(done: subprocess.CompletedProcess[str], command: str, prog: str | None = None) -> str:
    """The one line a failed command says (it may follow its own progress lines): named by the command (`prog`:
    as its parser names it), no traceback."""
    assert "Traceback" not in done.stderr, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert lines and lines[-1].startswith(f"{prog or _prog(command)}: "), done.stderr
    return lines[-1]


# ------------------------------------------------------------------------------------------ 2: bad arguments

#: command -> (its arguments, what its line must name). A value is checked by argparse's type= (tui/cli.py), whose
#: line names the option, then the value ("--port: 70000 is not a TCP port"); `watch`'s parser names itself so.
BAD = {
    "watch": (["local", "--port", "70000"], "--port: 70000"),
    "wait": (["local", "--log", "/x.log", "--timeout", "0"], "--timeout"),
    "stop": (["local", "--port", "70000"], "--port: 70000"),
    "dump": (["local", "--port", "0", "--log", "/x.log"], "--port: 0"),
    "bench": (["local", "--port", "30000", "--temperature", "9"], "--temperature"),
    "replay": (["/no/such/dir/sglang.log"], "no such file"),
    "history": (["--limit", "0"], "--limit: 0"),
    "probe": (["local", "--port", "30000", "--log", "/x.log", "--ready", "--timeout", "-1"], "--timeout"),
    "export": (["--listen", ":0", "local", "local"], "given twice"),
    "fleet": (["--once", "gpu1:http"], "after gpu1: comes a port"),
    "demo": (["--speed", "-1"], "--speed"),
    "simulate": (["--log", "/tmp/never-written.log", "--port", "70000"], "--port: 70000"),
}


def test_every_command_is_in_the_bad_arguments_cases() -> None:
    assert set(BAD) == set(USES) | {"simulate"}
    assert all(EXIT_BAD_ARGS in codes for codes in USES.values()) and EXIT_BAD_ARGS in SERVER_CODES


@pytest.mark.parametrize("command", sorted(BAD))
def test_a_bad_argument_is_2_and_one_line_naming_it(command: str, cli: Cli) -> None:
    argv, named = BAD[command]
    done = cli(*([] if command == "watch" else [command]), *argv, timeout=60)
    assert done.returncode == EXIT_BAD_ARGS and done.stdout == "", (done.returncode, done.stdout, done.stderr)
    assert named in _one_line(done, command, prog=f"sglang-tui {command}")


# ----------------------------------------------------------------------------------------- 4: cannot connect

CONNECTING = {
    "watch": ["--log", "/tmp/none.log"],
    "wait": ["--log", "/tmp/none.log", "--timeout", "30"],
    "stop": ["--port", "30000"],
    "dump": ["--port", "30000", "--log", "/tmp/none.log"],
    "bench": ["--port", "30000"],
    "probe": ["--port", "30000", "--log", "/tmp/none.log", "--ready", "--timeout", "30"],
    "fleet": ["--port", "30000", "--log", "/tmp/none.log", "--once", "--timeout", "60"],
}


def test_the_cannot_connect_cases_are_every_command_that_connects() -> None:
    assert set(CONNECTING) == {command for command, codes in USES.items() if EXIT_CONNECT in codes}


@pytest.mark.parametrize("command", sorted(CONNECTING))
def test_a_host_that_refuses_the_key_is_4_for_every_command(command: str, sshd: Sshd, cli: Cli) -> None:
    """The real sshd refuses the key: nothing can be known, and no command says more than that it cannot connect."""
    refused = [a if a != str(sshd.identity) else str(sshd.wrong_identity) for a in sshd.ssh_args()]
    first = [] if command == "watch" else [command]
    done = cli(*first, "127.0.0.1", *refused, *CONNECTING[command], timeout=90)
    assert done.returncode == EXIT_CONNECT, (done.returncode, done.stdout, done.stderr)
    said = done.stdout if command == "probe" else done.stderr  # a probe says its verdict on stdout
    assert "Traceback" not in done.stderr and ("cannot connect" in said or "authentication" in said), said


# ------------------------------------------------------------------------------------------ 6: nothing found


def test_nothing_found_is_6_and_a_bystander_server_is_untouched(tmp_path: Path, sim: Sims, cli: Cli) -> None:
    """A real server runs on this host, but not on the port and log asked: stop and dump find nothing (6), and
    stop signals nothing; history with no store yet finds nothing either."""
    bystander = wait_ready(sim(tmp_path / "bystander", speed=500.0, tp=2, shards=4))
    port, log = free_port(), tmp_path / "none.log"
    cases = {
        "stop": ["stop", "local", "--port", str(port), "--log", str(log), "--sim-gpus", str(bystander.gpu_state)],
        "dump": ["dump", "local", "--port", str(port), "--log", str(log)],
        "history": ["history", "--history", str(tmp_path / "no-store.sqlite3")],
    }
    assert set(cases) <= {command for command, codes in USES.items() if EXIT_NOTHING in codes}
    for command, argv in cases.items():
        done = cli(*argv, timeout=90)
        assert done.returncode == EXIT_NOTHING and done.stdout == "", (command, done.returncode, done.stderr)
        line = _one_line(done, command)
        assert ("no history yet" if command == "history" else f"port {port}") in line, line
    assert bystander.alive()  # found by its title, never signalled: it was not the server asked for


# ------------------------------------------------------------------------------------------ 7: timed out


@pytest.fixture
def hung(tmp_path: Path, sim: Sims):
    """A simulated server that hangs in its weights (the stall budget far away): it never becomes ready."""
    server = sim(tmp_path / "hung", fault="hang-weights", speed=200.0, tp=2, shards=8)
    wait_for_log(server, b"Load weight begin", timeout=60)
    return server


def test_wait_timing_out_in_a_phase_is_7_and_says_the_phase(hung, sshd: Sshd, cli: Cli) -> None:
    """Over the real sshd: the time runs out while the server loads weights; 7, not 2 (a typo) nor 3 (stalled)."""
    done = cli("wait", "127.0.0.1", *sshd.ssh_args(), "--log", str(hung.log), "--port", str(hung.port),
               "--sim-gpus", str(hung.gpu_state), "--stall-after", "600", "--timeout", "10", "--json", timeout=90)  # fmt: skip
    assert done.returncode == EXIT_TIMEOUT, (done.returncode, done.stderr)
    last = json.loads(done.stdout.splitlines()[-1])
    assert last["phase"] == "loading_weights"  # what decides it: still loading when the time ran out
    assert done.stderr.splitlines()[-1] == f"sglang-tui wait: timed out after 10s in loading weights: {last['reason']}"


def test_probe_ready_on_a_startup_under_way_is_7(hung, cli: Cli) -> None:
    """A readiness probe is a wait with no time left: a server still loading is 7 (`--alive`: 0, it progresses)."""
    ready = cli("probe", "local", "--port", str(hung.port), "--log", str(hung.log), "--ready", "--json",
                "--stall-after", "600", "--timeout", "10", timeout=60)  # fmt: skip
    assert ready.returncode == EXIT_TIMEOUT, (ready.stdout, ready.stderr)
    said = json.loads(ready.stdout)
    assert said["phase"] == "loading_weights" and said["probe"]["verdict"] == "starting"
    assert said["probe"]["line"] == said["reason"]  # the probe says the verdict's own line


def test_bench_stopped_by_its_time_cap_before_any_answer_is_7(tmp_path: Path, spawn: Spawner, cli: Cli) -> None:
    """A server whose streams never send a token: the time cap ends every request, and that is 7, not 1."""
    silent = hostile_http.start(spawn, tmp_path, generate="silent")
    done = cli("bench", "local", "--port", str(silent.port), "--requests", "2", "--timeout", "3", "--json",
               "--no-history", timeout=90)  # fmt: skip
    assert done.returncode == EXIT_TIMEOUT, (done.returncode, done.stderr)
    result = json.loads(done.stdout)
    assert result["requests"]["ok"] == 0 and str(result["stopped"]).startswith("time cap"), result


def test_fleet_once_on_a_startup_under_way_is_7(hung, cli: Cli) -> None:
    """`fleet --once` looks once: a server still loading its weights is not ready yet, 7 (its row says so)."""
    done = cli("fleet", "--once", f"local:{hung.port}:{hung.log}", "--stall-after", "600", "--no-history",
               "--timeout", "30", timeout=90)  # fmt: skip
    assert done.returncode == EXIT_TIMEOUT, (done.returncode, done.stdout, done.stderr)
    assert done.stdout.splitlines()[1].split()[2:4] == ["loading", "weights"], done.stdout


def test_the_timeout_cases_are_every_command_that_times_out() -> None:
    tested = {"wait", "probe", "bench", "fleet"}
    assert tested == {command for command, codes in USES.items() if EXIT_TIMEOUT in codes}
