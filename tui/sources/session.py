"""Session: one watched server, from its Monitor's batches to the states they fold into.

It owns the loop that `wait`, the TUI and the benches each wrote before: every batch goes through one
tui.core.fold.Fold (the reducer, then the steps after it such as the weight files' stat and the history),
and the phase is fed back to the Monitor (the health poller's cadence). `states()` yields each state; the
TUI, which also folds its ticks and control results, takes `batches` and `fold` through UiSources instead.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable

from tui.core.config import WatchConfig
from tui.core.control import ProcessWatchLike
from tui.core.events import Event, GpuSnapshot, ServerProcess
from tui.core.fold import Fold, StateStep
from tui.core.readiness import reduce
from tui.core.state import Readiness
from tui.sources.health import HealthPoller
from tui.sources.host import Host, HostError
from tui.sources.monitor import Monitor
from tui.sources.procwatch import ProcessWatch
from tui.sources.weightfiles import WeightFilesProbe


class Session:
    """A Monitor, the Fold its batches go through, and the state so far (waited on by tui/sources/waiting.py)."""

    settles = True  # a verdict rests on a last look at the server's life (tui/core/liveness.py)

    def __init__(
        self,
        monitor: Monitor,
        *,
        initial: Readiness | None = None,
        steps: tuple[StateStep, ...] = (),
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.monitor = monitor
        self.fold = Fold(steps, feedback=monitor.set_phase)
        self.state = initial if initial is not None else Readiness()
        self.clock = clock

    @classmethod
    def open(
        cls,
        host: Host,
        config: WatchConfig,
        *,
        process_watch: ProcessWatchLike | None = None,
        initial: Readiness | None = None,
        steps: tuple[StateStep, ...] = (),
        ticks: bool = True,
        gpu_feed: Callable[[], AsyncIterator[GpuSnapshot]] | None = None,
        rest_when_up: bool = False,
    ) -> Session:
        """A Session over a new Monitor of the host, as the options say (its /health probed unless --no-health);
        ticks=False when the consumer keeps its own clock (the TUI); gpu_feed: the host's GPU probe when it is
        shared with other servers there (tui/sources/hostpool.py); rest_when_up: once up, the process watch only
        says that it lives (Monitor.set_phase): a board or an exporter of many servers at rest."""
        monitor = Monitor(
            host,
            log_path=config.log,
            port=config.port,
            remote_python=config.remote_python,
            sim_gpus=config.sim_gpus,
            process_watch=process_watch or ProcessWatch(host, port=config.port, log_path=config.log),
            health=HealthPoller(host, config.port, enabled=config.health),
            ticks=ticks,
            gpu_feed=gpu_feed,
            rest_when_up=rest_when_up,
        )
        return cls(monitor, initial=initial, steps=steps)

    def batches(self) -> AsyncIterator[list[Event]]:
        """The Monitor's batches, unfolded (the TUI folds them itself, with its ticks)."""
        return self.monitor.batches()

    async def states(self) -> AsyncIterator[tuple[Readiness, float]]:
        """(state, clock time) after each batch, until the Monitor is closed."""
        async for batch in self.monitor.batches():
            now = self.clock()
            self.state = self.fold(self.state, batch, now)
            yield self.state, now

    async def check_alive(self) -> Readiness:
        """Fold a liveness check made now (the state after it): a fresh scan of the server's processes where
        the watch can see them, else one /health (tui.core.liveness: what a verdict must rest on)."""
        events: list[Event] = []
        scan = getattr(self.monitor.process_watch, "process_state_now", None)
        if scan is not None and self.state.process_visible:
            try:
                found: ServerProcess = await scan()
            except (HostError, TimeoutError, OSError):
                found = ServerProcess(alive=False, visible=False)  # unknown: /health decides below
            if found.visible:
                events.append(found)
        if not events and self.monitor.health.enabled:
            events.append(await self.monitor.health.check_health())
        if events:
            self.state = self.fold(self.state, events, self.clock())
        return self.state

    async def close(self) -> None:
        await self.monitor.close()


def weights_step(probe: WeightFilesProbe) -> StateStep:
    """The step that folds in the model's safetensors sizes on the host (one stat per model path)."""

    def step(state: Readiness, now: float) -> Readiness:
        for found in probe.poll(state):
            state = reduce(state, found, now)
        return state

    return step
