"""A small simulated PD router (`simulate --router --prefill URL[@BOOTSTRAP] --decode URL --port N --log PATH`),
shaped like sglang-router / sgl-model-gateway (`smg`): it logs its start in smg's format
(`YYYY-mm-dd HH:MM:SS  INFO smg::server: src/server.rs:NNN: …`), checks each worker's GET /health every
second and logs each change of a worker's health, and answers:

- GET /health: 200 as soon as it is up, whatever its workers' state (as the real router does: a PD router
  reports healthy while its prefill worker is still loading, sgl-project/sglang#33740);
- GET /workers: `{"workers": [{"url", "worker_type", "healthy", "bootstrap_port"}], "total": N, "healthy": K}`.

The worker-health line texts are the simulator's own (smg's exact wording differs between releases).
Also: the prefill server's bootstrap endpoint (`serve_bootstrap`), started by a prefill-mode simulator.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from dataclasses import dataclass

from tui.sim.http import Request, Response, fetch, serve
from tui.sim.procs import write_all
from tui.sim.serverargs import HOST

CHECK_INTERVAL_S = 1.0


@dataclass
class Worker:
    url: str
    kind: str  # prefill | decode | regular
    bootstrap_port: int | None = None
    healthy: bool = False
    checked: bool = False

    def hostport(self) -> tuple[str, int]:
        rest = self.url.split("://", 1)[-1].rstrip("/")
        host, _, port = rest.rpartition(":")
        return host or HOST, int(port)


def smg_line(level: str, module: str, src: str, msg: str) -> str:
    return f"{time.strftime('%Y-%m-%d %H:%M:%S')}  {level:>5} smg::{module}: src/{src}: {msg}\n"


def parse_workers(prefill: list[str], decode: list[str]) -> list[Worker]:
    workers = []
    for spec in prefill:
        url, _, boot = spec.partition("@")
        workers.append(Worker(url, "prefill", int(boot) if boot.isdigit() else 8998))
    workers += [Worker(url, "decode") for url in decode]
    return workers


class Router:
    def __init__(self, port: int, workers: list[Worker]) -> None:
        self.port = port
        self.workers = workers
        self.stop = asyncio.Event()

    def say(self, level: str, module: str, src: str, msg: str) -> None:
        write_all(2, smg_line(level, module, src, msg))

    async def handle(self, request: Request) -> Response:
        if request.path in ("/health", "/liveness"):
            return Response(200, b"OK", "text/plain")
        if request.path == "/readiness":
            ok = any(w.healthy and w.kind == "prefill" for w in self.workers) and any(
                w.healthy and w.kind == "decode" for w in self.workers)  # fmt: skip
            return Response.json({"status": "ready" if ok else "not ready"}, 200 if ok else 503)
        if request.path == "/workers":
            items = [{"url": w.url, "worker_type": w.kind, "healthy": w.healthy, "bootstrap_port": w.bootstrap_port}
                     for w in self.workers]  # fmt: skip
            healthy = sum(1 for w in self.workers if w.healthy)
            return Response.json({"workers": items, "total": len(items), "healthy": healthy})
        return Response.json({"detail": "Not Found"}, 404)

    async def check(self, worker: Worker) -> None:
        try:
            status, _ = await fetch(*worker.hostport(), "GET", "/health", timeout=3.0)
        except (OSError, asyncio.TimeoutError, ValueError, IndexError):
            status = 0
        healthy = status == 200
        if healthy != worker.healthy or not worker.checked:
            if healthy:
                self.say("INFO", "core::worker_manager", "core/worker_manager.rs:412",
                         f"Worker {worker.url} ({worker.kind}) is healthy")  # fmt: skip
            else:
                why = f"status {status}" if status else "connection refused"
                self.say("WARN", "core::worker_manager", "core/worker_manager.rs:431",
                         f"Worker {worker.url} ({worker.kind}) health check failed: {why}")  # fmt: skip
        worker.healthy, worker.checked = healthy, True

    async def run(self) -> int:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self.stop.set)
        prefill = [(w.url, w.bootstrap_port) for w in self.workers if w.kind == "prefill"]
        decode = [w.url for w in self.workers if w.kind == "decode"]
        mode = f'PrefillDecode {{ prefill_urls: [{", ".join(f"({u!r}, Some({b}))" for u, b in prefill)}], ' \
               f'decode_urls: {decode!r} }}'.replace("'", '"')  # fmt: skip
        self.say("INFO", "server", "server.rs:794", f"Starting router on {HOST}:{self.port} | mode: {mode}")
        self.say("INFO", "server", "server.rs:833", f"Initializing workers for routing mode: {mode}")
        server = await serve(HOST, self.port, self.handle, lambda _r, _s: None)
        self.say("INFO", "server", "server.rs:875", f"Workers initialized: {len(self.workers)} total, 0 healthy")
        while not self.stop.is_set():
            await asyncio.gather(*(self.check(w) for w in self.workers))
            try:
                await asyncio.wait_for(self.stop.wait(), CHECK_INTERVAL_S)
            except asyncio.TimeoutError:
                pass
        server.close()
        self.say("INFO", "server", "server.rs:910", "Shutting down router")
        return 0


def run_router(log: str, port: int, prefill: list[str], decode: list[str]) -> int:
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    sys.stdout.flush()
    sys.stderr.flush()
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    return asyncio.run(Router(port, parse_workers(prefill, decode)).run())


async def serve_bootstrap(port: int) -> asyncio.Server:
    """The prefill server's bootstrap endpoint (decode servers ask it where to fetch KV from)."""

    async def handle(request: Request) -> Response:
        if request.path in ("/health", "/route"):
            return Response.json({"status": "ok"} if request.path == "/health" else {})
        return Response.json({"detail": "Not Found"}, 404)

    return await serve(HOST, port, handle, lambda _r, _s: None)
