"""ServerControl: the only module that changes the host (launch, terminate, kill, restart).

It is a ProcessWatch (procwatch.py: the server found and watched) that may also act on what it found: it
signals the server's process group, sweeps survivors that share its session or descend from it, and confirms
through the GPU probe that their memory is released. Never by name: a same-titled process elsewhere is left
alone; never by the run marker alone: a tmux server the launch started, the jobs in its other windows and a
`stop` run from one of them all carry it. Never the tool itself. Under `--read-only` it is not built at all.
"""

from __future__ import annotations

import asyncio
import time

from tui.core.config import WatchConfig
from tui.core.events import ControlResult, GpuSnapshot
from tui.core.gpuparse import memory_held, no_gpu_driver, parse_probe_line
from tui.core.vocab import StopAction
from tui.sources import control_cmds as cmds
from tui.sources.control_cmds import Proc
from tui.sources.gpu import probe_command, probe_script
from tui.sources.host import Host, HostError
from tui.sources.procwatch import ProcessWatch, _Target

__all__ = ["ServerControl", "_Target"]  # _Target: the tests build targets through this module

# SGLang drains on SIGTERM (a status line every 5 s, then 15 s for schedulers after ShutdownReq before
# it kills them itself), and its own test harness waits 60 s; 30 s covers a drain with no long requests.
DEFAULT_GRACE_S = 30.0
KILL_WAIT_S = 10.0  # after SIGKILL: a process in GPU teardown (state D) can take a while to go
GPU_RELEASE_S = 30.0  # the driver frees memory after the process is gone ("queues the teardown")


def _gib(n: int) -> str:
    return f"{n / 2**30:.1f} GiB"


class ServerControl(ProcessWatch):
    """Launch, terminate, kill and restart one server, and report its process state."""

    def __init__(
        self,
        host: Host,
        *,
        port: int | None,
        log_path: str | None = None,
        launch: str | None = None,
        cwd: str | None = None,
        remote_python: str = "python3",
        sim_gpus: str | None = None,
        grace_s: float = DEFAULT_GRACE_S,
        gpu_release_s: float = GPU_RELEASE_S,
    ) -> None:
        super().__init__(host, port=port, log_path=log_path)
        self.launch_cmd = launch
        self.cwd = cwd
        self.remote_python = remote_python
        self.sim_gpus = sim_gpus
        self.grace_s = grace_s
        self.gpu_release_s = gpu_release_s

    @property
    def relaunch(self) -> str | None:
        """--launch CMD, when a restart can start the server with it (it needs --log for the output too)."""
        return self.launch_cmd if self.launch_cmd and self.log_path else None

    # ---------------------------------------------------------------------------------------- describe

    def relaunch_with(self, command: str) -> None:
        """Start the server with `command` from now on: a remedy's edit of --launch CMD, confirmed in the TUI (its
        words were quoted by tui.core.remedy.apply_changes; nothing read from the log is run)."""
        self.launch_cmd = command

    def describe(self, action: str, launch: str | None = None) -> str:
        """The exact commands an action runs on the host, for the confirm dialog (`launch`: a restart's command
        in place of --launch CMD)."""
        t = self._target or _Target()
        if action == "launch":
            return self._launch_command(t.run_id or "<new run id>") or "no --launch command given"
        scan = self._scan_command(t)
        who = (
            f"process group {t.group}"
            if t.group
            else f"pids {sorted(t.known)}"
            if t.known
            else f"the server on {self.where()} (found when run)"
        )
        steps = [f"# {action} {who}" + (f", run marker {cmds.MARKER_VAR}={t.run_id}" if t.run_id else "")]
        if action in ("terminate", "restart", "stop"):
            steps += [
                f"# TERM, then wait up to {self.grace_s:g} s for SGLang's drain",
                cmds.stop_command("TERM", group=t.group, procs=t.known, wait_s=self.grace_s, scan=scan),
            ]
        steps += [
            "# KILL what is left; the same again for survivors found by group, session or descent",
            cmds.stop_command("KILL", group=t.group, procs=t.known, wait_s=KILL_WAIT_S, scan=scan),
            "# confirm their GPU memory is released (the probe script on stdin)",
            self._probe_once_command(),
        ]
        if action == "restart":
            steps += [
                "# then launch again",
                self._launch_command("<new run id>", launch) or "no --launch command given",
            ]
        return "\n".join(steps)

    def _launch_command(self, run_id: str, launch: str | None = None) -> str | None:
        command = launch or self.launch_cmd
        if not command or not self.log_path:
            return None
        return cmds.launch_command(command, log_path=self.log_path, run_id=run_id, cwd=self.cwd)

    # ------------------------------------------------------------------------------------------ actions

    async def launch(self) -> ControlResult:
        """Start --launch CMD detached in its own session, with a fresh run marker."""
        if not self.launch_cmd:
            return ControlResult("launch", False, "no --launch CMD given: cannot start the server")
        if not self.log_path:
            return ControlResult("launch", False, "--launch needs --log PATH (where the server's output goes)")
        try:
            running = await self.process_state_now()
        except (HostError, TimeoutError) as exc:
            return ControlResult("launch", False, f"launch failed: {exc}")
        if running.alive:
            return ControlResult(
                "launch",
                False,
                f"a server is already running (pids {', '.join(map(str, running.pids))},"
                f" {running.detail}): stop it first",
                survivors=running.pids,
            )
        if not running.visible:  # one may run under a uid we cannot see: a second launch would fight it
            return ControlResult("launch", False, f"{running.detail}: a server may already run; not launching")
        run_id = cmds.new_run_id()
        command = cmds.launch_command(self.launch_cmd, log_path=self.log_path, run_id=run_id, cwd=self.cwd)
        try:
            # The launch returns at once (all stdio redirected); the same round trip then waits for the pidfile.
            result = await self.host.run(f"{command}\n{cmds.read_pidfile_command(self.log_path)}", timeout=30.0)
        except (HostError, TimeoutError) as exc:
            return ControlResult("launch", False, f"launch failed: {exc}", command=command)
        text = result.stdout.decode("utf-8", "replace").strip()
        if not text.isdigit():
            why = result.stderr.decode("utf-8", "replace").strip().splitlines()
            return ControlResult(
                "launch", False, "launch failed: " + (why[-1] if why else "no pid recorded within 5 s"), command=command
            )
        pid = int(text)
        self._target = _Target(main=pid, group=pid, session=pid, run_id=run_id, how="launched")
        return ControlResult(
            "launch", True, f"started pid {pid} (run {run_id}), output to {self.log_path}", command=command
        )

    async def terminate(self) -> ControlResult:
        """TERM the group, wait out SGLang's drain, KILL what is left, sweep, confirm GPU memory released."""
        return await self._stop("terminate", graceful=True)

    async def kill(self) -> ControlResult:
        """KILL the group at once, sweep, confirm GPU memory released."""
        return await self._stop("kill", graceful=False)

    async def restart(self) -> ControlResult:
        """Stop (TERM, then KILL), confirm the GPUs are free, then launch again."""
        if not self.launch_cmd:
            return ControlResult("restart", False, "no --launch CMD given: cannot start the server again")
        stopped = await self._stop("restart", graceful=True)
        if not stopped.ok:
            return ControlResult(
                "restart",
                False,
                f"not relaunched: {stopped.detail}",
                stopped.command,
                stopped.survivors,
                stopped.gpu_held,
            )
        launched = await self.launch()
        return ControlResult(
            "restart", launched.ok, f"{stopped.detail}; {launched.detail}", f"{stopped.command}\n{launched.command}"
        )

    async def _stop(self, action: StopAction, *, graceful: bool) -> ControlResult:
        try:
            return await self._stop_steps(action, graceful)
        except (HostError, TimeoutError) as exc:
            return ControlResult(action, False, f"{action} interrupted: {exc}", command=self.describe(action))

    async def _stop_steps(self, action: StopAction, graceful: bool) -> ControlResult:
        target = await self._current()
        if target is None:
            unseen = self.cannot_see()
            if unseen is not None:  # not "nothing": it may run, under a uid whose processes we cannot read
                return ControlResult(action, False, unseen.detail, found="cannot_see")
            return ControlResult(
                action, True, f"nothing to stop: no server process found ({self.where()})", found="nothing"
            )
        commands: list[str] = []
        live = await self._scan(target)
        steps: list[str] = []
        if live and graceful:
            live = await self._signal_and_wait(target, "TERM", live, self.grace_s, commands)
            steps.append("exited on TERM" if not live else f"{len(live)} still alive after {self.grace_s:g} s of TERM")
        for round_ in range(2):  # each rescan also finds survivors by session and descent
            if not live:
                break
            before = set(live)
            live = await self._signal_and_wait(target, "KILL", live, KILL_WAIT_S, commands)
            if live.keys() & before:
                steps.append(f"{len(live.keys() & before)} still alive after KILL")
            elif round_ == 0:
                steps.append("killed")
            if live.keys() - before:
                steps.append("swept leftovers: " + ", ".join(map(str, sorted(live.keys() - before))))
        survivors = tuple(sorted(live))
        gpu_ok, held, gpu_note = await self._confirm_gpu(target)
        if not survivors:
            self._target = None
        ok = not survivors and gpu_ok and not held
        detail = "; ".join([*(steps or ["no process was running"]), gpu_note])
        if survivors:
            detail += "; still alive: " + ", ".join(f"{pid} {target.names.get(pid, '')}".strip() for pid in survivors)
        found = "nothing" if ok and not steps else ""  # gone before the stop began: it stopped nothing
        return ControlResult(action, ok, detail, "\n".join(commands), survivors, held, found=found)

    async def _signal_and_wait(
        self, target: _Target, signal: str, live: dict[int, Proc], wait_s: float, commands: list[str]
    ) -> dict[int, Proc]:
        """Signal the group (when it is the server's own) and each live member, wait, rescan: one round trip."""
        group = target.group if target.group and any(p.pgid == target.group for p in live.values()) else None
        scan = self._scan_command(target)
        command = cmds.stop_command(
            signal, group=group, procs={pid: p.start for pid, p in live.items()}, wait_s=wait_s, scan=scan
        )
        commands.append(command)
        return self._remember(target, await self._run(command, timeout=wait_s + 30.0))

    def _probe_once_command(self) -> str:
        return probe_command(self.remote_python, sim_dir=self.sim_gpus, count=1, interval=0.1)

    async def gpu_snapshot(self) -> GpuSnapshot:
        """One probe tick (the probe run once with --count 1)."""
        text = await self._run(self._probe_once_command(), input=probe_script(), timeout=60.0)
        lines = [line for line in text.splitlines() if line.strip()]
        return parse_probe_line(lines[-1]) if lines else GpuSnapshot(source="probe", error="GPU probe printed nothing")

    async def _confirm_gpu(self, target: _Target) -> tuple[bool, tuple[tuple[int, int, int], ...], str]:
        """(confirmed, what the server's pids still hold, one line) after polling the probe for release."""
        deadline = time.monotonic() + self.gpu_release_s
        errors = 0
        while True:
            snapshot = await self.gpu_snapshot()
            if no_gpu_driver(snapshot):
                return True, (), "no GPU driver on the host: no GPU memory to release"
            held = () if snapshot.error else memory_held(snapshot, target.seen)
            if not snapshot.error and not held:
                gpus = ",".join(str(g.index) for g in snapshot.gpus) or "none"
                return True, (), f"GPU memory released (GPUs {gpus}, per {snapshot.source})"
            errors = errors + 1 if snapshot.error else 0
            if time.monotonic() >= deadline or errors >= 3:  # a probe that keeps failing will not recover now
                break
            await asyncio.sleep(0.5)
        if snapshot.error:
            return False, (), f"GPU memory not confirmed: {snapshot.error}"
        names = target.names
        return (
            False,
            held,
            "GPU memory still held: "
            + ", ".join(
                f"GPU {gpu} {_gib(used)} by pid {pid} {names.get(pid, '')}".rstrip() for gpu, pid, used in held
            ),
        )


def controller(host: Host, config: WatchConfig, *, grace_s: float = DEFAULT_GRACE_S) -> ServerControl:
    """The ServerControl the options describe (the keys' restart/terminate/kill, `--launch`, `stop`: TERM to KILL
    after grace_s)."""
    return ServerControl(
        host,
        port=config.port,
        log_path=config.log,
        launch=config.launch,
        cwd=config.cwd,
        remote_python=config.remote_python,
        sim_gpus=config.sim_gpus,
        grace_s=grace_s,
    )


def watch_only(host: Host, config: WatchConfig) -> ProcessWatch:
    """A ProcessWatch of the server the options name, which cannot signal it (`--read-only`, `dump`)."""
    return ProcessWatch(host, port=config.port, log_path=config.log)


def process_watch(host: Host, config: WatchConfig, given: ServerControl | None = None) -> ProcessWatch:
    """What watches the server's processes: under read_only a ProcessWatch alone (nothing that can signal a
    process is built); else a controller, the one given (the demo's) or one from the options."""
    if config.read_only:
        return watch_only(host, config)
    return given if given is not None else controller(host, config)
