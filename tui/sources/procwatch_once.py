"""The process watch for a one-shot command (`probe`): one look, resumed from what the last call found.

A watcher that stays runs one loop on the host (ProcessWatch.watch_process_events). A probe is a fresh process
each period, so it hands the watch the server the last call found (tui.core.probe_memo.FoundServer): one
command then scans those processes, lists the port's listening sockets and samples their activity. Only when
they are gone, or the port's sockets changed, does it search the whole host again (the pidfile, every fd for
the port's listener and the log's writers), as the first call does.

Once the server is ready (`settled`), a call needs only whether its known processes still live and who listens
on the port: no stall applies, so no activity sample, and its processes are all known, so no scan for new ones
(a restart shows in the log first, and the next call scans again). Over SSH that is one shell with no fork but
the listeners' awk; here (NowHost) the same lines are read from /proc and no process is started. On a busy GPU
host (every CPU compiling kernels) the ~15 short processes of a full look were most of a call's time (issue 32).
"""

from __future__ import annotations

from dataclasses import replace

from tui.core.events import PortOwner, ServerProcess
from tui.core.probe_memo import FoundServer
from tui.sources import control_cmds as cmds
from tui.sources import now
from tui.sources.control_cmds import FindResult
from tui.sources.now import NowHost
from tui.sources.procwatch import ProcessWatch, _Target

_PART = "@@sglang-tui@@"


class OneShotWatch(ProcessWatch):
    """ProcessWatch's finding and scanning, for one look."""

    async def look(
        self, found: FoundServer | None, *, settled: bool = False
    ) -> tuple[ServerProcess, PortOwner | None, FoundServer | None]:
        """The process state, who listens on the port (None without a port), and what to hand the next call
        (raises HostError). settled: the server was ready at the last call (the module's docstring)."""
        if found is not None:
            resumed = await self._resume(found, settled=settled)
            if resumed is not None:
                return resumed
        state = await self.process_state_now()
        target, search = self._target, self._last_find
        owner = self._port_owner(search, target) if search is not None else self._nobody()
        if not state.alive or target is None or search is None:
            return state, owner, None
        sample = cmds.parse_activity(await self._run(cmds.activity_command(target.known)), target.names)
        port_names = tuple((p, search.names.get(p, "")) for p in search.port_pids)
        return replace(state, activity=sample), owner, _found(target, search.listeners, search.port_pids, port_names)

    def _nobody(self) -> PortOwner | None:
        return PortOwner(self.port) if self.port is not None else None

    async def _resume(
        self, found: FoundServer, *, settled: bool
    ) -> tuple[ServerProcess, PortOwner | None, FoundServer] | None:
        """The last call's server scanned again (with its port's sockets, and while it starts an activity sample);
        None when none of its processes lives any more (the caller searches afresh)."""
        target = _Target(
            main=found.main, group=found.group, session=found.session, run_id=found.run_id,
            known=dict(found.known), names=dict(found.names), how=found.how, anchored=found.anchored,
        )  # fmt: skip
        self._target = target
        if settled and isinstance(self.host, NowHost):
            listening = now.listening(self.port) if self.port is not None else ""
            scan, activity = now.known_live(target.known), ""
        else:
            listen = cmds.listeners_command(self.port) if self.port is not None else ":"
            command = (
                f"{cmds.known_live_command(target.known) if settled else self._scan_command(target, cmdlines=False)}"
                f"\necho {_PART}\n{listen}\necho {_PART}\n{':' if settled else cmds.activity_command(target.known)}"
            )
            scan, _, rest = (await self._run(command)).partition(f"{_PART}\n")
            listening, _, activity = rest.partition(f"{_PART}\n")
        live = self._remember(target, scan)
        if not live:
            self._target = None
            return None
        listeners = cmds.parse_find(listening).listeners
        if listeners == found.listeners or self.port is None:
            search = FindResult(None, found.port_pids, (), {}, listeners=listeners, names=dict(found.port_names))
        else:  # another socket listens now: whose it is needs the fd search
            search = cmds.parse_find(await self._run(cmds.port_owner_command(self.port)))
        owner = self._port_owner(search, target)
        state = ServerProcess(
            alive=True,
            pids=tuple(sorted(live)),
            detail=target.how,
            activity=None if settled else cmds.parse_activity(activity, target.names),
            main_gone=target.main if target.main is not None and target.main not in live else None,
        )
        port_names = tuple((p, search.names.get(p, "")) for p in search.port_pids)
        return state, owner, _found(target, search.listeners, search.port_pids, port_names)


def _found(
    target: _Target,
    listeners: tuple[tuple[int, int], ...],
    port_pids: tuple[int, ...],
    port_names: tuple[tuple[int, str], ...],
) -> FoundServer:
    return FoundServer(
        main=target.main, group=target.group, session=target.session, run_id=target.run_id,
        known=tuple(sorted(target.known.items())), names=tuple(sorted(target.names.items())), how=target.how,
        anchored=target.anchored, listeners=listeners, port_pids=port_pids, port_names=port_names,
    )  # fmt: skip
