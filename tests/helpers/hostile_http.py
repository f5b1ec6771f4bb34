"""A hostile HTTP server, run as a process of its own (`python -m tests.helpers.hostile_http`): it answers in
SGLang's shapes where asked to, and otherwise as a broken or hostile peer would. Not the simulator: the
simulator is SGLang as it is; this is what SGLang never sends.

    python -m tests.helpers.hostile_http --sent FILE [--metrics drip|huge] [--generate ok|longline|infinity|
        error-huge] [--server-info huge] [--model-info huge] [--health drip] [--workers huge]

It prints its port on the first line of stdout. Each answer it ends (or that the client ends) appends one line
`PATH BYTES` to the --sent file: the bytes the kernel took from it, which is what a client that stopped
reading at its cap can have cost it at most."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

HUGE = 2 << 30  # the red team's 2 GB bodies, made on the fly (never held)
BLOCK = b"x" * (1 << 20)
TOKENS = 8


def _chunk(text: str, tokens: int | str, finish: bool = False) -> bytes:
    meta: dict[str, object] = {"completion_tokens": tokens, "spec_verify_ct": 4}
    if finish:
        meta["finish_reason"] = {"type": "length", "length": TOKENS}
    body = json.dumps({"text": text, "meta_info": meta})
    if isinstance(tokens, str):  # a literal that json.dumps cannot write: Infinity, NaN
        body = body.replace(json.dumps(tokens), tokens)
    return f"data: {body}\n\n".encode()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    opts: argparse.Namespace

    def log_message(self, *args: object) -> None:
        pass

    def _send_head(self, status: int = 200, kind: str = "application/json", length: int | None = None) -> None:
        self.send_response(status)
        self.send_header("content-type", kind)
        if length is not None:
            self.send_header("content-length", str(length))
        else:
            self.send_header("connection", "close")
        self.end_headers()

    def _write(self, data: bytes) -> bool:
        try:
            self.wfile.write(data)
            self.wfile.flush()
        except OSError:  # the client went away: what it read is what it cost
            return False
        self.sent += len(data)
        return True

    def _huge(self, prefix: bytes = b"") -> None:
        self._send_head(200, length=HUGE)
        self._write(prefix)
        while self.sent < HUGE and self._write(BLOCK):
            pass

    def _drip(self) -> None:
        self._send_head(200, kind="text/plain")
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline and self._write(b"#"):
            time.sleep(0.5)

    def _json(self, obj: object) -> None:
        data = json.dumps(obj).encode()
        self._send_head(200, length=len(data))
        self._write(data)

    def do_GET(self) -> None:  # noqa: N802
        self.sent = 0
        path = self.path.split("?", 1)[0]
        opts = self.opts
        try:
            if path == "/health" and opts.health == "drip":
                self._drip()
            elif path == "/health":
                self._send_head(200, length=0)
            elif path == "/v1/models":
                self._json({"object": "list", "data": [{"id": "hostile"}]})
            elif path in ("/model_info", "/get_model_info"):
                self._huge(b'{"model_path": "') if opts.model_info == "huge" else self._json({"model_path": "hostile"})
            elif path in ("/server_info", "/get_server_info"):
                self._huge(b'{"version": "') if opts.server_info == "huge" else self._json({"version": "0.5.23"})
            elif path == "/workers":
                self._huge(b'{"workers": [') if opts.workers == "huge" else self._json({"workers": []})
            elif path == "/metrics" and opts.metrics == "drip":
                self._drip()
            elif path == "/metrics" and opts.metrics == "huge":
                self._huge(b"# HELP sglang:spec_accept_length\n")
            elif path == "/metrics":
                data = b"sglang:spec_accept_length 3.0\n"
                self._send_head(200, kind="text/plain", length=len(data))
                self._write(data)
            else:
                self._send_head(404, length=0)
        finally:
            self._account(path)

    def do_POST(self) -> None:  # noqa: N802
        self.sent = 0
        path = self.path.split("?", 1)[0]
        self.rfile.read(int(self.headers.get("content-length") or 0))
        mode = self.opts.generate
        try:
            if path != "/generate":
                self._send_head(404, length=0)
            elif mode == "error-huge":
                self.send_response(500)
                self.send_header("content-length", str(HUGE))
                self.end_headers()
                while self.sent < HUGE and self._write(BLOCK):
                    pass
            elif mode == "longline":  # one `data:` line that never ends (the red team's 100 MB line, and more)
                self._send_head(200, kind="text/event-stream")
                if self._write(b'data: {"text": "'):
                    while self.sent < HUGE and self._write(BLOCK):
                        pass
            elif mode == "silent":  # the stream's headers, then nothing: only the client's time cap ends it
                self._send_head(200, kind="text/event-stream")
                while self._write(b": \n"):  # an SSE comment now and then notices the client gone
                    time.sleep(0.5)
            elif mode == "infinity":
                self._send_head(200, kind="text/event-stream")
                self._write(_chunk("hi", 1) + _chunk("hi there", "Infinity", finish=True) + b"data: [DONE]\n\n")
            else:
                self._send_head(200, kind="text/event-stream")
                for i in range(1, TOKENS + 1):
                    self._write(_chunk("tok " * i, i, finish=i == TOKENS))
                self._write(b"data: [DONE]\n\n")
        finally:
            self._account(path)

    def _account(self, path: str) -> None:
        with open(self.opts.sent, "a") as f:
            f.write(f"{path} {self.sent}\n")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sent", required=True)
    for name in ("--metrics", "--generate", "--server-info", "--model-info", "--health", "--workers"):
        parser.add_argument(name, default="ok")
    Handler.opts = parser.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    print(server.server_address[1], flush=True)
    try:
        server.serve_forever()
    finally:
        sys.stdout.flush()


if __name__ == "__main__":
    main()


# ------------------------------------------------------------------------------------------- for the tests


@dataclass
class Hostile:
    """A running hostile server: its port, and what it sent (the --sent file)."""

    port: int
    sent_file: Path

    def sent(self, path: str, timeout: float = 30.0) -> int:
        """The bytes the answer to `path` cost, once that answer has ended (waited for: the server notices the
        client gone at its next write)."""
        deadline = time.monotonic() + timeout
        while True:
            found = self.sent_file.read_text() if self.sent_file.exists() else ""
            sizes = [int(n) for p, n in (line.split() for line in found.splitlines()) if p == path]
            if sizes:
                return max(sizes)
            if time.monotonic() > deadline:
                raise AssertionError(f"no answer to {path} ended in {timeout} s; sent: {found!r}")
            time.sleep(0.05)


def start(spawn: Callable[..., subprocess.Popen[str]], where: Path, **modes: str) -> Hostile:
    """Start the server through the `spawn` fixture (a process of its own, stopped at teardown), its files in
    `where`; returns once it listens."""
    root = Path(__file__).resolve().parent.parent.parent
    sent = where / "sent.txt"
    flags = [x for k, v in modes.items() for x in (f"--{k.replace('_', '-')}", v)]
    proc = spawn([sys.executable, "-m", "tests.helpers.hostile_http", "--sent", str(sent), *flags], cwd=root,
                 stdout=subprocess.PIPE, text=True)  # fmt: skip
    assert proc.stdout is not None
    return Hostile(int(proc.stdout.readline()), sent)
