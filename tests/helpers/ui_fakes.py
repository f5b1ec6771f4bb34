"""Fakes for the TUI tests (named as fakes): a scripted batch source, a hanging source, a control, a clock,
and scripted startup scenarios as event batches (the same events the Monitor and the parser produce)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from tui.core.events import (
    BarProgress,
    ConnectionState,
    ControlResult,
    Event,
    GpuInfo,
    GpuProcess,
    GpuSnapshot,
    HealthResult,
    LogActivity,
    LogReset,
    ServerProcess,
    Tick,
)
from tui.core.logparse import LogParser
from tui.core.state import Readiness
from tui.core.vocab import ControlAction
from tui.ui.app import SglangTui, UiSources

T0 = 1764410400.0  # 2025-11-29 10:00:00, naive log time read as UTC (as the parser does)
GIB = 1 << 30
TOTAL = 143_771_000_832  # an H200's memory
TP = 8
HOST = "gpu-node-7"


class FakeClock:
    """A clock the test sets by hand (so times on screen are frozen)."""

    def __init__(self, t: float = T0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


class FakeBatchSource:
    """Fake of Monitor.batches(): yields exactly the batches a test pushes; None ends it."""

    def __init__(self) -> None:
        self.queue: asyncio.Queue[list[Event] | None] = asyncio.Queue()
        self.started = 0

    def push(self, *batches: Sequence[Event] | None) -> None:
        for batch in batches:
            self.queue.put_nowait(None if batch is None else list(batch))

    async def batches(self) -> AsyncIterator[list[Event]]:
        self.started += 1
        while True:
            batch = await self.queue.get()
            if batch is None:
                return
            yield batch


class HangingSource:
    """Fake of a monitor whose SSH link hangs: it never yields and never returns."""

    def __init__(self) -> None:
        self.entered = asyncio.Event()

    async def batches(self) -> AsyncIterator[list[Event]]:
        self.entered.set()
        await asyncio.Event().wait()
        yield []  # pragma: no cover  (never reached)


class BrokenSource:
    """Fake of a monitor that dies with an exception after one batch."""

    def __init__(self, first: Sequence[Event]) -> None:
        self.first = list(first)

    async def batches(self) -> AsyncIterator[list[Event]]:
        yield self.first
        raise ConnectionResetError("ssh channel closed by peer")


LAUNCH_LINE = "rm -f -- /tmp/server.log.pid; setsid sh -c 'exec python -m sglang.launch_server …' > /tmp/server.log 2>&1 < /dev/null &"


@dataclass
class FakeControl:
    """Fake of ServerControl: records calls, returns a scripted result (what a real kill would report)."""

    pgid: int = 4242
    result: ControlResult | None = None
    delay_s: float = 0.0
    hold: asyncio.Event | None = None
    """An action waits until the test sets it: "while it runs" without a race against a delay."""
    calls: list[str] = field(default_factory=list)
    process: ServerProcess = ServerProcess(True, (4242,), "listener on port 30000")
    """What process_state() reports (alive by default)."""
    relaunch: str | None = "python -m sglang.launch_server --model-path /models/llama-70b --tp 8"
    """What a restart would start the server with (--launch); None: no --launch given."""

    def describe(self, action: str, launch: str | None = None) -> str:
        if action == "launch":
            return LAUNCH_LINE
        signal = {"terminate": "TERM", "kill": "KILL", "restart": "TERM"}[action]
        text = f"kill -{signal} -- -{self.pgid}; sweep /proc/*/environ for SGLANG_TUI_RUN=fake-run"
        if action == "restart":
            text += "\n" + (LAUNCH_LINE if launch is None else f"setsid sh -c {launch}")
        return text

    def relaunch_with(self, command: str) -> None:
        self.calls.append("relaunch_with")
        self.relaunch = command

    async def process_state(self) -> ServerProcess:
        self.calls.append("process_state")
        return self.process

    async def launch(self) -> ControlResult:
        self.calls.append("launch")
        if self.result is not None:
            return self.result
        return ControlResult(
            "launch",
            ok=True,
            detail=f"started pid {self.pgid} (run fake-run), output to /tmp/server.log",
            command=LAUNCH_LINE,
        )

    async def _act(self, action: ControlAction) -> ControlResult:
        self.calls.append(action)
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        if self.hold is not None:
            await self.hold.wait()
        if self.result is not None:
            return self.result
        detail = "started pid 4343 (run fake-run-2), output to /tmp/server.log" if action == "restart" else ""
        return ControlResult(action, ok=True, detail=detail, command=self.describe(action))

    async def restart(self) -> ControlResult:
        return await self._act("restart")

    async def terminate(self) -> ControlResult:
        return await self._act("terminate")

    async def kill(self) -> ControlResult:
        return await self._act("kill")


# ----------------------------------------------------------------------------------------------- scenarios


def at(seconds: float) -> tuple[str, float]:
    """(log timestamp text, log time) `seconds` after T0."""
    whole = int(seconds)
    return f"2025-11-29 10:{whole // 60:02d}:{whole % 60:02d}", T0 + seconds


def log_bytes(lines: Sequence[str], offset: int = 0) -> LogActivity:
    data = "".join(line + "\n" for line in lines).encode()
    return LogActivity(offset + len(data), data)


class SceneLog:
    """A scene's server log: lines in, out the events the Monitor delivers for them (the bytes as LogActivity,
    then what the real LogParser makes of them), so each scene is the log text a server writes."""

    def __init__(self, offset: int = 0) -> None:
        self.parser = LogParser()
        self.offset = offset

    def write(self, *lines: str) -> list[Event]:
        data = "".join(line + "\n" for line in lines).encode()
        self.offset += len(data)
        return [LogActivity(self.offset, data), *self.parser.feed(data)]

    def show(self, *lines: str) -> list[Event]:
        """Bytes for the log pane only, not parsed: for tqdm frames whose BarProgress the scene gives itself, with
        log times (a frame's own elapsed has whole seconds, which would move the rates the tests pin)."""
        data = "".join(line + "\n" for line in lines).encode()
        self.offset += len(data)
        return [LogActivity(self.offset, data)]


def gpus(used_gib: float | Sequence[float], *, util: float = 0.0, alive: bool = True, n: int = TP) -> GpuSnapshot:
    amounts = [used_gib] * n if isinstance(used_gib, (int, float)) else list(used_gib)
    out = []
    for i, gb in enumerate(amounts):
        used = int(gb * GIB)
        procs = (GpuProcess(4300 + i, used, f"sglang::scheduler_TP{i}"),) if alive and used else ()
        out.append(GpuInfo(i, f"GPU-{i:04d}", "NVIDIA H200", used, TOTAL, None, util, 40.0, 120.0, procs))
    return GpuSnapshot("sim", tuple(out))


@dataclass
class Step:
    """One batch, folded when the fake clock reads `clock`."""

    clock: float
    events: list[Event]


def _ranks(seconds: float, text: str) -> list[str]:
    """The line every rank prints at `seconds`, in SGLang's `[time TPk]` envelope."""
    return [f"[{at(seconds)[0]} TP{i}] {text}" for i in range(TP)]


SERVER_ARGS = (
    "server_args=ServerArgs(model_path='meta-llama/Llama-3.3-70B-Instruct', tp_size=8, port=30000, "
    "speculative_algorithm='EAGLE3', speculative_draft_model_path='lmsys/sglang-EAGLE3-LLaMA3.3-Instruct-70B')"
)


def startup_to_loading(shards_done: int = 57, shards: int = 64, log: SceneLog | None = None) -> list[Step]:
    """Launch → init → loading weights at shards_done/shards (7.1 shards/s)."""
    log = log or SceneLog()
    steps = [
        Step(
            T0 + 2,
            [
                ConnectionState("connected"),
                HealthResult("/health", "refused", latency_s=0.001),
                HealthResult("/v1/models", "refused", latency_s=0.001),
                ServerProcess(True, (4242,)),
                gpus(0.5),
            ],
        ),
        Step(T0 + 3, log.write(f"[{at(2)[0]}] {SERVER_ARGS}")),
        Step(T0 + 9, log.write(*_ranks(9, "Init torch distributed begin."))),
        Step(
            T0 + 12,
            [
                *log.write(
                    *_ranks(12, "Init torch distributed ends. mem usage=1.02 GB"),
                    *_ranks(12, "Load weight begin. avail mem=138.05 GB"),
                ),
                gpus(1.5),
            ],
        ),
    ]
    bars: list[Event] = []
    for k in range(shards_done + 1):
        stamp, t = at(13 + k / 7.1)
        bars.append(BarProgress("weights", k, shards, label="Multi-thread loading shards", at=stamp, t=t))
    frame = f"Multi-thread loading shards:  {100 * shards_done // shards}% Completed | {shards_done}/{shards} [00:08<00:01,  7.10it/s]"
    last = gpus(1.5 + 16.5 * shards_done / shards, util=35.0)
    steps.append(Step(T0 + 13 + shards_done / 7.1, [*bars, last, *log.show(frame)]))
    return steps


def startup_to_capture(batches_done: int = 12, batches: int = 36, log: SceneLog | None = None) -> list[Step]:
    log = log or SceneLog()
    steps = startup_to_loading(64, log=log)
    load_end = "Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=121.49 GB, mem usage=16.56 GB."
    draft = "Loading safetensors checkpoint shards: 100% Completed | 1/1 [00:00<00:00,  1.20it/s]"
    steps.append(Step(T0 + 25, [*log.write(*_ranks(25, load_end), draft), gpus(18.0)]))
    kv = "KV Cache is allocated. #tokens: 1048576, K size: 40.00 GB, V size: 40.00 GB"
    steps.append(
        Step(T0 + 27, [*log.write(*_ranks(27, kv), *_ranks(27, "Memory pool end. avail mem=26.05 GB")), gpus(113.5)])
    )
    begin = "Capture cuda graph begin. This can take up to several minutes. avail mem=25.74 GB"
    steps.append(Step(T0 + 28, log.write(*_ranks(28, begin))))
    bars = []
    for k in range(batches_done + 1):
        stamp, tt = at(29 + k * 0.8)
        bars.append(BarProgress("capture", k, batches, bs=512 - 8 * k, avail_mem_gb=25.6 - 0.02 * k, at=stamp, t=tt))
    frame = f"Capturing batches (bs={512 - 8 * batches_done} avail_mem=25.36 GB):  33%| {batches_done}/{batches} [00:09<00:19,  1.25it/s]"
    steps.append(Step(T0 + 29 + batches_done * 0.8, [*bars, gpus(115.0, util=90.0), *log.show(frame)]))
    return steps


def startup_to_ready(decode_lines: int = 24) -> list[Step]:
    log = SceneLog()
    steps = startup_to_capture(36, 36, log=log)
    end = "Capture cuda graph end. Time elapsed: 31.00 s. mem usage=3.64 GB. avail mem=22.10 GB."
    steps.append(Step(T0 + 60, log.write(*_ranks(60, end))))
    steps.append(
        Step(
            T0 + 62,
            [
                *log.write(f"[{at(62)[0]}] INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)"),
                HealthResult("/health", "starting", 503, 0.004),
                HealthResult("/v1/models", "ok", 200, 0.003),
            ],
        )
    )
    steps.append(
        Step(
            T0 + 66,
            [
                *log.write(f"[{at(66)[0]}] The server is fired up and ready to roll!"),
                HealthResult("/health", "ok", 200, 1.21),
            ],
        )
    )
    decode = [
        f"[{at(70 + k)[0]} TP0] Decode batch, #running-req: 3, #token: 6000, token usage: 0.12, "
        f"accept len: {1.4 + ((k * 3) % 7) / 20:.2f}, accept rate: 0.70, cuda graph: True, "
        f"gen throughput (token/s): {40.0 + (k * 7) % 23:.2f}, #queue-req: 0"
        for k in range(decode_lines)
    ]
    # one read per line, as a live tail delivers them: the parser folds the lines of one read into one BatchStats
    served = [event for line in decode for event in log.write(line)]
    steps.append(Step(T0 + 70 + decode_lines, [*served, gpus(115.0, util=60.0)]))
    return steps


OOM_LINE = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 3 has a total capacity "
    "of 139.72 GiB of which 1.06 GiB is free."
)


def startup_failed_oom() -> list[Step]:
    log = SceneLog()
    steps = startup_to_capture(20, 36, log=log)
    s = at(50)[0]
    steps.append(
        Step(T0 + 50, log.write(f"[{s} TP3] Scheduler hit an exception: Traceback (most recent call last):", OOM_LINE))
    )
    steps.append(Step(T0 + 52, [ServerProcess(False), gpus(0.0, alive=False)]))
    return steps


def restarted_run() -> list[Step]:
    """What the monitor sees after a restart: the log truncated by the launch, the new run's first lines."""
    log = SceneLog()
    return [
        Step(
            T0 + 40,
            [
                LogReset("truncated", "/tmp/server.log: size 210 < offset 48213"),
                ServerProcess(True, tuple(range(4343, 4353))),
                gpus(0.0, alive=False),
                *log.write(f"[{at(40)[0]}] {SERVER_ARGS}"),
            ],
        ),
        Step(T0 + 46, [gpus(0.5), *log.write(*_ranks(46, "Init torch distributed begin."))]),
    ]


def killed_run() -> list[Step]:
    """What the monitor sees after a kill: no process left, the GPUs empty."""
    return [Step(T0 + 100, [ServerProcess(False, detail="server processes gone"), gpus(0.0, alive=False)])]


def startup_stalled() -> list[Step]:
    """Shards stop at 57/64; GPUs and health keep answering (unchanged) for 400 s."""
    steps = startup_to_loading(57)
    last = steps[-1].clock
    for k in range(1, 5):
        steps.append(
            Step(
                last + 100 * k,
                [
                    gpus(1.5 + 16.5 * 57 / 64, util=0.0),
                    HealthResult("/health", "refused", latency_s=0.001),
                    HealthResult("/v1/models", "refused", latency_s=0.001),
                    Tick(),
                ],
            )
        )
    return steps


def startup_disconnected() -> list[Step]:
    steps = startup_to_loading(57)
    last = steps[-1].clock
    steps.append(Step(last + 1, [ConnectionState("reconnecting", "connection lost: keepalive timeout")]))
    steps.append(Step(last + 30, [Tick()]))
    return steps


# ------------------------------------------------------------------------------------------------- driving


def make_app(
    source: Any,
    *,
    control: FakeControl | None = None,
    read_only: bool = False,
    clock: FakeClock | None = None,
    initial: Readiness | None = None,
    launch_if_absent: bool = False,
    **kwargs: object,
) -> SglangTui:
    """The real app over fakes (monotonic time for the debounce stays real)."""
    sources = UiSources(
        batches=source.batches,
        control=control,
        host_label=HOST,
        port=30000,
        launch_if_absent=launch_if_absent,
    )
    return SglangTui(sources, read_only=read_only, clock=clock or FakeClock(), initial=initial, **kwargs)  # type: ignore[arg-type]


async def until(pilot: object, condition: Callable[[], object], timeout: float = 60.0, what: str = "") -> None:
    """Let the app run until `condition()` holds; fail (naming `what`) if it never does. Real time, generous: a
    worker or a batch can take a while on a busy machine, and the app's clock is the fake one all the same."""
    deadline = time.monotonic() + timeout
    await pilot.pause()  # type: ignore[attr-defined]
    while not condition():
        assert time.monotonic() < deadline, f"the app never got there{': ' + what if what else ''}"
        await pilot.pause(0.01)  # type: ignore[attr-defined]


async def play(pilot: object, source: FakeBatchSource, clock: FakeClock, steps: Sequence[Step]) -> None:
    """Fold each step at its clock time, waiting until the app has taken it, then let the app settle once.

    The app folds a batch and redraws the panes' text in one handler (`on_events_received`), reading the clock as
    it runs: once `batches_seen` moved, the step is folded at its own clock and the next may set the clock. Between
    steps the loop only yields (no `pilot.pause()`: each waits for 20 ms of idle and composes the whole screen, which
    was most of a UI test's CPU); the screen is composed once, at the end, as a terminal would show it."""
    app = pilot.app  # type: ignore[attr-defined]
    for step in steps:
        clock.t = step.clock
        before = app.batches_seen
        source.push(step.events)
        deadline = time.monotonic() + 60  # a busy machine: a while; the app's clock is the fake one all the same
        spins = 0
        while app.batches_seen <= before:
            assert time.monotonic() < deadline, f"the app never took the step at clock {step.clock}"
            spins += 1  # a few yields let the source's worker and the app's queue run; past that, wait politely
            await (asyncio.sleep(0) if spins < 200 else pilot.pause(0.01))  # type: ignore[attr-defined]
    await pilot.pause()  # type: ignore[attr-defined]


@dataclass(frozen=True)
class Scene:
    """A named screen state for snapshots and screenshots: scripted steps, then keys."""

    name: str
    steps: object  # () -> list[Step]
    press: tuple[str, ...] = ()
    initial: Readiness | None = None
    size: tuple[int, int] = (160, 48)
    after: object = None  # () -> list[Step] played once the keys' action came back


SCENES: tuple[Scene, ...] = (
    Scene("loading_57_of_64", startup_to_loading),
    Scene("cuda_graph_capture", startup_to_capture),
    Scene("ready_with_decode", startup_to_ready),
    Scene("failed_oom", startup_failed_oom),
    Scene("stalled", startup_stalled, initial=Readiness.of(stall_after=120.0)),
    Scene("disconnected", startup_disconnected),
    Scene("confirm_kill", startup_to_loading, press=("K",)),
    Scene("loading_80x24", startup_to_loading, size=(80, 24)),
    Scene("restarted", startup_to_loading, press=("r", "y"), after=restarted_run),
    Scene("killed", startup_to_ready, press=("K", "y"), after=killed_run),
    Scene("gpus_maximized", startup_to_loading, press=("3", "3")),
    Scene("killed_80x24", startup_to_ready, press=("K", "y"), after=killed_run, size=(80, 24)),
    Scene("failed_oom_120x40", startup_failed_oom, size=(120, 40)),
    Scene("help_80x24", startup_to_loading, press=("question_mark",), size=(80, 24)),
)


def scene_app(scene: Scene) -> tuple[SglangTui, object]:
    """The app for a scene and the `run_before` that drives it (fixed clock, fixed PIDs)."""
    clock, source = FakeClock(), FakeBatchSource()
    app = make_app(source, control=FakeControl(), clock=clock, initial=scene.initial, monotonic=FakeClock(0.0))
    notify = app.notify

    def lasting(*args: Any, **kwargs: Any) -> None:
        # A toast expires after its timeout in real time; the picture must not depend on how long the scene took
        # on this machine (a busy one took over the ready toast's 10 s, and it was gone from the snapshot).
        kwargs["timeout"] = 3600.0
        notify(*args, **kwargs)

    app.notify = lasting  # type: ignore[method-assign]

    async def run_before(pilot: object) -> None:
        await play(pilot, source, clock, scene.steps())
        if scene.press:
            await pilot.press(*scene.press)  # type: ignore[attr-defined]
            await pilot.pause()  # type: ignore[attr-defined]
        if scene.after is not None:
            # The pressed action runs in a worker: wait for its result (real time, on a busy machine a while; the
            # scene's clock is the fake one, so the picture does not depend on how long), never go on without it.
            deadline = time.monotonic() + 60
            while not app.control_results:
                assert time.monotonic() < deadline, f"{scene.name}: the {scene.press} action never finished"
                await pilot.pause(0.01)  # type: ignore[attr-defined]
            await play(pilot, source, clock, scene.after())

    return app, run_before
