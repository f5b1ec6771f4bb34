"""The log tail: `tail -c +OFFSET -F -- PATH` on the host, read as bytes, resumed by byte offset.

Before every (re)start it checks `stat -c '%i %s %Y'` (and the last bytes it delivered): another inode, a
size below the offset, or other bytes before it mean the file was rotated or truncated, so it says
LogReset and starts again from 0. Nothing lost, nothing repeated across a reconnect. A new launch appended
to the same file is the parser's business, not this one's. Each look is also said as a LogLook: the size
(the bytes before it are history, written before we read them), the file's mtime and the host's clock against
ours, from which tui/core/clocks.py maps the log's time onto ours.

Attaching to a large log (AttachWindow) reads its last launch: from its `server_args=` line to the end. When
that is more than `head` + `tail` bytes, it reads the launch's first `head` bytes (what was launched, and its
startup) and the file's last `tail` bytes (where it stands now), each cut at a line, and says LogReset("skipped")
between them; the live tail follows on from the end. The last launch is found by a grep of the whole file up to
`scan_whole_max`, and above it of the last `tail` bytes, then of the first `scan_head` (a launch between them is
not seen: the last bytes are then read as a window that begins mid-run). `replay` reads a file whole.

When the name no longer leads to the file the server writes (moved by logrotate while the server keeps its
fd, deleted, replaced), it follows that file through the server's own `/proc/PID/fd/1` (or 2), from the
same byte offset, and says so (LogFile rotated_following / deleted_following); once that process is gone it
goes back to the name. A log path that is missing, a directory, unreadable or a symlink is a LogFile fact.
"""

from __future__ import annotations

import shlex
import time
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from tui.core.clocks import newest_log_time
from tui.core.events import LogActivity, LogFile, LogLook, LogReset
from tui.core.lazyre import lazy
from tui.core.record import Record, record
from tui.sources.backoff import backoff_delays
from tui.sources.host import Host, HostAuthError, HostError, RemoteProcess

if TYPE_CHECKING:
    import asyncio

TailEvent = LogActivity | LogReset | LogFile | LogLook

MIB = 1024 * 1024
LAST_LAUNCH_MIN_BYTES = 2 * MIB  # smaller logs are read whole
TAIL_BYTES = 4 * MIB
NO_LAUNCH_TAIL_BYTES = TAIL_BYTES  # a big log with no `server_args=` line: show only its end
END_BYTES = 64 * 1024  # a look reads the file's last bytes for their newest log time


@record
class AttachWindow(Record):
    """How much of a large log an attach reads (the defaults; tests make them small)."""

    read_whole_below: int = LAST_LAUNCH_MIN_BYTES  # smaller logs are read whole
    tail: int = TAIL_BYTES  # the end of a large log: where the server stands now
    head: int = 2 * MIB  # the first bytes of its last launch: server_args and the startup (SGLang's is ~100 KB)
    scan_whole_max: int = 64 * MIB  # up to this size a grep of the whole file finds the last launch (~50 ms)
    scan_head: int = 8 * MIB  # above it: the last `tail` bytes are searched, then the first `scan_head`


_WAIT_APPEAR_S = 20.0  # one bounded remote wait for a missing file (then we look again)
_PROBLEM_WAIT_S = 2.0  # a directory or an unreadable file: look again this often

# What `tail -F` says on stderr when the file under the name changes (coreutils 9.x wording).
_TRUNCATED = b"file truncated"
_RENAMED = (
    b"has become inaccessible",
    b"has appeared",
    b"has been replaced",
    b"cannot open",
    b"cannot watch",
)  # "cannot watch …: Permission denied": made unreadable (chmod) under tail
_NOTICE_YIELDS = 5  # event-loop turns a stdout chunk waits for a stderr notice already on its way
_SEEN_TAIL = 64  # bytes remembered before the offset, compared on resync


def tail_command(path: str, offset: int, writer: int | None = None) -> str:
    """tail from byte `offset` (0-based); it dies with its channel: a watchdog kills it at stdin EOF.
    With `writer`, PATH is that process's /proc/PID/fd/N: follow the open file (-f) until the process ends."""
    q = shlex.quote(path)
    # A non-interactive sh gives background jobs /dev/null as stdin, so the channel's stdin is kept on fd 3
    # for the watchdog. --pid=$$ also ends tail if this shell is killed outright.
    follow = f"-f -s 0.25 --pid={int(writer)}" if writer else "-F -s 0.25 --pid=$$"
    return (
        "exec 3<&0; "
        f"tail -c +{offset + 1} {follow} -- {q} & t=$!; "
        '{ cat <&3 >/dev/null 2>&1; kill "$t" 2>/dev/null; } >/dev/null 2>&1 & '
        'exec 3<&-; wait "$t"'
    )


_LAUNCH_LINES = "| grep -a -E '^[0-9]+:(\\[[^]]*\\] *)?server_args=' | tail -n 1 | cut -d: -f1"


def last_launch_command(path: str, *, start: int | None = None, head: int | None = None) -> str:
    """Print the byte offset of the last line that starts (after a `[time]` prefix) with `server_args=`: in the
    whole file; with `start`, in the bytes from that offset on (the offset is then relative to it); with `head`,
    in the first `head` bytes."""
    q = shlex.quote(path)
    if start is not None:
        source = f"tail -c +{int(start) + 1} -- {q} | grep -b -a -F 'server_args=' "
    elif head is not None:
        source = f"head -c {int(head)} -- {q} | grep -b -a -F 'server_args=' "
    else:
        source = f"grep -b -a -F 'server_args=' -- {q} "
    return source + _LAUNCH_LINES


def read_command(path: str, start: int, count: int) -> str:
    """`count` bytes of the file from byte `start` (0-based), read once."""
    return f"tail -c +{int(start) + 1} -- {shlex.quote(path)} | head -c {int(count)}"


def look_command(path: str) -> str:
    """What the name is: `L TARGET` when a symlink, then `D` (a directory), `I DEV INODE SIZE MTIME %y` (a file;
    `%y` for the sub-second part of the mtime, which `%Y` truncates;
    followed by `R` when this uid cannot read it), `R` (cannot even stat it) or `M` (missing); then `T EPOCH`,
    the host's clock (GNU date's nanoseconds; BusyBox's whole seconds); then, for a readable file, `E` and its
    last END_BYTES bytes (their newest timestamped line gives the log's zone, tui/core/clocks.py)."""
    q = shlex.quote(path)
    return (
        f'p={q}; [ -L "$p" ] && echo "L $(readlink -f -- "$p")"; '
        'if [ -d "$p" ]; then echo D; '
        'elif s=$(LC_ALL=C stat -L -c \'%d %i %s %Y %y\' -- "$p" 2>&1); then echo "I $s"; [ -r "$p" ] || echo R; '
        'else case "$s" in *"ermission denied"*) echo R;; *) echo M;; esac; fi; '
        'echo "T $(date +%s.%N)"; '
        f'[ -f "$p" ] && [ -r "$p" ] && {{ echo E; tail -c {END_BYTES} -- "$p"; }}; true'
    )


def writer_command(dev: str, inode: str) -> str:
    """`W /proc/PID/fd/N TARGET` for the first process whose stdout or stderr is that file (dev, inode)."""
    want = shlex.quote(f"{dev} {inode}")
    return (
        "f=$(stat -L -c '%d %i %n' /proc/[0-9]*/fd/1 /proc/[0-9]*/fd/2 2>/dev/null "
        f"| awk -v w={want} '$1 \" \" $2 == w {{ print $3; exit }}'); "
        '[ -n "$f" ] && echo "W $f $(readlink -- "$f")"; true'
    )


@record
class FileId(Record):
    """What `stat` says about the file under the name."""

    inode: str
    size: int
    dev: str = ""
    mtime: float | None = None  # the host's epoch at the last write


@record
class Look(Record):
    """What the name is now: kind file | missing | directory | denied; symlink: where it points."""

    kind: str
    file: FileId | None = None
    symlink: str | None = None
    readable: bool = True
    host_now: float | None = None  # the host's clock when it looked (None: it did not say)
    end: bytes = b""  # the file's last bytes (END_BYTES at most)


_EPOCH = lazy(r"\d+(?:\.\d+)?")


def _fraction(clock: str) -> float:
    """The sub-second part of `%y`'s time ("23:26:39.561554675" -> 0.561554675); 0 where stat gives none."""
    _, dot, frac = clock.partition(".")
    return float("0." + frac) if dot and frac.isdigit() else 0.0


def parse_look(output: bytes) -> Look:
    head, marker, end = output.partition(b"\nE\n")
    if not marker and output.startswith(b"E\n"):
        head, end = b"", output[2:]
    symlink, kind, file, readable, host_now = None, "missing", None, True, None
    for line in head.decode("utf-8", "replace").splitlines():
        tag, _, rest = line.partition(" ")
        fields = rest.split()
        if tag == "L":
            symlink = rest
        elif tag == "D":
            kind = "directory"
        elif tag == "I" and len(fields) >= 3 and all(f.isdigit() for f in fields[2:4]):
            mtime = float(fields[3]) + _fraction(fields[5] if len(fields) > 5 else "") if len(fields) >= 4 else None
            kind, file = "file", FileId(fields[1], int(fields[2]), fields[0], mtime)
        elif tag == "R":
            readable = False
            if kind != "file":
                kind = "denied"
        elif tag == "T":
            m = _EPOCH.match(rest)
            host_now = float(m.group()) if m else None
    return Look(kind, file, symlink, readable, host_now, end)


@record
class Writer(Record):
    """The server process whose stdout/stderr the tail follows: its fd path and what that fd points to."""

    fd_path: str
    target: str

    @property
    def pid(self) -> int:
        return int(self.fd_path.split("/")[2])

    @property
    def deleted(self) -> bool:
        return self.target.endswith(" (deleted)")


class LogTail:
    """Follows one log file on a host and yields LogActivity/LogReset, forever (cancel to stop)."""

    def __init__(
        self,
        host: Host,
        path: str,
        *,
        last_launch_min_bytes: int = LAST_LAUNCH_MIN_BYTES,
        retry: tuple[float, float] = (0.5, 10.0),
        window: AttachWindow | None = None,
    ) -> None:
        self.host = host
        self.path = path
        self.offset = 0  # bytes of the current file consumed so far (absolute file offset)
        self._inode: str | None = None
        self._missing = False
        self._force_reset: str | None = None
        self._noticed = False  # the last tail ended because it reported a change of the file
        self._seen_tail = b""  # the last bytes delivered (up to _SEEN_TAIL), to recognise the file on resync
        self._window = window or AttachWindow(read_whole_below=last_launch_min_bytes)
        self._retry = retry
        self._dev = ""  # the followed file's device (with its inode: the file, wherever its name went)
        self._writer: Writer | None = None  # following the server's own stdout, not the name
        self._said: LogFile | None = None  # the last LogFile fact emitted (each is said once)
        self._problem = False  # the name is a directory or unreadable: look again after a pause
        self._align = False  # the read starts inside a line (a large log's last bytes): drop up to its end
        self._skew: float | None = None  # our clock - the host's, from the last look

    async def _look(self) -> Look:
        sent = time.time()
        result = await self.host.run(look_command(self.path), timeout=30.0)
        look = parse_look(result.stdout)
        if look.host_now is not None:  # the host read its clock about halfway through the round trip
            self._skew = (sent + time.time()) / 2 - look.host_now
        return look

    async def _find_writer(self) -> Writer | None:
        """A live process whose stdout or stderr is still the file we followed under the name."""
        if self._inode is None or not self._dev:
            return None
        result = await self.host.run(writer_command(self._dev, self._inode), timeout=30.0)
        for line in result.stdout.decode("utf-8", "replace").splitlines():
            parts = line.split(" ", 2)
            if len(parts) == 3 and parts[0] == "W" and parts[1].startswith("/proc/"):
                return Writer(parts[1], parts[2])
        return None

    def _say(
        self, status: str, *, target: str = "", pid: int | None = None, symlink: str | None = None
    ) -> list[TailEvent]:
        """A LogFile fact, once per change."""
        fact = LogFile(status, self.path, target, pid, symlink)
        if fact == self._said or (self._said is None and status == "ok" and symlink is None):
            return []
        self._said = fact
        return [fact]

    async def _follow_writer(self, writer: Writer, symlink: str | None) -> list[TailEvent]:
        """Keep reading the server's file through its fd, from the same offset."""
        self._writer = writer
        if writer.deleted:
            return self._say("deleted_following", target=writer.fd_path, pid=writer.pid, symlink=symlink)
        return self._say("rotated_following", target=writer.target, pid=writer.pid, symlink=symlink)

    async def _resync_writer(self) -> tuple[list[TailEvent], bool] | None:
        """While following a writer's fd: keep on while it is still that file, else back to the name."""
        writer, self._writer = self._writer, None
        if writer is None:
            return None
        found = await self._find_writer()
        if found is not None:
            self._writer = found
            if self._force_reset:  # tail saw the followed file truncated: it starts again from its first byte
                self._force_reset, self.offset, self._seen_tail = None, 0, b""
                return [LogReset("truncated", f"{found.target}: tail saw it truncated")], True
            return [], True
        return None  # the writer is gone: the name decides again (a new file there is a new start)

    async def _wait_for_file(self) -> None:
        q = shlex.quote(self.path)
        tries = int(_WAIT_APPEAR_S / 0.25)
        await self.host.run(
            f"i=0; while [ ! -e {q} ] && [ $i -lt {tries} ]; do sleep 0.25; i=$((i+1)); done",
            timeout=_WAIT_APPEAR_S + 15,
        )

    async def _grep_launch(self, *, start: int | None = None, head: int | None = None) -> int | None:
        result = await self.host.run(last_launch_command(self.path, start=start, head=head), timeout=300.0)
        text = result.stdout.strip()
        return int(text) + (start or 0) if text.isdigit() else None

    async def _last_launch_at(self, size: int) -> int | None:
        """The byte offset of the last launch's `server_args=` line, None when none is found."""
        w = self._window
        if size <= w.scan_whole_max:
            return await self._grep_launch()
        tail_start = size - w.tail
        found = await self._grep_launch(start=tail_start)
        return found if found is not None else await self._grep_launch(head=min(w.scan_head, tail_start))

    async def _attach(self, size: int) -> tuple[list[TailEvent], list[TailEvent], int]:
        """Where a large log is read from on attach: (its LogReset, the events of its head when the middle is
        skipped, the offset the reading starts at). Sets the offset the tail follows on from."""
        w = self._window
        launch = await self._last_launch_at(size)
        if launch is None:
            start = max(0, size - w.tail)
            self.offset, self._align = start, start > 0
            detail = f"no `server_args=` line in {size} bytes; showing the last {size - start} bytes"
            return [LogReset("started_at_last_launch", detail)], [], start
        said = f"skipped {launch} bytes before the last `server_args=` line"
        resets: list[TailEvent] = [LogReset("started_at_last_launch", said)] if launch > 0 else []
        self.offset = launch
        if size - launch <= w.head + w.tail:
            return resets, [], launch
        head = (await self.host.run(read_command(self.path, launch, w.head), timeout=60.0)).stdout
        head = head[: head.rfind(b"\n") + 1]  # whole lines only: the skip is between lines
        tail_start = size - w.tail
        head_end = launch + len(head)
        skipped = tail_start - head_end
        words = f"skipped {skipped} bytes of the log; reading its last {w.tail} bytes"
        self.offset, self._align = tail_start, True
        return resets, [LogActivity(head_end, head), LogReset("skipped", words, skipped)], launch

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
        following = await self._resync_writer()
        if following is not None:
            return following
        events: list[TailEvent] = []
        look = await self._look()
        found = look.file if look.kind == "file" and look.readable else None
        self._problem = False
        named = look.file  # the file under the name, readable or not
        if self._inode is not None and (named is None or (named.inode, named.dev) != (self._inode, self._dev)):
            writer = await self._find_writer()  # the name left the file the server still writes: keep to it
            if writer is not None:
                return await self._follow_writer(writer, look.symlink), True
        if look.kind == "directory" or (look.kind in ("denied", "file") and not look.readable):
            self._problem = True
            return self._say(
                "directory" if look.kind == "directory" else "permission_denied", symlink=look.symlink
            ), False
        if found is None:
            events += self._say("missing", symlink=look.symlink)
            if not self._missing:
                self._missing = True
                events.append(LogReset("missing", self.path))
            return events, False
        events += self._say("empty" if found.size == 0 else "ok", symlink=look.symlink)
        forced, self._force_reset = self._force_reset, None
        head: list[TailEvent] = []  # a large log's first bytes, said after the look
        start = self.offset
        if self._inode is None:
            if self._missing:
                events.append(LogReset("appeared", self.path))
                self.offset = start = 0
            elif found.size >= self._window.read_whole_below:
                resets, head, start = await self._attach(found.size)
                events += resets
                self._seen_tail = b""
        elif found.inode != self._inode:
            events.append(LogReset("rotated", f"{self.path}: new file (inode {found.inode})"))
            self.offset = 0
        elif forced or found.size < self.offset:
            why = "tail saw it truncated" if forced else f"size {found.size} < offset {self.offset}"
            events.append(LogReset("truncated", f"{self.path}: {why}"))
            self.offset = 0
        elif not await self._same_bytes_before_offset():
            events.append(
                LogReset("truncated", f"{self.path}: rewritten (the bytes before offset {self.offset} changed)")
            )
            self.offset = 0
        if self.offset == 0:
            self._seen_tail = b""
            self._align = False
        self._missing = False
        self._inode, self._dev = found.inode, found.dev
        # what the look saw: the bytes up to its size are history (tui/core/clocks.py), then a large log's head
        start = min(start, self.offset)
        newest = newest_log_time(look.end)
        events.append(LogLook(found.size, found.mtime, self._skew, newest, live=start >= found.size))
        return events + head, True

    async def events(self) -> AsyncIterator[TailEvent]:
        """Follow the file: reconnects, rotations and truncations are handled here, with backoff on errors."""
        import asyncio  # only a watcher that stays runs this loop: a one-look probe never loads asyncio

        delays = backoff_delays(*self._retry)
        while True:
            try:
                events, exists = await self._resync()
                for event in events:
                    yield event
                if not exists:
                    if self._problem:
                        await asyncio.sleep(_PROBLEM_WAIT_S)
                    else:
                        await self._wait_for_file()
                    continue
                writer = self._writer
                source = writer.fd_path if writer else self.path
                proc = await self.host.start(tail_command(source, self.offset, writer.pid if writer else None))
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
        import asyncio  # only a watcher that stays runs this loop: a one-look probe never loads asyncio

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
                    if self._align:  # a read begun inside a line: its rest is not a line of its own
                        cut = data.find(b"\n")
                        self.offset += len(data) if cut < 0 else cut + 1
                        self._align = cut < 0
                        data = b"" if cut < 0 else data[cut + 1 :]
                        if not data:
                            continue
                    self.offset += len(data)
                    self._seen_tail = (self._seen_tail + data[-_SEEN_TAIL:])[-_SEEN_TAIL:]
                    if self._said is not None and self._said.status == "empty":
                        self._said = replace(self._said, status="ok")  # as the reducer, on these bytes
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
        import asyncio  # only a watcher that stays runs this loop: a one-look probe never loads asyncio

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
