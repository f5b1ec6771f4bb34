"""ProcessWatch: the server's processes, found and watched, read only (it signals nothing).

It finds the server by what was launched (pidfile, process group = session, run marker) or adopts one
started by hand (the listener on --port, else the writer of --log), and says whether it lives and who
listens on its port. Its liveness is watched by one long-lived loop on the host (watch_process_events),
not a command per check. `--read-only` builds only this; ServerControl (control.py) adds what signals.
"""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from tui.core.events import HostActivity, PortOwner, ServerProcess
from tui.core.explain import cannot_see_line
from tui.core.forwarders import forwarder
from tui.sources import control_cmds as cmds
from tui.sources.backoff import backoff_delays
from tui.sources.control_cmds import FindResult, Proc
from tui.sources.host import Host, HostAuthError, HostError, RemoteProcess

if TYPE_CHECKING:
    import asyncio

_ADOPT_EVERY_S = 5.0  # the adoption scan reads every fd on the host: not on every Monitor poll
RESCAN_S = 30.0  # the watch's longest gap between full scans while every known process lives
REST_EVERY_S = 6.0  # at rest (the server up, for a watcher that only needs to know it lives): the loop's period


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
    earlier: set[int] = field(default_factory=set)  # writers of the log from its earlier launches (not this one)
    quiet: tuple[int, ...] = ()  # its writers of the log that had written nothing to it when it was found
    quiet_log_size: int | None = None  # the log's size then: every byte before it was written by others
    main_start: int = 0  # the main process's start time (clock ticks; 0 unknown): forked ranks start after it


def _discard(task: asyncio.Future[bytes]) -> None:
    """Cancel a pending read; if it already ended (e.g. with a link error), consume its outcome."""
    if task.done():
        if not task.cancelled():
            task.exception()
    else:
        task.cancel()


class ProcessWatch:
    """The server's process state: found, scanned and watched; never signalled."""

    def __init__(self, host: Host, *, port: int | None, log_path: str | None = None) -> None:
        """port None: the port names nobody of this server (a non-zero node, which shares node 0's port, is
        found by its log alone)."""
        self.host = host
        self.port = int(port) if port is not None else None
        self.log_path = log_path
        self._current_target: _Target | None = None
        self._generation = 0  # bumped whenever the target is replaced: a running watch starts over on it
        self._target_changed: asyncio.Event | None = None
        self._last_adopt = float("-inf")
        self._last_find: FindResult | None = None  # the last search's answer (what it could and could not see)
        self._last_owner: PortOwner | None = None  # the last PortOwner the watch reported
        self._activity: HostActivity | None = None  # the watch's last activity block, for the check after it
        self._at_rest = False  # rest(): the server is up and the watcher wants only whether it lives

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

    # ------------------------------------------------------------------------------------------ finding

    async def _run(self, command: str, *, input: bytes | None = None, timeout: float = 30.0) -> str:
        result = await self.host.run(command, input=input, timeout=timeout)
        return result.stdout.decode("utf-8", "replace")

    async def _adopt(self) -> _Target | None:
        """Find a server we did not launch in this session: pidfile, port listener, or log writer."""
        self._last_adopt = time.monotonic()
        return self._target_from(self._parse_find(await self._run(self._find_command())))

    # How the server is found; a watch of another kind of server (a Slurm job's: sources/slurm_procs.py)
    # finds it its own way, through the same watch loop.
    def _find_command(self) -> str:
        return cmds.find_command(self.port, self.log_path)

    def _parse_find(self, text: str) -> FindResult:
        return cmds.parse_find(text)

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
        # Every live writer of its log and holder of its port belongs to it (orphans keep the log open), but
        # for the writers of an earlier launch in the same log (`launch … >> LOG` while it still runs).
        # A holder of the port that is not of the server's tree (another service) is no member of it.
        latest = cmds.latest_launch(found)
        writers = set(found.log_pids) if latest is None else latest
        # An SGLang-titled writer outside its tree is one only when it started after it (orphans, a forkserver's
        # ranks): a rank of an earlier launch that still writes the same log is not this server's.
        members = {
            p.pid: p.start
            for p in found.procs.values()
            if p.alive
            and (
                p.pid == main.pid
                or (p.pid in writers and (p.start >= main.start or not self._titled(found, p.pid)))
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
            earlier=set(found.log_pids) - writers,
            quiet=tuple(pid for pid in found.quiet_writers if pid in members),
            quiet_log_size=found.log_size,
            main_start=main.start,
        )

    @staticmethod
    def _titled(found: FindResult, pid: int) -> bool:
        return found.names.get(pid, "").startswith(cmds.SGLANG_TITLE)

    def _forked(self, target: _Target) -> cmds.Forked | None:
        """How the scans find what a forkserver forked for this server (SGLANG_EARLY_FORKSERVER=1): by the log
        its ranks hold open (none without a log)."""
        if not self.log_path:
            return None
        return cmds.Forked(self.log_path, target.main, target.main_start)

    def _scan_command(self, target: _Target, *, cmdlines: bool = True) -> str:
        return cmds.scan_command(
            group=target.group,
            session=target.session,
            known=target.known,
            cmdlines=cmdlines,
            forked=self._forked(target),
        )

    async def _scan(self, target: _Target) -> dict[int, Proc]:
        """The server's live processes now; remembers them so re-parented ones are still found later."""
        return self._remember(target, await self._run(self._scan_command(target)))

    @staticmethod
    def _remember(target: _Target, scan_output: str) -> dict[int, Proc]:
        live = {pid: p for pid, p in cmds.parse_scan(scan_output).items() if p.alive}
        target.known = {pid: p.start for pid, p in live.items()}
        if target.main in live and not target.main_start:
            target.main_start = live[target.main].start  # launched: known once a scan saw it
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
        return ServerProcess(alive=False, detail=f"no server process found ({self.where()})")

    def where(self) -> str:
        """ "port 30000 or log /x.log": what the server is looked for by."""
        by = ([f"port {self.port}"] if self.port is not None else []) + (
            [f"log {self.log_path}"] if self.log_path else []
        )
        return " or ".join(by) or "nothing to look for"

    async def disagreement(self) -> str | None:
        """One line when the port and the log name two different servers (a fresh search; raises HostError),
        else None; always None unless both a port and a log are given."""
        if self.port is None or not self.log_path:
            return None
        found = cmds.parse_find(await self._run(cmds.find_command(self.port, self.log_path)))
        return cmds.disagreement(found, self.port, self.log_path)

    @property
    def at_rest(self) -> bool:
        return self._at_rest

    def rest(self, at_rest: bool) -> None:
        """The server is up (ready or serving) and the watcher needs only to know that it lives (a fleet board, an
        exporter: issue 32): the loop then reports every REST_EVERY_S and without the activity sample, which only
        the stall rule reads (it does not apply once up). Any other phase brings both back; a change restarts
        the loop on the host to take it."""
        if at_rest != self._at_rest:
            self._at_rest = at_rest
            if self._target_changed is not None:
                self._target_changed.set()

    def relook(self) -> None:
        """The log shows a new launch: its processes may be others than those watched (`launch … >> LOG`
        while an earlier server still runs), so the server is searched afresh (the watch starts over)."""
        self._target = None
        self._last_adopt = float("-inf")

    def cannot_see(self) -> ServerProcess | None:
        """The last search's answer when it found no server because it cannot see its processes."""
        state = self._not_found()
        return None if state.visible else state

    async def process_state_now(self) -> ServerProcess:
        """Like process_state, but adopts at once (raises HostError)."""
        target = await self._current()
        live = await self._scan(target) if target else {}
        if not live or target is None:
            self._target = None
            return self.cannot_see() or ServerProcess(alive=False)
        return self._alive_state(target)

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
        return self._alive_state(target)

    @staticmethod
    def _alive_state(target: _Target, activity: HostActivity | None = None) -> ServerProcess:
        """The state of a target with live processes: their pids, the SGLang-titled ones (a rank that dies is
        told from them), and those of its writers that had not written to the log when it was found."""
        quiet = tuple(p for p in target.quiet if p in target.known)
        titled = tuple(
            (pid, target.names[pid])
            for pid in sorted(target.known)
            if target.names.get(pid, "").startswith(cmds.SGLANG_TITLE)
        )
        return ServerProcess(
            alive=True,
            pids=tuple(sorted(target.known)),
            detail=target.how,
            activity=activity,
            titled=titled,
            quiet_writers=quiet,
            quiet_log_size=target.quiet_log_size if quiet else None,
            main_gone=target.main if target.main is not None and target.main not in target.known else None,
        )

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
        import asyncio  # only a watcher that stays runs this loop: a one-look probe never loads asyncio

        if self._target_changed is None:
            self._target_changed = asyncio.Event()
        delays = backoff_delays(1.0, 30.0)
        while True:
            generation, target = self._generation, self._target
            self._target_changed.clear()
            resting = self._at_rest and target is not None
            every = interval if target else max(interval, _ADOPT_EVERY_S)  # how often the loop reports
            every = max(every, REST_EVERY_S) if resting else every
            if target is None:
                command = cmds.watch_find_command(self.port, self.log_path, every_s=every, find=self._find_command())
            else:
                command = cmds.watch_scan_command(
                    group=target.group,
                    session=target.session,
                    known=target.known,
                    interval=every,
                    rescan_s=rescan_s,
                    first_rescan_s=first_rescan_s,
                    port=self.port,
                    activity=activity and not resting,
                    forked=self._forked(target),
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
            if generation != self._generation or resting != (self._at_rest and self._target is not None):
                delays = backoff_delays(1.0, 30.0)  # a new target, or at rest or no longer: watch on at once
                continue
            if reported:
                delays = backoff_delays(1.0, 30.0)
            await asyncio.sleep(next(delays))

    async def _watch_blocks(
        self, proc: RemoteProcess, generation: int, *, stale_s: float
    ) -> AsyncGenerator[tuple[str, str], None]:
        """(kind, text) per report of a watch loop, until it ends or the target is replaced; TimeoutError
        when it says nothing for stale_s (a scan stuck on a hung process: start it again)."""
        import asyncio  # only a watcher that stays runs this loop: a one-look probe never loads asyncio

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
            found = self._target_from(self._parse_find(text))
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
        return self._alive_state(target, activity)

    def _owner_changed(self, target: _Target | None, block: tuple[str, str], generation: int) -> PortOwner | None:
        """The PortOwner a find or port block says, when it differs from the last one reported."""
        kind, text = block
        if generation != self._generation or kind not in (cmds.WATCH_FIND, cmds.WATCH_PORT):
            return None
        found = self._parse_find(text) if kind == cmds.WATCH_FIND else cmds.parse_find(text)
        if kind == cmds.WATCH_FIND:
            target = self._target_from(found)  # pure: the same answer _watched adopts
        owner = self._port_owner(found, target)
        if owner is None or owner == self._last_owner:
            return None
        self._last_owner = owner
        return owner

    def _port_owner(self, found: FindResult, target: _Target | None) -> PortOwner | None:
        """Who listens on the port: its pid and command when visible, and whether it is the server's, a
        forwarder in front of it, or an earlier launch of the same log. None without a port to watch."""
        if self.port is None:
            return None
        if not found.port_pids:
            return PortOwner(self.port)  # nobody listens, or the listener cannot be seen
        pid = min(found.port_pids)  # the first of a forked group sharing the socket
        command = found.names.get(pid, "")
        relay = forwarder(command)
        if relay:  # not the server, and not another one: what it relays, the identity probe and the log decide
            return PortOwner(self.port, pid, command, None, forwarder=relay)
        if target is None or not target.anchored:
            return PortOwner(self.port, pid, command, None)
        ours = any(p in target.known for p in found.port_pids)
        earlier = not ours and any(p in target.earlier for p in found.port_pids)
        return PortOwner(self.port, pid, command, ours, earlier=earlier)
