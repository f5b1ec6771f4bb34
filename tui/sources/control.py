"""ServerControl: the only module that changes the host (launch, terminate, kill, restart).

It finds the server by what it launched (pidfile, process group = session, run marker) or adopts one
started by hand (the listener on --port, else the writer of --log), signals its process group, sweeps
survivors that carry the run marker or share its session or descend from it, and confirms through the
GPU probe that their memory is released. Never by name: a same-titled process elsewhere is left alone.
Its liveness is watched by one long-lived loop on the host (watch_process_state), not a command per check.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing
from dataclasses import dataclass, field

from tui.core.events import ControlResult, GpuSnapshot, HostActivity, PortOwner, ServerProcess
from tui.core.explain import cannot_see_line
from tui.core.gpuparse import memory_held, no_gpu_driver, parse_probe_line
from tui.core.vocab import StopAction
from tui.sources import control_cmds as cmds
from tui.sources.backoff import backoff_delays
from tui.sources.control_cmds import FindResult, Proc
from tui.sources.gpu import probe_command, probe_script
from tui.sources.host import Host, HostAuthError, HostError, RemoteProcess

# SGLang drains on SIGTERM (a status line every 5 s, then 15 s for schedulers after ShutdownReq before
# it kills them itself), and its own test harness waits 60 s; 30 s covers a drain with no long requests.
DEFAULT_GRACE_S = 30.0
KILL_WAIT_S = 10.0  # after SIGKILL: a process in GPU teardown (state D) can take a while to go
GPU_RELEASE_S = 30.0  # the driver frees memory after the process is gone ("queues the teardown")
_ADOPT_EVERY_S = 5.0  # the adoption scan reads every fd on the host: not on every Monitor poll
RESCAN_S = 30.0  # the watch's longest gap between full scans while every known process lives


@dataclass
class _Target:
    """What we know of the server: its group/session, run marker, and every process seen in it."""

    main: int | None = None
    group: int | None = None
    session: int | None = None
    run_id: str | None = None
    known: dict[int, int] = field(default_factory=dict)  # pid -> start time, alive when last seen
    seen: set[int] = field(default_factory=set)  # every pid ever seen in the server (for GPU attribution)
    names: dict[int, str] = field(default_factory=dict)
    how: str = ""
    anchored: bool = True  # known by more than holding the port (pidfile, our launch, a writer of the log)


def _discard(task: asyncio.Future[bytes]) -> None:
    """Cancel a pending read; if it already ended (e.g. with a link error), consume its outcome."""
    if task.done():
        if not task.cancelled():
            task.exception()
    else:
        task.cancel()


def _gib(n: int) -> str:
    return f"{n / 2**30:.1f} GiB"


class ServerControl:
    """Launch, terminate, kill and restart one server, and report its process state."""

    def __init__(
        self,
        host: Host,
        *,
        port: int,
        log_path: str | None = None,
        launch: str | None = None,
        cwd: str | None = None,
        remote_python: str = "python3",
        sim_gpus: str | None = None,
        grace_s: float = DEFAULT_GRACE_S,
        gpu_release_s: float = GPU_RELEASE_S,
    ) -> None:
        self.host = host
        self.port = int(port)
        self.log_path = log_path
        self.launch_cmd = launch
        self.cwd = cwd
        self.remote_python = remote_python
        self.sim_gpus = sim_gpus
        self.grace_s = grace_s
        self.gpu_release_s = gpu_release_s
        self._current_target: _Target | None = None
        self._generation = 0  # bumped whenever the target is replaced: a running watch starts over on it
        self._target_changed: asyncio.Event | None = None
        self._last_adopt = float("-inf")
        self._last_find: FindResult | None = None  # the last search's answer (what it could and could not see)
        self._last_owner: PortOwner | None = None  # the last PortOwner the watch reported
        self._activity: HostActivity | None = None  # the watch's last activity block, for the check after it

    @property
    def _target(self) -> _Target | None:
        return self._current_target

    @_target.setter
    def _target(self, target: _Target | None) -> None:
        if target is not self._current_target:
            self._current_target = target
            self._generation += 1
            if self._target_changed is not None:
                self._target_changed.set()

    # ---------------------------------------------------------------------------------------- describe

    def describe(self, action: str) -> str:
        """The exact commands an action runs on the host, for the confirm dialog."""
        t = self._target or _Target()
        if action == "launch":
            return self._launch_command(t.run_id or "<new run id>") or "no --launch command given"
        scan = cmds.scan_command(group=t.group, session=t.session, run_id=t.run_id, known=t.known)
        who = (
            f"process group {t.group}"
            if t.group
            else f"pids {sorted(t.known)}"
            if t.known
            else f"the server on port {self.port} (found when run)"
        )
        steps = [f"# {action} {who}" + (f", run marker {cmds.MARKER_VAR}={t.run_id}" if t.run_id else "")]
        if action in ("terminate", "restart", "stop"):
            steps += [
                f"# TERM, then wait up to {self.grace_s:g} s for SGLang's drain",
                cmds.stop_command("TERM", group=t.group, procs=t.known, wait_s=self.grace_s, scan=scan),
            ]
        steps += [
            "# KILL what is left; the same again for survivors found by group, session, run marker or descent",
            cmds.stop_command("KILL", group=t.group, procs=t.known, wait_s=KILL_WAIT_S, scan=scan),
            "# confirm their GPU memory is released (the probe script on stdin)",
            self._probe_once_command(),
        ]
        if action == "restart":
            steps += ["# then launch again", self._launch_command("<new run id>") or "no --launch command given"]
        return "\n".join(steps)

    def _launch_command(self, run_id: str) -> str | None:
        if not self.launch_cmd or not self.log_path:
            return None
        return cmds.launch_command(self.launch_cmd, log_path=self.log_path, run_id=run_id, cwd=self.cwd)

    # ------------------------------------------------------------------------------------------ finding

    async def _run(self, command: str, *, input: bytes | None = None, timeout: float = 30.0) -> str:
        result = await self.host.run(command, input=input, timeout=timeout)
        return result.stdout.decode("utf-8", "replace")

    async def _adopt(self) -> _Target | None:
        """Find a server we did not launch in this session: pidfile, port listener, or log writer."""
        self._last_adopt = time.monotonic()
        return self._target_from(cmds.parse_find(await self._run(cmds.find_command(self.port, self.log_path))))

    def _target_from(self, found: FindResult) -> _Target | None:
        self._last_find = found
        main = cmds.pick_main(found)
        if main is None:
            return None
        how = (
            "pidfile"
            if main.pid == found.pidfile
            else f"listener on port {self.port}"
            if main.pid in found.port_pids
            else f"writer of {self.log_path}"
        )
        # Its group and session count only when it leads them: otherwise they hold the user's shell too.
        # Every live writer of its log and holder of its port belongs to it (orphans keep the log open).
        # A holder of the port that is not of the server's tree (another service) is no member of it.
        members = {
            p.pid: p.start
            for p in found.procs.values()
            if p.alive
            and (
                p.pid == main.pid
                or p.pid in found.log_pids
                or (p.pid in found.port_pids and cmds.in_tree(p, main, found.procs))
            )
        }
        anchored = main.pid == found.pidfile or main.pid in found.log_pids or not self.log_path
        return _Target(
            main=main.pid,
            group=main.pid if main.pgid == main.pid else None,
            session=main.pid if main.sid == main.pid else None,
            run_id=main.marker,
            known=members,
            how=how,
            anchored=anchored,
        )

    async def _scan(self, target: _Target) -> dict[int, Proc]:
        """The server's live processes now; remembers them so re-parented ones are still found later."""
        return self._remember(
            target,
            await self._run(
                cmds.scan_command(group=target.group, session=target.session, run_id=target.run_id, known=target.known)
            ),
        )

    @staticmethod
    def _remember(target: _Target, scan_output: str) -> dict[int, Proc]:
        live = {pid: p for pid, p in cmds.parse_scan(scan_output).items() if p.alive}
        target.known = {pid: p.start for pid, p in live.items()}
        target.seen.update(live)
        target.names.update({pid: p.name for pid, p in live.items() if p.name})
        return live

    async def _current(self, *, adopt_now: bool = True) -> _Target | None:
        if self._target is None and (adopt_now or time.monotonic() - self._last_adopt >= _ADOPT_EVERY_S):
            self._target = await self._adopt()
        return self._target

    def _not_found(self) -> ServerProcess:
        hidden, owner = cmds.hidden_owner(self._last_find) if self._last_find else (False, None)
        if hidden:  # not found because it cannot be seen: unknown, never gone
            return ServerProcess(alive=False, detail=cannot_see_line(owner), visible=False, owner_uid=owner)
        where = f"port {self.port}" + (f" or log {self.log_path}" if self.log_path else "")
        return ServerProcess(alive=False, detail=f"no server process found ({where})")

    def cannot_see(self) -> ServerProcess | None:
        """The last search's answer when it found no server because it cannot see its processes."""
        state = self._not_found()
        return None if state.visible else state

    async def process_state_now(self) -> ServerProcess:
        """Like process_state, but adopts at once (raises HostError)."""
        target = await self._current()
        live = await self._scan(target) if target else {}
        if not live:
            self._target = None
            return self.cannot_see() or ServerProcess(alive=False)
        return ServerProcess(alive=True, pids=tuple(sorted(live)), detail=target.how if target else "")

    async def server_processes(self) -> tuple[int | None, dict[int, str]]:
        """(main pid, {pid: command line}) of the server's live processes now (adopts at once; raises HostError)."""
        target = await self._current()
        live = await self._scan(target) if target else {}
        if not live or target is None:
            return None, {}
        return target.main, {pid: target.names.get(pid, p.name) for pid, p in live.items()}

    async def process_state(self) -> ServerProcess:
        """Alive and pids of the server (cheap: one /proc scan; adoption retried at most every few seconds)."""
        try:
            target = await self._current(adopt_now=False)
            if target is None:
                return self._not_found()
            live = await self._scan(target)
        except (HostError, TimeoutError) as exc:
            return ServerProcess(alive=False, detail=f"process state unknown: {exc}")
        if not live:
            self._target = None  # gone: a server started later (by anyone) is adopted afresh
            return ServerProcess(alive=False, detail="server processes gone")
        return ServerProcess(alive=True, pids=tuple(sorted(live)), detail=target.how)

    # -------------------------------------------------------------------------------------------- watch

    async def watch_process_state(
        self,
        interval: float = 2.0,
        *,
        rescan_s: float = RESCAN_S,
        first_rescan_s: float | None = None,
        activity: bool = True,
    ) -> AsyncIterator[ServerProcess]:
        """watch_process_events, the process states only."""
        async with aclosing(
            self.watch_process_events(interval, rescan_s=rescan_s, first_rescan_s=first_rescan_s, activity=activity)
        ) as events:
            async for event in events:
                if isinstance(event, ServerProcess):
                    yield event

    async def watch_process_events(
        self,
        interval: float = 2.0,
        *,
        rescan_s: float = RESCAN_S,
        first_rescan_s: float | None = None,
        activity: bool = True,
    ) -> AsyncGenerator[ServerProcess | PortOwner, None]:
        """process_state, continuously, from ONE long-lived loop on the host (no channel, login shell or
        full /proc scan per check): a ServerProcess per check while found, per search while not, and a
        PortOwner whenever who listens on the port changes (from each search, and each full scan).

        While the host cannot be reached it yields nothing (unknown, never dead) and starts the loop again
        with backoff; the loop ends with its channel, so nothing is left on the host. With `activity` each
        check also carries what the processes do beyond the log (ServerProcess.activity, issue 13)."""
        if self._target_changed is None:
            self._target_changed = asyncio.Event()
        delays = backoff_delays(1.0, 30.0)
        while True:
            generation, target = self._generation, self._target
            self._target_changed.clear()
            every = interval if target else max(interval, _ADOPT_EVERY_S)  # how often the loop reports
            if target is None:
                command = cmds.watch_find_command(self.port, self.log_path, every_s=every)
            else:
                command = cmds.watch_scan_command(
                    group=target.group,
                    session=target.session,
                    run_id=target.run_id,
                    known=target.known,
                    interval=interval,
                    rescan_s=rescan_s,
                    first_rescan_s=first_rescan_s,
                    port=self.port,
                    activity=activity,
                )
            reported = False
            try:
                proc = await self.host.start(command)
                try:
                    async with aclosing(self._watch_blocks(proc, generation, stale_s=3 * every + 60)) as blocks:
                        async for block in blocks:
                            owner = self._owner_changed(target, block, generation)
                            if owner is not None:
                                yield owner
                            state = self._watched(target, block, generation)
                            if state is not None:
                                reported = True
                                yield state
                finally:
                    await proc.close()
            except HostAuthError:
                raise  # final: the host already reported `failed`
            except (HostError, TimeoutError):
                pass  # unreachable: unknown, not dead; start again below
            if generation != self._generation:
                delays = backoff_delays(1.0, 30.0)  # a new target: watch it at once
                continue
            if reported:
                delays = backoff_delays(1.0, 30.0)
            await asyncio.sleep(next(delays))

    async def _watch_blocks(
        self, proc: RemoteProcess, generation: int, *, stale_s: float
    ) -> AsyncGenerator[tuple[str, str], None]:
        """(kind, text) per report of a watch loop, until it ends or the target is replaced; TimeoutError
        when it says nothing for stale_s (a scan stuck on a hung process: start it again)."""
        assert self._target_changed is not None
        changed = asyncio.ensure_future(self._target_changed.wait())
        chunk: asyncio.Future[bytes] | None = None
        pending, kind, lines = b"", "", list[str]()
        try:
            while generation == self._generation:
                chunk = asyncio.ensure_future(proc.read())
                await asyncio.wait({chunk, changed}, timeout=stale_s, return_when=asyncio.FIRST_COMPLETED)
                if changed.done():
                    return
                if not chunk.done():
                    raise TimeoutError(f"the process watch said nothing for {stale_s:g} s")
                data = chunk.result()  # raises HostUnreachable when the link died
                if not data:
                    return
                pending += data
                *complete, pending = pending.split(b"\n")
                for raw in complete:
                    line = raw.decode("utf-8", "replace")
                    if kind:
                        if line == cmds.WATCH_END:
                            yield kind, "\n".join(lines)
                            kind, lines = "", []
                        else:
                            lines.append(line)
                    elif line in (cmds.WATCH_SCAN, cmds.WATCH_FIND, cmds.WATCH_PORT):
                        kind = line
                    elif line.split(" ", 1)[0] == cmds.WATCH_ACTIVITY:
                        kind, lines = cmds.WATCH_ACTIVITY, [line]
                    elif line == cmds.WATCH_ALIVE:
                        yield line, ""
        finally:
            changed.cancel()
            if chunk is not None:
                _discard(chunk)

    def _watched(self, target: _Target | None, block: tuple[str, str], generation: int) -> ServerProcess | None:
        """The state one report of the watch says (None when the target was replaced meanwhile)."""
        if generation != self._generation:
            return None
        kind, text = block
        if kind == cmds.WATCH_FIND:
            found = self._target_from(cmds.parse_find(text))
            if found is None:
                return self._not_found()
            self._target = found  # the watch starts over on it, with a scan at once
            return None
        assert target is not None
        if kind == cmds.WATCH_PORT:
            return None  # _owner_changed's
        if kind == cmds.WATCH_ACTIVITY:
            self._activity = cmds.parse_activity(text, target.names)
            return None
        if kind == cmds.WATCH_SCAN:
            self._remember(target, text)
        activity, self._activity = self._activity, None
        if not target.known:
            self._target = None  # gone: a server started later (by anyone) is adopted afresh
            return ServerProcess(alive=False, detail="server processes gone")
        return ServerProcess(alive=True, pids=tuple(sorted(target.known)), detail=target.how, activity=activity)

    def _owner_changed(self, target: _Target | None, block: tuple[str, str], generation: int) -> PortOwner | None:
        """The PortOwner a find or port block says, when it differs from the last one reported."""
        kind, text = block
        if generation != self._generation or kind not in (cmds.WATCH_FIND, cmds.WATCH_PORT):
            return None
        found = cmds.parse_find(text)
        if kind == cmds.WATCH_FIND:
            target = self._target_from(found)  # pure: the same answer _watched adopts
        owner = self._port_owner(found, target)
        if owner == self._last_owner:
            return None
        self._last_owner = owner
        return owner

    def _port_owner(self, found: FindResult, target: _Target | None) -> PortOwner:
        """Who listens on the port: its pid and command when visible, and whether it is the server's."""
        if not found.port_pids:
            return PortOwner(self.port)  # nobody listens, or the listener cannot be seen
        pid = min(found.port_pids)  # the first of a forked group sharing the socket
        command = found.names.get(pid, "")
        if target is None or not target.anchored:
            return PortOwner(self.port, pid, command, None)
        return PortOwner(self.port, pid, command, any(p in target.known for p in found.port_pids))

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
            where = f"port {self.port}" + (f" or log {self.log_path}" if self.log_path else "")
            return ControlResult(action, True, f"nothing to stop: no server process found ({where})", found="nothing")
        commands: list[str] = []
        live = await self._scan(target)
        steps: list[str] = []
        if live and graceful:
            live = await self._signal_and_wait(target, "TERM", live, self.grace_s, commands)
            steps.append("exited on TERM" if not live else f"{len(live)} still alive after {self.grace_s:g} s of TERM")
        for round_ in range(2):  # each rescan also finds survivors by session, run marker and descent
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
        scan = cmds.scan_command(group=target.group, session=target.session, run_id=target.run_id, known=target.known)
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
