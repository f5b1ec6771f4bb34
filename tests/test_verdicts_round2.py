"""Issue 26, false verdicts 1-6, tried as the red-team did: real simulators, real HTTP servers, a real socat, a
real `ssh -L` through a real sshd. None may end in the wrong exit code; a test that expects "never ready"
follows `wait --json` to the line that decides it, never a timeout.

1. a dead node 1 of a two-node launch            → failed, naming node1 (never "ready: 2 nodes")
2. a new launch appended to a running server's log → not ready while the earlier one answers; ready on its own
3. `stop --port B --log A` / config.toml's log      → one line naming both, exit 2, nothing stopped
4. dead (whole, or one rank) inside the ready hold → failed, never exit 0
5. `launch >> log` after a crash, no line yet       → the retry is waited for, not the old traceback
6. a ready server behind socat / docker-proxy / `ssh -L` → ready "behind socat (pid N)"
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.pids import alive
from tests.helpers.ports import accepts
from tests.helpers.processes import Cli, Sims, Spawner, read_rest
from tests.helpers.sim import http_get, wait_for_log, wait_ready
from tests.helpers.sshd import Sshd, free_port
from tests.helpers.verdicts import MODEL, finished_log

NOT_READY = {"ready", "serving"}
FAST: dict[str, Any] = {"speed": 400.0, "tp": 2, "shards": 4}


def follow(proc: subprocess.Popen[str], until: Callable[[dict[str, object]], bool], limit: int = 4000) -> list[dict]:
    """The JSON lines of a `wait --json` up to (and with) the first one `until` accepts; fails if it ends first."""
    assert proc.stdout is not None
    seen: list[dict] = []
    for line in proc.stdout:
        if line.strip():
            seen.append(json.loads(line))
            if until(seen[-1]) or len(seen) >= limit:
                return seen
    _, err = proc.communicate(timeout=30)
    raise AssertionError(f"wait ended (exit {proc.returncode}) before the deciding line; last: {seen[-1:]}\n{err}")


def finish(proc: subprocess.Popen[str], seen: list[dict], timeout: float = 120) -> tuple[int, list[dict], str]:
    """Let a `wait --json` run to its own end: (exit code, every JSON line, the verdict line on stderr)."""
    out, err = read_rest(proc, timeout)
    seen = seen + [json.loads(line) for line in out.splitlines() if line.strip()]
    verdicts = [line for line in err.splitlines() if line.startswith("sglang-tui wait: ")]
    assert verdicts, err
    return proc.returncode, seen, verdicts[-1]


def until_listening(port: int, proc: subprocess.Popen[bytes] | None = None, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not accepts(port):
        assert proc is None or proc.poll() is None, f"the listener on {port} exited"
        assert time.monotonic() < deadline, f"nothing listens on {port} after {timeout} s"
        time.sleep(0.05)


# ---------------------------------------------------------------------------------- 1. a dead node 1


def test_a_dead_node1_is_never_ready_and_the_verdict_names_it(sim: Sims, cli: Cli) -> None:
    """SIGKILL every process of node 1 while node 0 answers 200: `wait n0 n1` must not say "ready: 2 nodes"
    (a node other than 0 serves no HTTP: only its processes say it lives), and must say node 1 died."""
    node0, node1 = sim.nodes(nnodes=2, tp=4, shards=4, speed=400.0)
    wait_ready(node0)
    os.killpg(node1.pid, signal.SIGKILL)
    assert node1.wait(10) == -signal.SIGKILL and http_get(node0.port, "/health")[0] == 200
    proc = cli.popen("wait", f"local:{node0.log}", f"local:{node1.log}", "--port", str(node0.port), "--json",
                     "--timeout", "90", "--sim-gpus", f"{node0.gpu_state},{node1.gpu_state}")  # fmt: skip
    seen = follow(proc, lambda s: s["phase"] == "failed")  # the deciding line: node 1's processes are gone
    code, seen, verdict = finish(proc, seen)
    assert code == 1 and not {s["phase"] for s in seen} & NOT_READY, verdict
    members = {m["name"]: m for m in seen[-1]["members"]}
    assert members["node1"]["phase"] == "failed" and members["node0"]["phase"] == "ready", members
    assert verdict == (
        "sglang-tui wait: node1 failed: server process exited (no process of the server is left), with no failure line"
        " in the log (a dead process, not a stall)"
    )
    held = [s for s in seen if any(m["name"] == "node1" and "not seen alive" in m["reason"] for m in s["members"])]
    assert held, "node 1 was never held back for its processes"  # what it said while it looked for them


# ------------------------------------------------------------------ 2. a new launch in a running server's log


def test_a_new_launch_appended_to_a_running_servers_log_is_not_ready_until_it_is(sim: Sims, cli: Cli,
                                                                                 tmp_path: Path) -> None:  # fmt: skip
    """`launch … >> LOG` while the earlier server on the same port still answers 200: the verdict is the latest
    launch's (loading), the earlier one's 200 is "something else answers"; once the earlier server is gone and
    the new one is up, ready (its 8 shards, not the earlier one's 4)."""
    first = wait_ready(sim(tmp_path / "run", **FAST))
    second = sim(tmp_path / "run", speed=400.0, tp=2, shards=8, port=first.port, extra=("--slow", "weights=60"))
    assert second.log == first.log
    wait_for_log(second, b"Load weight begin", timeout=30)
    proc = cli.popen("wait", "local", "--log", str(first.log), "--port", str(first.port), "--json", "--timeout",
                     "120", "--sim-gpus", str(second.gpu_state))  # fmt: skip
    seen = follow(proc, lambda s: s["shards"] is not None and s["shards"]["total"] == 8
                  and "an earlier launch in the same log" in str(s["reason"]))  # fmt: skip
    assert http_get(first.port, "/health")[0] == 200  # the earlier server still answers: the deciding fact
    assert f"something else answers on port {first.port}: PID {first.pid} " in str(seen[-1]["reason"])
    assert not {s["phase"] for s in seen} & NOT_READY
    first.stop()  # the earlier server goes; the new launch binds the port once loaded
    code, seen, verdict = finish(proc, seen)
    assert code == 0, verdict
    assert seen[-1]["phase"] == "ready" and seen[-1]["shards"] == {"done": 8, "total": 8}, seen[-1]
    assert http_get(second.port, "/health")[0] == 200


# ------------------------------------------------------------------ 3. port and log of two different servers


def test_stop_with_the_port_of_one_server_and_the_log_of_another_stops_nothing(sim: Sims, cli: Cli) -> None:
    a, b = wait_ready(sim(**FAST)), wait_ready(sim(**FAST))
    out = cli("stop", "local", "--port", str(b.port), "--log", str(a.log), "--sim-gpus", str(a.gpu_state))
    assert out.returncode == 2, out.stderr
    line = out.stderr.strip()
    assert len(line.splitlines()) == 1 and f"port {b.port} is served by PID {b.pid}" in line, line
    assert f"{a.log} is written by PID {a.pid}" in line and "nothing stopped" in line, line
    assert a.alive() and b.alive() and http_get(a.port, "/health")[0] == 200 == http_get(b.port, "/health")[0]


def test_stop_with_the_log_from_config_and_nothing_on_the_typed_port_stops_nothing(sim: Sims, cli: Cli,
                                                                                  tmp_path: Path) -> None:  # fmt: skip
    """The log comes only from config.toml (`[hosts."local"] log = …`), the typed port has nothing on it: the
    log's server serves another port (its --port), so the two name different servers."""
    a = wait_ready(sim(**FAST))
    conf = tmp_path / "xdg" / "sglang-tui" / "config.toml"
    conf.parent.mkdir(parents=True)
    conf.write_text(f'[hosts."local"]\nlog = "{a.log}"\n')
    empty = free_port()
    out = cli("stop", "local", "--port", str(empty), "--sim-gpus", str(a.gpu_state),
              env={"XDG_CONFIG_HOME": str(tmp_path / "xdg")})  # fmt: skip
    assert out.returncode == 2, out.stderr
    line = out.stderr.strip()
    assert len(line.splitlines()) == 1, line
    assert f"nothing serves port {empty}, but {a.log} is written by PID {a.pid}" in line, line
    assert f"started with --port {a.port}" in line and "nothing stopped" in line, line
    assert a.alive() and http_get(a.port, "/health")[0] == 200


def test_stop_with_the_log_alone_still_stops_its_server_on_any_port(sim: Sims, cli: Cli) -> None:
    """The other side: no --port (the built-in default is no claim), the log names the server: it is stopped,
    and the words say which log, not a port nobody asked for."""
    a = wait_ready(sim(**FAST))
    out = cli("stop", "local", "--log", str(a.log), "--sim-gpus", str(a.gpu_state))
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith(f"stopped the server on local log {a.log}: "), out.stdout
    assert a.wait(10) is not None and not accepts(a.port)


# --------------------------------------------------------------------- 4. dead inside the ready hold

# An SGLang look-alike whose log is its own stdout (it writes `finished_log`, read from argv[3]), with one child
# titled as a scheduler rank. /health answers 200 once the file argv[5] exists, /model_info at once; /server_info
# (read once, inside `wait`'s ready hold) answers after 1.5 s ("live"), after its rank was SIGKILLed ("rank":
# 0.5.9 keeps its HTTP server up without it), or never, the whole server exiting ("whole").
HOLD = r"""
import json, os, signal, subprocess, sys, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

port, model, log_text, mode, gate = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5]
rank = subprocess.Popen(["sglang::scheduler_TP0"], executable=sys.executable, stdin=subprocess.PIPE)  # its title alone
rank.stdin.write(b"import time; time.sleep(3600)")  # the program on stdin, as argv holds nothing but the title
rank.stdin.close()
sys.stdout.write(open(log_text).read())
sys.stdout.flush()

class Server(BaseHTTPRequestHandler):
    def do_GET(self):
        path = self.path.split("?")[0]
        status = 200
        if path == "/server_info":
            if mode in ("rank", "whole"):
                rank.kill()
                rank.wait()
            if mode == "whole":
                os._exit(0)
            time.sleep(1.5)
            body = json.dumps({"model_path": model, "version": "0.5.9"}).encode()
        elif path == "/model_info":
            body = json.dumps({"model_path": model}).encode()
        elif path == "/health":
            body, status = b"", 200 if os.path.exists(gate) else 503
        else:
            body, status = b"", 404
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass

ThreadingHTTPServer(("127.0.0.1", port), Server).serve_forever()
"""


def _hold_server(mode: str, tmp_path: Path, spawn: Spawner, *, open_gate: bool) -> tuple[int, Path, int, Path]:
    """(port, log, the rank's pid, the gate file) of a running look-alike."""
    port = free_port()
    (tmp_path / "log.txt").write_text(finished_log(port))
    script = tmp_path / "hold.py"
    script.write_text(HOLD)
    log, gate = tmp_path / "server.log", tmp_path / "gate"
    if open_gate:
        gate.touch()
    with open(log, "wb") as out:
        server = spawn([sys.executable, str(script), str(port), MODEL, str(tmp_path / "log.txt"), mode, str(gate)],
                       stdout=out, stderr=subprocess.STDOUT)  # fmt: skip
    until_listening(port, server)
    rank = next(int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit() and _child_of(int(p.name), server.pid))
    return port, log, rank, gate


def _child_of(pid: int, parent: int) -> bool:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1]) == parent
    except (OSError, IndexError, ValueError):
        return False


def test_alive_through_the_ready_hold_is_ready(tmp_path: Path, spawn: Spawner, cli: Cli) -> None:
    """The control for the two below: the same look-alike, alive through the hold (its /server_info answers
    after 1.5 s), is ready: exit 0, the ready line last, after `wait`'s own last look."""
    port, log, rank, _ = _hold_server("live", tmp_path, spawn, open_gate=True)
    out = cli("wait", "local", "--log", str(log), "--port", str(port), "--json", "--timeout", "60")
    assert out.returncode == 0, out.stderr
    assert out.stderr.splitlines()[-1] == "sglang-tui wait: ready: the log says fired up and /health answers 200"
    assert json.loads(out.stdout.splitlines()[-1])["phase"] == "ready" and alive(rank)


@pytest.mark.parametrize(("mode", "words"), [
    ("rank", "failed once ready (error): sglang::scheduler_TP0 (pid {rank}) exited while the rest of the server runs: "
             "it cannot serve without it"),
    ("whole", "failed: server process exited (no process of the server is left), with no failure line in the log "
              "(a dead process, not a stall)"),
])  # fmt: skip
async def test_dead_inside_the_ready_hold_after_the_watch_saw_it_is_failed(mode: str, words: str, tmp_path: Path,
                                                                          spawn: Spawner) -> None:  # fmt: skip
    """Inside the hold, one scheduler rank dies while the rest of the server (and its HTTP) lives on, as in
    SGLang 0.5.9, or the whole server dies. `wait`'s own fold, in process, so that the death comes after its
    process watch saw the server: /health turns 200 only then (the gate), and the ready verdict is held."""
    import asyncio
    import io

    from tui.commands.wait import Reporter, wait_for
    from tui.core.config import WatchConfig
    from tui.sources.local import LocalHost
    from tui.sources.session import Session

    port, log, rank, gate = _hold_server(mode, tmp_path, spawn, open_gate=False)
    host = LocalHost()
    await host.connect()
    config = WatchConfig(port=port, log=str(log))
    session = Session.open(host, config, initial=config.first_state())
    out = io.StringIO()
    waiting = asyncio.ensure_future(wait_for(session, Reporter(True, out=out, err=io.StringIO()), timeout=60))
    try:
        for _ in range(600):  # until its process watch reported the rank alive (it says "starting" till then)
            if rank in dict(session.state.process_titled) or waiting.done():
                break
            await asyncio.sleep(0.05)
        assert rank in dict(session.state.process_titled), session.state.process_titled
        gate.touch()  # now /health answers 200; the rank dies when /server_info is asked, inside the hold
        found, state = await waiting
    finally:
        await host.close()
    assert found.code == 1, found.line
    assert found.line == words.format(rank=rank), found.line
    phases = {json.loads(line)["phase"] for line in out.getvalue().splitlines() if line.strip()}
    assert not phases & NOT_READY, phases  # no ready line before the failure: nothing reported after the death
    assert state.process_alive is (mode == "rank")  # the rest lives on when only the rank died


# ------------------------------------------------------------------------ 5. a retry after a crash


@pytest.mark.parametrize("opener", ["shell >>", "python append"])
def test_a_retry_that_holds_the_log_open_is_waited_for_not_the_old_traceback(opener: str, sim: Sims, cli: Cli,
                                                                            tmp_path: Path) -> None:  # fmt: skip
    """`launch >> log & wait` after a crash: the retry is alive and holds the log open with nothing written yet
    (it waits 4 s before it becomes the simulator, as SGLang imports torch), and the log's last launch is the
    crashed one. `wait` must wait for the retry, then say ready, never exit 1 on the old traceback. The shell's
    `>>` leaves the retry's file position at 0; Python's append mode (how start_sim opens it) at the end, where
    the retry's start after the log's last change tells it."""
    crashed = sim(tmp_path / "run", fault="oom-load", **FAST)
    assert crashed.wait(60) is not None
    assert b"CUDA out of memory" in crashed.log.read_bytes()
    while time.time() - crashed.log.stat().st_mtime < 0.1:  # a retry starts after the crash's last line
        time.sleep(0.01)
    # `launch >> LOG`: the shell opens the log for appending itself, then becomes the simulator 4 s later
    launch = (f'exec >> "{crashed.log}" 2>&1; ' if opener == "shell >>" else "") + 'sleep 4; exec "$@"'
    retry = sim(tmp_path / "run", port=crashed.port, prefix=["sh", "-c", launch, "sh"], **FAST)
    assert retry.log == crashed.log
    proc = cli.popen("wait", "local", "--log", str(retry.log), "--port", str(retry.port), "--json", "--timeout", "90",
                     "--sim-gpus", str(retry.gpu_state))  # fmt: skip
    seen = follow(proc, lambda s: s["phase"] != "failed")  # the first line: not the old traceback's verdict
    assert seen[-1]["phase"] == "starting" and seen[-1]["error"] is None, seen[-1]
    assert retry.log.read_bytes().count(b"server_args=") == 1  # the retry had written nothing yet
    code, seen, verdict = finish(proc, seen)
    assert code == 0, verdict
    assert "failed" not in {s["phase"] for s in seen} and seen[-1]["phase"] == "ready", verdict
    assert retry.log.read_bytes().count(b"server_args=") == 2


# --------------------------------------------------------------------- 6. behind a transparent forwarder

# A TCP relay, named as docker-proxy is (`docker run -p`): argv[0] is "docker-proxy", then docker's own flags.
RELAY = r"""
import socket, sys, threading
args = dict(zip(sys.argv[1::2], sys.argv[2::2]))
listen = socket.socket()
listen.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
listen.bind((args["-host-ip"], int(args["-host-port"])))
listen.listen(16)

def pipe(a, b):
    try:
        while True:
            data = a.recv(65536)
            if not data:
                break
            b.sendall(data)
    except OSError:
        pass
    finally:
        for s in (a, b):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

while True:
    client, _ = listen.accept()
    upstream = socket.create_connection((args["-container-ip"], int(args["-container-port"])))
    threading.Thread(target=pipe, args=(client, upstream), daemon=True).start()
    threading.Thread(target=pipe, args=(upstream, client), daemon=True).start()
"""


def _forwarder(kind: str, port: int, target: int, tmp_path: Path, spawn: Spawner,
               request: pytest.FixtureRequest) -> subprocess.Popen[bytes]:  # fmt: skip
    if kind == "socat":
        argv = ["socat", f"TCP-LISTEN:{port},bind=127.0.0.1,reuseaddr,fork", f"TCP:127.0.0.1:{target}"]
        return spawn(argv, stderr=subprocess.DEVNULL)
    if kind in ("docker-proxy", "python relay"):
        script = tmp_path / "relay.py"
        script.write_text(RELAY)
        flags = ["-proto", "tcp", "-host-ip", "127.0.0.1", "-host-port", str(port), "-container-ip", "127.0.0.1",
                 "-container-port", str(target)]  # fmt: skip
        first = "docker-proxy" if kind == "docker-proxy" else sys.executable
        return spawn([first, str(script), *flags], executable=sys.executable)
    sshd: Sshd = request.getfixturevalue("sshd")  # `ssh -L`: the real OpenSSH client through the real sshd
    argv = ["ssh", "-F", str(sshd.ssh_config), "-N", "-o", "BatchMode=yes", "-o", "ExitOnForwardFailure=yes",
            "-L", f"127.0.0.1:{port}:127.0.0.1:{target}", "testhost"]  # fmt: skip
    return spawn(argv, stderr=subprocess.DEVNULL)


@pytest.mark.parametrize("kind", ["socat", "docker-proxy", "ssh"])
def test_a_ready_server_behind_a_forwarder_is_ready_and_says_behind_what(kind: str, sim: Sims, cli: Cli,
                                                                         spawn: Spawner, tmp_path: Path,
                                                                         request: pytest.FixtureRequest) -> None:  # fmt: skip
    server = wait_ready(sim(**FAST))
    port = free_port()
    relay = _forwarder(kind, port, server.port, tmp_path, spawn, request)
    until_listening(port, relay)
    assert http_get(port, "/health")[0] == 200  # it relays
    out = cli("wait", "local", "--log", str(server.log), "--port", str(port), "--json", "--timeout", "60",
              "--sim-gpus", str(server.gpu_state))  # fmt: skip
    assert out.returncode == 0, out.stderr
    last = json.loads(out.stdout.splitlines()[-1])
    assert last["phase"] in NOT_READY, last
    name = "ssh" if kind == "ssh" else kind
    assert f"; behind {name} (pid {relay.pid})" in str(last["reason"]), last["reason"]
    # `stop --port P` with nothing but the forwarder there: nothing is the server's, so nothing is killed
    stopped = cli("stop", "local", "--port", str(port))
    assert stopped.returncode == 6 and "no server found" in stopped.stderr, stopped.stderr
    assert relay.poll() is None and server.alive() and http_get(port, "/health")[0] == 200


def test_a_relay_no_name_list_knows_is_known_by_what_it_does(sim: Sims, cli: Cli, spawn: Spawner, tmp_path: Path,
                                                             request: pytest.FixtureRequest) -> None:  # fmt: skip
    """Issue 31: a listener that is not the server's and in no name list, but answers /model_info with the log's
    model and whose relayed requests the server's log shows (our own `?from=sglang-tui` probe), is a forwarder:
    ready, "behind PID N (relay)"."""
    server = wait_ready(sim(**FAST))
    port = free_port()
    relay = _forwarder("python relay", port, server.port, tmp_path, spawn, request)
    until_listening(port, relay)
    out = cli("wait", "local", "--log", str(server.log), "--port", str(port), "--json", "--timeout", "60",
              "--sim-gpus", str(server.gpu_state))  # fmt: skip
    assert out.returncode == 0, out.stderr
    last = json.loads(out.stdout.splitlines()[-1])
    assert last["phase"] in NOT_READY and f"behind PID {relay.pid} (relay)" in str(last["reason"]), last["reason"]
    assert b"/model_info?from=sglang-tui" in server.log.read_bytes()  # the fact that decided it, in the log


def test_a_relay_to_another_server_is_still_something_else(sim: Sims, cli: Cli, spawn: Spawner, tmp_path: Path,
                                                           request: pytest.FixtureRequest) -> None:  # fmt: skip
    """The boundary: the same relay in front of another server (the same model, its own log): the watched log
    never shows our probe, so the listener is something else, never ready, said at the deciding line."""
    server, other = wait_ready(sim(**FAST)), wait_ready(sim(**FAST))
    port = free_port()
    relay = _forwarder("python relay", port, other.port, tmp_path, spawn, request)
    until_listening(port, relay)
    proc = cli.popen("wait", "local", "--log", str(server.log), "--port", str(port), "--json", "--timeout", "60",
                     "--sim-gpus", str(server.gpu_state))  # fmt: skip
    seen = follow(proc, lambda s: str(s["reason"]).startswith(f"something else answers on port {port}: PID"))
    assert f"PID {relay.pid} (" in str(seen[-1]["reason"]) and "not one of the server's processes" in str(
        seen[-1]["reason"]
    )
    assert not {s["phase"] for s in seen} & NOT_READY
    proc.kill()
