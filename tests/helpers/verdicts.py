"""Pieces the issue-17 verdict tests share (tests/test_false_verdicts.py as root, tests/test_cross_uid_verdicts.py
as another uid): a finished run's log, real HTTP servers that are not SGLang (one answers 200 to everything, one
accepts and never answers), and `wait`/`replay` run as subprocesses."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from tests.helpers.sim import ROOT
from tests.helpers.sshd import Sshd, free_port

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
    code: int
    stdout: str
    stderr: str

    def last_json(self) -> dict[str, object]:
        lines = [line for line in self.stdout.splitlines() if line.strip()]
        assert lines, f"no JSON on stdout; stderr:\n{self.stderr}"
        return json.loads(lines[-1])

    def phases(self) -> set[str]:
        return {json.loads(line)["phase"] for line in self.stdout.splitlines() if line.strip()}

    def verdict(self) -> str:
        lines = [line for line in self.stderr.splitlines() if line.startswith("sglang-tui wait: ")]
        assert lines, self.stderr
        return lines[-1]


def run_wait(sshd: Sshd | None, *args: str, timeout: float = 120, remote_python: str | None = None) -> Outcome:
    target = ["127.0.0.1", *sshd.ssh_args()] if sshd is not None else ["local"]
    if remote_python is not None:
        target += ["--remote-python", remote_python]
    proc = subprocess.run(
        [sys.executable, "-m", "tui", "wait", *target, "--json", *args],
        cwd=ROOT, capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip
    return Outcome(proc.returncode, proc.stdout, proc.stderr)


def replay_json(path: Path) -> dict[str, object]:
    proc = subprocess.run([sys.executable, "-m", "tui", "replay", str(path), "--json"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


class Listener:
    """A real server process on 127.0.0.1:port, running one of the scripts above."""

    def __init__(self, tmp_path: Path, script: str, *extra: str) -> None:
        self.port = free_port()
        path = tmp_path / f"server-{self.port}.py"
        path.write_text(script)
        self.proc = subprocess.Popen([sys.executable, str(path), str(self.port), *extra],
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)  # fmt: skip
        deadline = time.monotonic() + 20
        while not _listening(self.port):
            assert self.proc.poll() is None and time.monotonic() < deadline, "test server did not start"
            time.sleep(0.05)

    def stop(self) -> str:
        self.proc.kill()
        out, _ = self.proc.communicate(timeout=10)
        return out or ""


def _listening(port: int) -> bool:
    import socket

    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


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
