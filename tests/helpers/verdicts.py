"""Pieces the issue-17 verdict tests share (tests/test_false_verdicts*.py as root, tests/test_cross_uid_verdicts.py
as another uid): a finished run's log, real HTTP servers that are not SGLang (one answers 200 to everything, one
accepts and never answers, one looks like SGLang), and `wait`/`replay` run through the `cli` fixture, to the
verdict or followed line by line (`follow_wait`)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.helpers.ports import accepts
from tests.helpers.processes import Cli, Spawner
from tests.helpers.sim import SimServer
from tests.helpers.sshd import Sshd, free_port
from tui.core.exitcodes import EXIT_TIMEOUT

MODEL = "org/test-model"


def finished_log(port: int, *, sigterm: bool = False, model: str = MODEL) -> str:
    """A 0.5.x startup that reached fired up (and, with sigterm, was then stopped by someone's SIGTERM)."""
    ts = "[2025-11-29 10:0{}]"
    lines = [
        (
            "0:00",
            f"server_args=ServerArgs(model_path='{model}', tokenizer_path='{model}', tp_size=1, port={port}, host='127.0.0.1')",
        ),
        ("0:09", "Init torch distributed begin."),
        ("0:12", "Init torch distributed ends. elapsed=2.71 s, mem usage=1.02 GB"),
        ("0:12", "Load weight begin. avail mem=138.05 GB"),
        ("1:23", "Load weight end. elapsed=70.12 s, type=LlamaForCausalLM, avail mem=121.46 GB, mem usage=16.56 GB."),
        ("1:26", "KV Cache is allocated. dtype: torch.bfloat16, #tokens: 2490368, K size: 47.50 GB, V size: 47.50 GB"),
        ("1:26", "Memory pool end. avail mem=25.45 GB"),
        (
            "1:58",
            "max_total_num_tokens=2490368, chunked_prefill_size=8192, max_prefill_tokens=16384, max_running_requests=48, context_len=131072, available_gpu_mem=23.07 GB",
        ),
        ("2:05", "INFO:     Started server process [4242]"),
        ("2:05", "INFO:     Waiting for application startup."),
        ("2:05", "INFO:     Application startup complete."),
        ("2:05", f"INFO:     Uvicorn running on http://127.0.0.1:{port} (Press CTRL+C to quit)"),
        ("2:07", "The server is fired up and ready to roll!"),
    ]
    if sigterm:
        lines += [
            ("5:00", "SIGTERM received. signum=None frame=None. Draining requests and shutting down..."),
            ("5:02", "INFO:     Shutting down"),
            ("5:02", "INFO:     Waiting for application shutdown."),
            ("5:02", "INFO:     Application shutdown complete."),
        ]
    return "".join(f"{ts.format(t)} {msg}\n" for t, msg in lines)


FOREIGN = r"""
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

class Any200(BaseHTTPRequestHandler):
    def do_GET(self):
        body = b"<html>hello from something else</html>\x00\xff"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        sys.stdout.write(self.path + "\n")
        sys.stdout.flush()

ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Any200).serve_forever()
"""

# Accepts, reads the request, never answers; writes "max_in_flight N" for /health each time it changes.
SILENT = r"""
import socket, sys, threading
port, report = int(sys.argv[1]), sys.argv[2]
lock = threading.Lock()
state = {"now": 0, "max": 0, "health": 0}

def hold(conn):
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(4096)
        if not chunk:
            return
        data += chunk
    is_health = data.split(b" ")[1].split(b"?")[0] == b"/health"  # the path, as SGLang routes it (the query aside)
    with lock:
        if is_health:
            state["now"] += 1
            state["health"] += 1
            state["max"] = max(state["max"], state["now"])
        with open(report, "w") as f:
            f.write("max_in_flight %d health_requests %d\n" % (state["max"], state["health"]))
    try:
        while conn.recv(4096):
            pass
    finally:
        with lock:
            if is_health:
                state["now"] -= 1

s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", port))
s.listen(16)
while True:
    conn, _ = s.accept()
    threading.Thread(target=hold, args=(conn,), daemon=True).start()
"""


@dataclass
class Outcome:
    """What one `wait --json` run ended with: its exit code, its JSON states (stdout) and its lines (stderr)."""

    code: int
    stdout: str
    stderr: str

    def states(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.stdout.splitlines() if line.strip()]

    def last_json(self) -> dict[str, Any]:
        states = self.states()
        assert states, f"no JSON on stdout; stderr:\n{self.stderr}"
        return states[-1]

    def phases(self) -> set[str]:
        return {state["phase"] for state in self.states()}

    def verdict(self) -> str:
        lines = [line for line in self.stderr.splitlines() if line.startswith("sglang-tui wait: ")]
        assert lines, self.stderr
        return lines[-1]

    def says(self, *texts: str) -> bool:
        """Whether the verdict line names every one of these."""
        lines = [line for line in self.stderr.splitlines() if line.startswith("sglang-tui wait: ")]
        return bool(lines) and all(text in lines[-1] for text in texts)


def wait_target(sshd: Sshd | None, remote_python: str | None = None) -> list[str]:
    """`local`, or 127.0.0.1 through this sshd (as its user), for `wait`/`stop`."""
    target = ["127.0.0.1", *sshd.ssh_args()] if sshd is not None else ["local"]
    return target + (["--remote-python", remote_python] if remote_python is not None else [])


def run_wait(cli: Cli, sshd: Sshd | None, *args: str, timeout: float = 120, remote_python: str | None = None,
             hosts: tuple[str, ...] = ()) -> Outcome:  # fmt: skip
    """`wait TARGET --json ARGS` run to its verdict (hosts: `HOST:LOG …` of a multi-node wait, for TARGET)."""
    target = list(hosts) if hosts else wait_target(sshd, remote_python)
    proc = cli("wait", *target, "--json", *args, timeout=timeout)
    return Outcome(proc.returncode, proc.stdout, proc.stderr)


def wait_decided(cli: Cli, sshd: Sshd | None, *args: str, timeout: float, decides: Callable[[Outcome], bool],
                 remote_python: str | None = None, hosts: tuple[str, ...] = (), longest: float = 64) -> Outcome:  # fmt: skip
    """`wait --json ARGS --timeout T` where only a timeout can be the verdict: T is a few seconds past the state
    that decides it (`decides`, read off the outcome: what the verdict names). A loaded machine can reach that
    state late; a run that timed out short of it, having said nothing ready, is the same experiment cut short,
    and runs again with twice the timeout (up to `longest`). A ready or any other exit is returned at once."""
    while True:
        out = run_wait(cli, sshd, *args, "--timeout", f"{timeout:g}", remote_python=remote_python, hosts=hosts)
        if out.code != EXIT_TIMEOUT or out.phases() & {"ready", "serving"} or decides(out) or timeout * 2 > longest:
            return out
        timeout *= 2


class Followed:
    """A `wait --json` followed line by line: read until a state decides what the test does next, then finish."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.proc = proc
        self.read: list[dict[str, Any]] = []

    def until(self, decides: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        """The first state (from here on) for which `decides` holds; fails if the wait ends before one."""
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.strip():
                self.read.append(json.loads(line))
                if decides(self.read[-1]):
                    return self.read[-1]
        code = self.proc.wait(30)
        err = self.proc.stderr.read() if self.proc.stderr is not None else ""
        raise AssertionError(f"wait exited {code} before the state the test waits for; stderr:\n{err[-3000:]}")

    def finish(self, timeout: float = 120) -> Outcome:
        """The rest, to the verdict: every state read (before and after `until`) is in the Outcome's stdout."""
        out, err = self.proc.communicate(timeout=timeout)
        before = "".join(json.dumps(state) + "\n" for state in self.read)
        return Outcome(self.proc.returncode, before + out, err)


def follow_wait(cli: Cli, sshd: Sshd | None, *args: str, remote_python: str | None = None) -> Followed:
    return Followed(cli.popen("wait", *wait_target(sshd, remote_python), "--json", *args))


@contextmanager
def paused(server: SimServer) -> Iterator[None]:
    """The simulator's processes stopped (SIGSTOP to its process group), continued after: its schedule stands
    still meanwhile (tui.sim.rank). A test pauses it at the start of its load while the wait catches up and the
    log is changed under it, so the change lands mid-load and is noticed first however slow the host is."""
    os.killpg(server.pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.killpg(server.pid, signal.SIGCONT)


def replay_json(cli: Cli, path: Path) -> dict[str, Any]:
    proc = cli("replay", path, "--json", timeout=60)
    assert proc.returncode == 0, proc.stderr
    result: dict[str, Any] = json.loads(proc.stdout)
    return result


class Listener:
    """A real server process on 127.0.0.1:port, running one of the scripts above (killed at teardown too)."""

    def __init__(self, spawn: Spawner, where: Path, script: str, *extra: str) -> None:
        self.port = free_port()
        path = where / f"server-{self.port}.py"
        path.write_text(script)
        path.chmod(0o644)
        self.proc = spawn([sys.executable, str(path), str(self.port), *extra], stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, text=True)  # fmt: skip
        deadline = time.monotonic() + 20
        while not accepts(self.port):
            assert self.proc.poll() is None and time.monotonic() < deadline, "test server did not start"
            time.sleep(0.05)

    def stop(self) -> str:
        """Kill it; the request paths it logged."""
        self.proc.kill()
        out, _ = self.proc.communicate(timeout=10)
        return out or ""


# An SGLang look-alike: /health 200 (empty body, as SGLang's), and /model_info, /get_model_info, /server_info
# naming the model given as argv[2]; with argv[3] = N, it exits after answering N /health requests.
LOOKALIKE = r"""
import json, os, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

port, model = int(sys.argv[1]), sys.argv[2]
budget = [int(sys.argv[3]) if len(sys.argv) > 3 else -1]

class LookAlike(BaseHTTPRequestHandler):
    def do_GET(self):
        path = self.path.split("?")[0]
        if path == "/health":
            body = b""
        elif path in ("/model_info", "/get_model_info"):
            body = json.dumps({"model_path": model, "tokenizer_path": model, "is_generation": True}).encode()
        elif path in ("/server_info", "/get_server_info"):
            body = json.dumps({"model_path": model, "port": port, "version": "0.5.23"}).encode()
        else:
            self.send_response(404)
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        self.wfile.flush()
        if path == "/health" and budget[0] > 0:
            budget[0] -= 1
            if budget[0] == 0:
                os._exit(0)

    def log_message(self, *args):
        sys.stdout.write(self.path + "\n")
        sys.stdout.flush()

ThreadingHTTPServer(("127.0.0.1", port), LookAlike).serve_forever()
"""
