"""The simulated server's main process: the launcher, tokenizer side and HTTP server of an SGLang launch.

It logs server_args, spawns one scheduler child per TP rank plus a detokenizer, waits until every rank
reports ready (or one fails), then starts HTTP on 127.0.0.1:PORT, runs SGLang's warmup against itself and
logs "fired up". Failures follow SGLang's chains: a scheduler exception arrives as SIGQUIT and the whole tree
is SIGKILLed (this process included); a rank that dies silently is reported by the launcher, which kills
the children and exits 1; a taken port ends uvicorn with exit code 3. With `--forkserver` the children are
started by a forkserver instead (tui/sim/forkserver.py), signalled by pid, their exits reported by it.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Protocol

from tui.sim import faults, forkserver, gpustate, procs, script
from tui.sim.api import Api
from tui.sim.clock import SimClock
from tui.sim.cluster import NodeLink
from tui.sim.engine import Engine
from tui.sim.http import PHRASES, Request, fetch, serve
from tui.sim.logformat import LogFormat
from tui.sim.memory import RankMemory
from tui.sim.params import SimParams
from tui.sim.rank import title
from tui.sim.serverargs import server_args_fields, server_info, startup_time_answer, url_host

WARMUP_TEXT = "The capital city of France is"
BACKGROUND_CLIENT = "10.0.0.7"
WARMUP_MIN_REAL_S = 0.25
EPLB_SECONDS = 1.5  # simulated seconds one EPLB rebalance takes (moving experts between GPUs)
SPAWN_TIMEOUT_S = 30.0


class Child(Protocol):
    """A rank or the detokenizer: a child process (Popen), or one a forkserver started (forkserver.ForkedChild)."""

    pid: int

    def poll(self) -> int | None: ...

    def send_signal(self, sig: int, /) -> None: ...


class Main:
    """One simulated launch, run by `run()` on the main process's event loop."""

    def __init__(self, params: SimParams) -> None:
        self.p = params
        self.fmt = LogFormat(params.fmt, params.tp)
        self.clock = SimClock(params.t0, params.speed, backdate=params.backdate)
        procs.backdate_writes(params.backdate)
        self.children: list[Child] = []
        self.ranks: list[Child] = []
        self.up: set[int] = set()
        self.ready: set[int] = set()
        self.go_fds: list[int] = []
        self.barriers: dict[str, set[int]] = {}
        self.pipe_buf = b""
        self.all_up = asyncio.Event()
        self.all_ready = asyncio.Event()
        self.stop = asyncio.Event()
        self.failed: asyncio.Future[int] | None = None
        self.http: asyncio.Server | None = None
        mem = RankMemory(params.tp, params.speculative is not None)
        self.engine = Engine(self.fmt, self.clock, self.err, speculative=params.speculative is not None,
                             max_tokens=mem.tokens, seed=params.seed, accept_len=params.accept_len)  # fmt: skip
        self.startup_time: dict[str, object] | None = None  # SGLang 0.5.23's /server_info `startup_time`
        self.api = Api(params, self.engine, lambda: server_info(params, self.engine, self.startup_time), self.say)
        self.uvicorn_up = False
        self.started_warmup = 0.0
        self.terms = 0
        self.stopping = False
        self.local = len(params.local_ranks)  # this node's ranks (all of them on a single node)
        self.link: NodeLink | None = None
        self.bootstrap: asyncio.Server | None = None
        if params.nnodes > 1:
            self.link = NodeLink(params, lambda _name: self.tell_ranks("go"), self.on_shutdown_broadcast,
                                 self.on_head_lost)  # fmt: skip

    # ------------------------------------------------------------------------------------------ writing
    def err(self, text: str) -> None:
        procs.write_all(2, text)

    def out(self, text: str) -> None:
        procs.write_all(1, text)

    def say(self, msg: str | None) -> None:
        if msg is not None:
            self.err(self.fmt.line(self.clock.now(), msg))

    def uv(self, msg: str, level: str = "INFO") -> None:
        self.err(self.fmt.uvicorn(self.clock.now(), msg, level))

    def access(self, request: Request, status: int) -> None:
        path = request.path + (f"?{request.query}" if request.query else "")
        self.out(
            self.fmt.access(self.clock.now(), request.client, request.method, path, status, PHRASES.get(status, ""))
        )

    async def sleep_until(self, at: float) -> None:
        await asyncio.sleep(self.clock.wait_for(at))

    # ------------------------------------------------------------------------------------------ children
    def spawn_children(self) -> int:
        """Start the ranks and the detokenizer; returns the read end of the pipe they report on."""
        read_fd, write_fd = os.pipe()
        base = {"params": self.p.to_json(), "parent": os.getpid()}
        fork = self.forkserver_address()
        for rank in self.p.local_ranks:
            go_read, go_write = os.pipe()
            payload = {**base, "rank": rank, "ready_fd": write_fd, "go_fd": go_read}
            name = title(rank, self.p.tp)
            proc: Child = (
                forkserver.request(fork, name, "rank", payload, {"ready_fd": write_fd, "go_fd": go_read})
                if fork
                else procs.spawn(name, "rank", payload, pass_fds=(write_fd, go_read))
            )
            os.close(go_read)
            self.go_fds.append(go_write)
            self.ranks.append(proc)
            self.children.append(proc)
        if self.p.node_rank == 0:  # non-zero nodes run no tokenizer or detokenizer
            detok = "sglang::detokenizer"
            self.children.append(
                forkserver.request(fork, detok, "detok", base, {}) if fork else procs.spawn(detok, "detok", base)
            )
        os.close(write_fd)
        return read_fd

    def forkserver_address(self) -> str | None:
        """SGLANG_EARLY_FORKSERVER=1 (`--forkserver`): where the children are forked from; None: spawned here."""
        if self.p.forkserver == "private":
            return forkserver.start_private()
        if self.p.forkserver == "daemon":
            return forkserver.use_daemon(forkserver.record_path(self.p.gpu_state), self.err)
        return None

    async def start_ranks(self) -> None:
        """Once every rank is up (or after SPAWN_TIMEOUT_S), resume the clock at the spawn and let them go."""
        try:
            await asyncio.wait_for(self.all_up.wait(), SPAWN_TIMEOUT_S)
        except asyncio.TimeoutError:
            pass  # a rank that never came up is reported by watch_ranks
        self.clock.resume_at(script.SPAWN_AT)
        self.tell_ranks(f"{self.clock.real0!r}")

    def tell_ranks(self, line: str) -> None:
        for fd in self.go_fds:
            try:
                os.write(fd, f"{line}\n".encode())
            except OSError:
                pass  # that rank is already gone

    def kill_children(self, sig: int = signal.SIGKILL) -> None:
        self.stopping = True  # what follows is our doing, not a crash for watch_ranks to report
        for proc in self.children:
            if proc.poll() is None:
                try:
                    proc.send_signal(sig)
                except ProcessLookupError:
                    pass

    def kill_tree_and_self(self) -> None:
        """SGLang's kill_process_tree(os.getpid()): SIGKILL every child, then this process."""
        self.say(self.fmt.kill_tree(os.getpid(), True))
        self.kill_children()
        os.kill(os.getpid(), signal.SIGKILL)

    def on_ready_pipe(self, fd: int) -> None:
        try:
            data = os.read(fd, 4096)
        except BlockingIOError:
            return
        if not data:
            asyncio.get_running_loop().remove_reader(fd)
            return
        self.pipe_buf += data
        *lines, self.pipe_buf = self.pipe_buf.split(b"\n")
        for line in (raw.decode() for raw in lines if raw.strip()):
            what, rank, *rest = line.split() + [""]
            if what == "at":  # a rank reached a barrier; release all when the last one arrives
                arrived = self.barriers.setdefault(rest[0], set())
                arrived.add(int(rank))
                if len(arrived) == self.local:
                    if self.link is not None:
                        self.link.arrived(rest[0])  # a collective: every node's ranks must get here
                    else:
                        self.tell_ranks("go")
            elif what in ("up", "ready"):
                (self.ready if what == "ready" else self.up).add(int(rank))
        if len(self.up) >= self.local:
            self.all_up.set()
        if len(self.ready) >= self.local and not self.all_ready.is_set():
            self.all_ready.set()
            if self.link is not None:
                self.link.local_ready()

    async def watch_ranks(self) -> None:
        """Notice a scheduler that died without a traceback (polled every 5 s, like 0.5.14+): during init the
        launcher gives up; once serving, 0.5.14+'s subprocess watchdog kills the tree, while older versions
        keep serving without it and only /health tells."""
        while not self.stopping:
            for rank, proc in enumerate(self.ranks):
                code = proc.poll()
                if code is None or code == 0:  # 0: it raised and SIGQUIT us; that handler owns the failure
                    continue
                if not self.all_ready.is_set():
                    self.rank_died(rank, code)
                elif self.fmt.new:
                    self.say(f"Subprocess scheduler_{rank} (pid={proc.pid}) crashed with exit code {code}. "
                             "Triggering SIGQUIT for cleanup...")  # fmt: skip
                    self.on_sigquit()
                else:
                    self.api.scheduler_dead = True
                return
            await asyncio.sleep(max(self.clock.real(5.0), 0.05))

    def rank_died(self, rank: int, code: int) -> None:
        self.say(self.fmt.kill_tree(os.getpid(), False))
        self.kill_children()
        self.err(faults.rank_dead(self.fmt, rank, code))
        self.finish(1)

    def finish(self, code: int) -> None:
        if self.failed is not None and not self.failed.done():
            self.failed.set_result(code)

    # ----------------------------------------------------------------------------------------- signals
    def on_sigquit(self) -> None:
        if self.api.up:
            self.say("SIGQUIT received. signum=None, frame=None. It usually means one child failed.")
        else:
            self.say("Received sigquit from a child process. It usually means the child failed.")
        self.kill_tree_and_self()

    def on_term(self, sig: int) -> None:
        self.terms += 1
        if self.p.node_rank > 0 and self.all_ready.is_set():
            # SGLang's non-zero nodes: only rank 0's ShutdownReq broadcast stops the schedulers
            self.say(f"SIGTERM received on node_rank {self.p.node_rank}; waiting for the rank-0 ShutdownReq "
                     "broadcast to stop the schedulers.")  # fmt: skip
            return
        if self.p.fault == "orphans" or self.terms > 1 or not self.uvicorn_up:
            self.die_by(sig)
        self.stop.set()

    def die_by(self, sig: int) -> None:
        """Die as an unhandled signal would. Children die through their parent-death signal; orphans don't."""
        if self.p.fault != "orphans":
            self.kill_children()
        signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)

    # ------------------------------------------------------------------------------------------- phases
    async def run(self) -> int:
        loop = asyncio.get_running_loop()
        self.failed = loop.create_future()
        loop.add_signal_handler(signal.SIGQUIT, self.on_sigquit)
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            loop.add_signal_handler(sig, self.on_term, sig)
        if self.p.gpu_state:
            gpustate.write_devices(self.p.gpu_state, max(self.local, 8))
            gpustate.sweep_dead(self.p.gpu_state)
        self.err(self.fmt.preamble(self.clock.now(), self.p.speculative is not None))
        if self.p.fault == "gated":  # the model's config cannot be read: no launch line, no rank, exit 1
            self.err(faults.gated_repo(self.p.model_path))
            return 1
        await self.sleep_until(script.SPAWN_AT)
        self.err(self.fmt.server_args(self.clock.now(), server_args_fields(self.p)))
        if self.link is not None:
            await self.link.start()
        read_fd = self.spawn_children()
        if self.p.disaggregation_mode == "prefill" and self.p.node_rank == 0:
            await self.start_bootstrap()  # node 0's only, as SGLang's (its tokenizer manager starts it)
        os.set_blocking(read_fd, False)
        loop.add_reader(read_fd, self.on_ready_pipe, read_fd)
        watcher = loop.create_task(self.watch_ranks())
        await self.start_ranks()
        main = loop.create_task(self.after_ranks_ready())
        done, _ = await asyncio.wait({self.failed, main}, return_when=asyncio.FIRST_COMPLETED)
        watcher.cancel()
        if self.failed.done():
            main.cancel()
            return self.failed.result()
        return main.result()

    async def after_ranks_ready(self) -> int:
        await self.all_ready.wait()
        if self.link is not None:
            if self.p.node_rank > 0:
                return await self.follow()
            await self.link.all_ready.wait()  # node 0 serves only once every node loaded and captured
        # printed in real seconds: the schedule's per-phase times compressed by speed, totals as measured
        timings = {k: v / self.p.speed for k, v in script.startup_timings(self.p).items()}
        elapsed = self.clock.elapsed()
        graphs = {"prefill": timings.get("target_prefill", 0.0), "decode": timings.get("target_decode", 0.0),
                  "target_verify": timings.get("target_verify", 0.0), "draft_decode": timings.get("draft_decode", 0.0),
                  "draft_extend": timings.get("draft_extend", 0.0)}  # fmt: skip
        self.say(self.fmt.startup_timings(timings.get("load_weight", 0.0), timings.get("kv_cache_allocation", 0.0),
                                          (elapsed - script.INIT_AT) / self.p.speed, graphs,
                                          (elapsed - script.SPAWN_AT) / self.p.speed))  # fmt: skip
        if self.fmt.new:  # 0.5.23: the same numbers in /server_info (engine.py `_set_startup_time`)
            self.startup_time = startup_time_answer(
                timings.get("load_weight", 0.0),
                timings.get("kv_cache_allocation", 0.0),
                (elapsed - script.INIT_AT) / self.p.speed,
                graphs,
                (elapsed - script.SPAWN_AT) / self.p.speed,
            )
        await asyncio.sleep(self.clock.real(0.6))
        self.uv(f"Started server process [{os.getpid()}]")
        self.uv("Waiting for application startup.")
        self.say(self.fmt.sampling_defaults())
        if self.p.fmt == "0.5.9":
            self.say(self.fmt.sampling_defaults())
        self.uv("Application startup complete.")
        try:
            if self.p.fault == "port-in-use":
                raise OSError(98, "address already in use")
            self.http = await serve(self.p.host, self.p.port, self.api.handle, self.access)
        except OSError as err:
            return self.bind_failed(err)
        self.uvicorn_up = True
        self.uv(f"Uvicorn running on http://{url_host(self.p.host)}:{self.p.port} (Press CTRL+C to quit)")
        self.started_warmup = self.clock.elapsed()
        warmup = asyncio.get_running_loop().create_task(self.warmup())
        await self.stop.wait()
        warmup.cancel()
        return await self.shutdown()

    def bind_failed(self, err: OSError) -> int:
        self.uv(faults.bind_error(self.p.host, self.p.port, err.errno or 98, (err.strerror or "").lower()), "ERROR")
        self.uv("Waiting for application shutdown.")
        self.uv("Application shutdown complete.")
        self.say(self.fmt.kill_tree(os.getpid(), False))
        self.kill_children()
        return 3

    async def warmup(self) -> None:
        """SGLang's warmup thread: wait 1 s, GET /model_info, POST /generate (8 tokens), then "fired up".

        The wait lasts at least WARMUP_MIN_REAL_S so that, even at test speeds, a watcher can see the state
        "HTTP up, /health 503" that a real launch holds for seconds."""
        await asyncio.sleep(max(self.clock.real(1.0), WARMUP_MIN_REAL_S))
        self.clock.resume_at(self.started_warmup + 1.0)  # the extra real wait is not simulated time
        try:
            await fetch(self.p.host, self.p.port, "GET", "/model_info")
            self.api.fail_generate = self.p.fault == "warmup-fail"
            body = {"text": WARMUP_TEXT, "sampling_params": {"temperature": 0, "max_new_tokens": 8}}
            status, _ = await fetch(self.p.host, self.p.port, "POST", "/generate", body, timeout=600)
        except (OSError, asyncio.TimeoutError):
            status = 0
        if status != 200:
            self.say("Initialization failed. warmup error: " + faults.warmup_error())
            self.kill_tree_and_self()
            return
        await asyncio.sleep(self.clock.real(0.3))
        self.api.up = True
        self.say("The server is fired up and ready to roll!")
        if self.p.eplb_every > 0:
            asyncio.get_running_loop().create_task(self.eplb_rebalances())
        if self.p.traffic > 0:
            await self.background_traffic()

    async def eplb_rebalances(self) -> None:
        """`--enable-eplb`: every rank's EPLBManager logs a rebalance each interval (eplb/eplb_manager.py:
        "[EPLBManager] rebalance start", then f"[EPLBManager] rebalance end time={…:.3f}s"), only while serving."""
        while True:
            await asyncio.sleep(self.clock.real(self.p.eplb_every))
            start = self.clock.now()
            self.err("".join(self.fmt.line(start, "[EPLBManager] rebalance start", k) for k in self.p.local_ranks))
            await asyncio.sleep(self.clock.real(EPLB_SECONDS))
            took = EPLB_SECONDS / self.p.speed
            self.err("".join(self.fmt.line(self.clock.now(), f"[EPLBManager] rebalance end time={took:.3f}s", k)
                             for k in self.p.local_ranks))  # fmt: skip

    async def background_traffic(self) -> None:
        """Other clients' requests, `traffic` per simulated minute, logged as uvicorn access lines."""
        rng = self.engine.rng
        while True:
            await asyncio.sleep(self.clock.real(rng.expovariate(self.p.traffic / 60.0)))
            self.out(self.fmt.access(self.clock.now(), f"{BACKGROUND_CLIENT}:{rng.randint(30000, 60000)}", "POST",
                                     "/v1/chat/completions", 200, "OK"))  # fmt: skip
            asyncio.get_running_loop().create_task(self._drain_one(rng.randint(64, 1024), rng.randint(64, 512)))

    async def _drain_one(self, prompt: int, max_new: int) -> None:
        async for _ in self.engine.generate(prompt, max_new):
            pass

    async def start_bootstrap(self) -> None:
        """A prefill server's bootstrap endpoint (PD disaggregation), up while the ranks start."""
        from tui.sim.router import serve_bootstrap

        try:
            self.bootstrap = await serve_bootstrap(self.p.bootstrap_port)
        except OSError as err:
            self.say(f"Failed to start the bootstrap server on port {self.p.bootstrap_port}: {err.strerror}")

    async def follow(self) -> int:
        """A non-zero node once its ranks are up: no HTTP, no tokenizer; wait for rank 0's ShutdownReq."""
        await self.stop.wait()
        self.kill_children(signal.SIGTERM)
        await asyncio.sleep(0.05)
        self.kill_children()
        return 0

    def on_shutdown_broadcast(self) -> None:
        self.stop.set()

    def on_head_lost(self) -> None:
        """Node 0 went away without a ShutdownReq: the collectives fail, the schedulers raise, the tree dies."""
        if self.stopping:
            return
        self.err(faults.head_lost(self.fmt, self.clock.now(), self.p.local_ranks.start, self.p.dist_init_addr or ""))
        self.kill_tree_and_self()

    async def shutdown(self) -> int:
        """Graceful SIGTERM: drain briefly, stop the schedulers, then uvicorn's shutdown lines; exit 0."""
        if self.link is not None:
            self.link.shutdown()
        if self.api.up:
            self.say("SIGTERM received. signum=None frame=None. Draining requests and shutting down...")
            self.api.draining = True
            deadline = asyncio.get_running_loop().time() + min(max(self.clock.real(5.0), 0.2), 5.0)
            while self.api.in_flight and asyncio.get_running_loop().time() < deadline:
                await asyncio.sleep(0.02)
            self.say(f"Gracefully exiting... Remaining number of requests {self.api.in_flight}. "
                     f"Remaining requests remaining_rids=[].")  # fmt: skip
        self.uv("Shutting down")
        if self.http is not None:
            self.http.close()
        self.kill_children(signal.SIGTERM)
        await asyncio.sleep(0.05)
        self.uv("Waiting for application shutdown.")
        self.uv("Application shutdown complete.")
        self.uv(f"Finished server process [{os.getpid()}]")
        self.kill_children()
        return 0


def open_log(path: str) -> None:
    """Append to the log and make it this process's stdout and stderr (children inherit both)."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    sys.stdout.flush()
    sys.stderr.flush()
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)


def run_server(params: SimParams, on_start: Callable[[SimParams], None] | None = None) -> int:
    """Run the simulated launch to its end; returns the exit status."""
    params = replace(params, t0=params.t0 or time.time())
    if params.fault == "download":  # a simulated cache of its own, never the user's: the ranks inherit it
        for var in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
            os.environ.pop(var, None)
        os.environ["HF_HOME"] = params.log + ".hf-home"
    open_log(params.log)
    if on_start:
        on_start(params)
    return asyncio.run(Main(params).run())
