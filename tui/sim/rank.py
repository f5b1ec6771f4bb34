"""A scheduler child (`sglang::scheduler_TP<k>`): plays its rank's steps, writes the log, publishes its memory.

It writes to the stderr it inherited (the log), reports `ready <k>` on the pipe the main process gave it,
and on a scheduler exception sends SIGQUIT to its parent, as SGLang's run_scheduler_process does.
Under the `orphans` fault it neither dies with its parent nor on SIGTERM: it keeps its GPU memory until
SIGKILL, re-parented to PID 1 (or the nearest subreaper) once the main process is gone. Forked by a forkserver
(`--forkserver`, tui/sim/forkserver.py) it has no parent-death link: it leaves about a second after its launcher.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from collections.abc import Callable

from tui.sim import busy
from tui.sim.clock import SimClock
from tui.sim.forkserver import exit_with_launcher, start_ticks
from tui.sim.gpustate import ProcMemory
from tui.sim.logformat import restamp
from tui.sim.params import SimParams
from tui.sim.procs import backdate_writes, mark_child, write_all
from tui.sim.script import Marks, Step, rank_steps

ESCAPE_ENV = "SGLANG_TUI_SIM_ORPHAN_SETSID"  # orphans also leave the launch's session (setsid)
# The ranks make themselves non-dumpable, as a process that changed credentials is: a tracer without
# CAP_SYS_PTRACE is then refused ptrace (what py-spy meets in a container without SYS_PTRACE).
NODUMP_ENV = "SGLANG_TUI_SIM_NODUMP"
PR_SET_DUMPABLE = 4


def title(rank: int, tp: int) -> str:
    return f"sglang::scheduler_TP{rank}" if tp > 1 else "sglang::scheduler"


def idle() -> None:
    while True:
        signal.pause()


class Rank:
    def __init__(self, params: SimParams, rank: int, ready_fd: int, go_fd: int, parent: int, real0: float) -> None:
        self.params = params
        self.go_fd = go_fd
        self.barriers = 0
        self.rank = rank
        self.ready_fd = ready_fd
        self.parent = parent
        self.parent_started = start_ticks(parent)  # SIGQUIT goes to that very process, never a later one given its pid
        self.clock = SimClock(params.t0, params.speed, real0, params.backdate)
        backdate_writes(params.backdate)
        self.marks = Marks()
        gpu = rank - params.local_ranks.start  # each node numbers its own GPUs from 0
        self.memory = ProcMemory(params.gpu_state, gpu, title(rank, params.tp))

    def on_term(self, signum: int, _frame: object) -> None:
        self.memory.remove()
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)

    def run(self, steps: list[Step]) -> None:
        continued = [False]
        signal.signal(signal.SIGCONT, lambda *_: continued.__setitem__(0, True))
        last = 0.0  # the simulated time of the last step played
        for step in steps:
            while True:
                delay = self.clock.wait_for(step.at)
                if delay > 0.002:
                    self.memory.flush()  # publish before sleeping; steps due at once are batched
                    time.sleep(delay)
                if not continued[0]:
                    break
                # stopped (SIGSTOP) and continued: a real rank's work stood still meanwhile, so does the schedule
                continued[0] = False
                self.clock.resume_at(last)
            last = step.at
            now = self.clock.now()
            text = self.marks.text(step, now)
            if text:
                # stamped with the real time it is written, like a real process's lines (and so monotonic)
                write_all(2, restamp(text, now))
            if step.mem is not None:
                self.memory.set(step.mem)
            if step.action:
                self.memory.flush()
                self.act(step.action, step.at)
                if step.action == "resync":
                    self.clock.resume_at(step.at)
        self.memory.flush()
        idle()

    def act(self, action: str, at: float = 0.0) -> None:
        if action == "ready":
            try:
                os.write(self.ready_fd, f"ready {self.rank}\n".encode())
            except OSError:
                pass  # the main process is gone (orphaned): keep holding the GPU, as real orphans do
        elif action == "raise":
            if self.parent_started is not None and start_ticks(self.parent) == self.parent_started:
                try:
                    os.kill(self.parent, signal.SIGQUIT)
                except ProcessLookupError:
                    pass
            self.memory.remove()
            sys.exit(0)
        elif action == "die":
            os.kill(os.getpid(), signal.SIGKILL)
        elif action in ("barrier", "resync"):
            self.barrier()
            if self.params.nnodes > 1:  # waiting for another node is not simulated time: resume in step
                self.clock.resume_at(max(at, 0.0))
        elif action == "hang":
            idle()
        elif action == "stuck":
            self.all_reduce()
        elif action == "jit" and self.rank == 0:  # one rank compiles; the others wait on its file lock
            busy.jit_compile(self._silent_s(busy.JIT_REAL_S))
        elif action == "jit":
            time.sleep(self._silent_s(busy.JIT_REAL_S))
        elif action == "download" and self.rank == 0:
            busy.download(self.params.model_path, self._silent_s(busy.DOWNLOAD_REAL_S))

    def _silent_s(self, default: float) -> float:
        """Real seconds a silent fault runs: --fault-seconds, else the fault's own (whatever --speed is)."""
        return self.params.fault_seconds if self.params.fault_seconds is not None else default

    def all_reduce(self) -> None:
        """hang-rank: a collective that never completes, in a function the other ranks are not in."""
        while True:
            time.sleep(3600)

    def barrier(self) -> None:
        """Report arrival and block until the main process says every rank arrived (EOF: it is gone)."""
        self.barriers += 1
        try:
            os.write(self.ready_fd, f"at {self.rank} {self.barriers}\n".encode())
            while not os.read(self.go_fd, 1).endswith(b"\n"):
                pass
        except OSError:
            pass


def wait_for_go(ready_fd: int, go_fd: int, rank: int) -> float:
    """Tell the main process this rank is up; it answers with the real instant of simulated second 0 once
    every rank is up, so the schedule starts when the processes really can (spawning is slow on a busy host)."""
    try:
        os.write(ready_fd, f"up {rank}\n".encode())
        data = b""
        while not data.endswith(b"\n"):
            chunk = os.read(go_fd, 64)
            if not chunk:
                break
            data += chunk
        return float(data or b"0")
    except (OSError, ValueError):
        return 0.0  # the main process is gone or said nothing: fall back to t0


def child_main(payload_json: str) -> None:
    payload = json.loads(payload_json)
    params = SimParams.from_json(payload["params"])
    rank = int(payload["rank"])
    parent = int(payload["parent"])
    orphan = params.fault == "orphans"
    forked = bool(payload.get("forked"))  # by a forkserver (tui/sim/forkserver.py): its parent is not the launcher
    mark_child(title(rank, params.tp), parent, die_with_parent=not orphan and not forked)
    cleanup: list[Callable[[], None]] = []
    if forked and not orphan:
        exit_with_launcher(parent, cleanup)
    if os.environ.get(NODUMP_ENV) == "1":
        import ctypes

        ctypes.CDLL(None).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    ready_fd = int(payload["ready_fd"])
    go_fd = int(payload["go_fd"])
    real0 = wait_for_go(ready_fd, go_fd, rank)
    node = Rank(params, rank, ready_fd, go_fd, parent, real0)
    cleanup.append(node.memory.remove)
    if orphan:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        if os.environ.get(ESCAPE_ENV) == "1":
            os.setsid()
    else:
        signal.signal(signal.SIGTERM, node.on_term)
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C goes to the main process, which stops the tree
    steps = rank_steps(params, rank)
    try:
        node.run(steps)
    except KeyboardInterrupt:
        pass
