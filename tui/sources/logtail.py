"""The log tail: `tail -c +OFFSET -F -- PATH` on the host, read as bytes, resumed by byte offset.

Before every (re)start it checks `stat -c '%i %s'` (and the last bytes it delivered): another inode, a
size below the offset, or other bytes before it mean the file was rotated or truncated, so it says
LogReset and starts again from 0. Nothing lost, nothing repeated across a reconnect. A new launch appended
to the same file is the parser's business, not this one's.
"""

from __future__ import annotations

import asyncio
import shlex
from dataclasses import dataclass
from typing import Any, AsyncIterator

from tui.core.events import LogActivity, LogReset
from tui.sources.backoff import backoff_delays
from tui.sources.host import Host, HostAuthError, HostError, RemoteProcess

TailEvent = LogActivity | LogReset

LAST_LAUNCH_MIN_BYTES = 2 * 1024 * 1024  # smaller logs are read whole
NO_LAUNCH_TAIL_BYTES = 4 * 1024 * 1024  # a big log with no `server_args=` line: show only its end
_WAIT_APPEAR_S = 20.0  # one bounded remote wait for a missing file (then we look again)

# What `tail -F` says on stderr when the file under the name changes (coreutils 9.x wording).
_TRUNCATED = b"file truncated"
_RENAMED = (b"has become inaccessible", b"has appeared", b"has been replaced", b"cannot open")
_NOTICE_YIELDS = 5  # event-loop turns a stdout chunk waits for a stderr notice already on its way
_SEEN_TAIL = 64  # bytes remembered before the offset, compared on resync


def tail_command(path: str, offset: int) -> str:
    """tail from byte `offset` (0-based); it dies with its channel: a watchdog kills it at stdin EOF."""
    q = shlex.quote(path)
    # A non-interactive sh gives background jobs /dev/null as stdin, so the channel's stdin is kept on fd 3
    # for the watchdog. --pid=$$ also ends tail if this shell is killed outright.
    return (
        "exec 3<&0; "
        f"tail -c +{offset + 1} -F -s 0.25 --pid=$$ -- {q} & t=$!; "
        '{ cat <&3 >/dev/null 2>&1; kill "$t" 2>/dev/null; } >/dev/null 2>&1 & '
        'exec 3<&-; wait "$t"'
    )


def last_launch_command(path: str) -> str:
    """Print the byte offset of the last line that starts (after a `[time]` prefix) with `server_args=`."""
    q = shlex.quote(path)
    return (
        f"grep -b -a -F 'server_args=' -- {q} "
        "| grep -a -E '^[0-9]+:(\\[[^]]*\\] *)?server_args=' | tail -n 1 | cut -d: -f1"
    )


@dataclass(frozen=True)
class FileId:
    """What `stat` says about the file under the name."""

    inode: str
    size: int


class LogTail:
    """Follows one log file on a host and yields LogActivity/LogReset, forever (cancel to stop)."""

    def __init__(
        self,
        host: Host,
        path: str,
        *,
        last_launch_min_bytes: int = LAST_LAUNCH_MIN_BYTES,
        retry: tuple[float, float] = (0.5, 10.0),
    ) -> None:
        self.host = host
        self.path = path
        self.offset = 0  # bytes of the current file consumed so far (absolute file offset)
        self._inode: str | None = None
        self._missing = False
        self._force_reset: str | None = None
        self._noticed = False  # the last tail ended because it reported a change of the file
        self._seen_tail = b""  # the last bytes delivered (up to _SEEN_TAIL), to recognise the file on resync
        self._last_launch_min = last_launch_min_bytes
        self._retry = retry

    async def _stat(self) -> FileId | None:
        q = shlex.quote(self.path)
        result = await self.host.run(f"stat -L -c '%i %s' -- {q}", timeout=30.0)
        if result.returncode != 0:
            return None
        inode, size = result.stdout.split()
        return FileId(inode.decode(), int(size))

    async def _wait_for_file(self) -> None:
        q = shlex.quote(self.path)
        tries = int(_WAIT_APPEAR_S / 0.25)
        await self.host.run(
            f"i=0; while [ ! -e {q} ] && [ $i -lt {tries} ]; do sleep 0.25; i=$((i+1)); done", timeout=_WAIT_APPEAR_S + 15
        )

    async def _last_launch(self, size: int) -> tuple[int, str]:
        result = await self.host.run(last_launch_command(self.path), timeout=300.0)
        text = result.stdout.strip()
        if text.isdigit():
            return int(text), f"skipped {int(text)} bytes before the last `server_args=` line"
        start = max(0, size - NO_LAUNCH_TAIL_BYTES)
        return start, f"no `server_args=` line in {size} bytes; showing the last {size - start} bytes"

    async def _same_bytes_before_offset(self) -> bool:
        """Whether the file still holds, just before our offset, the bytes we delivered there: a file
        truncated and refilled past our offset while we were away has the same inode and a big enough size."""
        if not self._seen_tail:
            return True
        n = len(self._seen_tail)
        q = shlex.quote(self.path)
        result = await self.host.run(f"tail -c +{self.offset - n + 1} -- {q} | head -c {n}", timeout=30.0)
        return result.returncode != 0 or result.stdout == self._seen_tail

    async def _resync(self) -> tuple[list[TailEvent], bool]:
        """Decide where to (re)start. Returns events to emit and whether the file exists now."""
        events: list[TailEvent] = []
        found = await self._stat()
        if found is None:
            if not self._missing:
                self._missing = True
                events.append(LogReset("missing", self.path))
            return events, False
        forced, self._force_reset = self._force_reset, None
        if self._inode is None:
            if self._missing:
                events.append(LogReset("appeared", self.path))
                self.offset = 0
            elif found.size >= self._last_launch_min:
                start, detail = await self._last_launch(found.size)
                if start > 0:
                    events.append(LogReset("started_at_last_launch", detail))
                self.offset = start
                self._seen_tail = b""
        elif found.inode != self._inode:
            events.append(LogReset("rotated", f"{self.path}: new file (inode {found.inode})"))
            self.offset = 0
        elif forced or found.size < self.offset:
            why = "tail saw it truncated" if forced else f"size {found.size} < offset {self.offset}"
            events.append(LogReset("truncated", f"{self.path}: {why}"))
            self.offset = 0
        elif not await self._same_bytes_before_offset():
            events.append(LogReset("truncated", f"{self.path}: rewritten (the bytes before offset {self.offset} changed)"))
            self.offset = 0
        if self.offset == 0:
            self._seen_tail = b""
        self._missing = False
        self._inode = found.inode
        return events, True

    async def events(self) -> AsyncIterator[TailEvent]:
        """Follow the file: reconnects, rotations and truncations are handled here, with backoff on errors."""
        delays = backoff_delays(*self._retry)
        while True:
            try:
                events, exists = await self._resync()
                for event in events:
                    yield event
                if not exists:
                    await self._wait_for_file()
                    continue
                proc = await self.host.start(tail_command(self.path, self.offset))
                delivered = self._noticed = False
                try:
                    async for event in self._follow(proc):
                        delivered = True
                        yield event
                finally:
                    await proc.close()
                if delivered or self._noticed:
                    delays = backoff_delays(*self._retry)
                else:  # tail ended at once with nothing to say: do not spin
                    await asyncio.sleep(next(delays))
            except HostAuthError:
                raise
            except (HostError, TimeoutError, ValueError):
                await asyncio.sleep(next(delays))

    async def _follow(self, proc: RemoteProcess) -> AsyncIterator[LogActivity]:
        """Stream stdout until tail reports that the file changed under its name, exits, or the link dies."""
        notice = asyncio.ensure_future(self._watch_stderr(proc))
        chunk: asyncio.Future[bytes] | None = None
        try:
            while True:
                chunk = asyncio.ensure_future(proc.read())
                done, _ = await asyncio.wait({chunk, notice}, return_when=asyncio.FIRST_COMPLETED)
                if chunk in done:
                    data = chunk.result()  # raises HostUnreachable when the link died
                    if not data:
                        return
                    # tail writes its notice before the new file's bytes, but on another pipe: give the
                    # notice a moment to be read, so bytes of a new file are not counted as the old one's.
                    for _ in range(_NOTICE_YIELDS):
                        if notice.done():
                            break
                        await asyncio.sleep(0)
                    if notice.done():
                        self._note(notice.result())
                        return  # resync from the file's new start; this chunk is not counted
                    self.offset += len(data)
                    self._seen_tail = (self._seen_tail + data[-_SEEN_TAIL:])[-_SEEN_TAIL:]
                    yield LogActivity(self.offset, data)
                    continue
                self._note(notice.result())
                return
        finally:
            _discard(notice)
            if chunk is not None:
                _discard(chunk)

    def _note(self, reason: str) -> None:
        self._noticed = True
        if reason == "truncated":
            self._force_reset = "truncated"

    async def _watch_stderr(self, proc: RemoteProcess) -> str:
        """Wait for a line of tail's stderr that means the file was truncated or replaced."""
        buffer = b""
        while True:
            data = await proc.read_stderr()
            if not data:
                await asyncio.Event().wait()  # stderr closed: only stdout decides from here
            buffer += data
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                if _TRUNCATED in line:
                    return "truncated"
                if any(marker in line for marker in _RENAMED):
                    return "renamed"


def _discard(task: asyncio.Future[Any]) -> None:
    """Cancel a helper read; if it already ended (e.g. with a link error), consume its outcome."""
    if task.done():
        if not task.cancelled():
            task.exception()
    else:
        task.cancel()
