"""What one `sglang-tui probe` call hands the next: the folded state, the parser mid-stream, and where in which
log file it stopped reading; as bytes that are never trusted.

A probe is a fresh process each period (kubelet, systemd, a Slurm script), so without this every call would
parse the whole log again: 1M lines is seconds, and kubelet gives a probe one. The memo makes a call read only
the bytes written since the last one. The bytes are checked before use: a header with a format number, the
version of the code that wrote it (the caller's stamp: tui/commands/probe.py hashes tui/core's modules) and a
fingerprint of the state's layout (a memo written by other code is rebuilt, not
read), the key it was written for, and a SHA-256 of the payload (a torn or edited file is rebuilt). The payload
is a pickle read by an unpickler that builds only the classes of tui.core (the state's records, the parser's
parts) and refuses every other global, so even a forged file runs no code. Whether the log is still the file
the memo read (same device and inode, no shorter, the same bytes before the offset) is the caller's check
(LogMark.same_file), with what its look at the host says.

Pure: bytes in, a value out (pickle and hashlib only; reading and writing the file is tui/commands/probe_file.py).
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import pickle
from dataclasses import dataclass
from enum import Enum

from tui.core import events, state
from tui.core.logparse import LogParser
from tui.core.record import Record, record
from tui.core.remedy_clues import ClueReader
from tui.core.state import Readiness

FORMAT = 1
MAGIC = b"sglang-tui-probe-memo"
TAIL_BYTES = 64  # bytes kept from just before the offset: a file truncated and refilled past it differs there
_ALLOWED_MODULE = "tui.core."


@record
class LogMark(Record):
    """Where the last call stopped reading the log: the file (device, inode), the offset, the bytes before it."""

    dev: str
    inode: str
    offset: int
    tail: bytes = b""

    def same_file(self, dev: str, inode: str, size: int, tail: bytes | None) -> bool:
        """Whether the file the host shows now is the one read, grown or as it was (tail: its bytes just before
        our offset, None when they could not be read)."""
        if (dev, inode) != (self.dev, self.inode) or size < self.offset:
            return False
        return tail is None or tail == self.tail


@record
class FoundServer(Record):
    """The server's processes as the last call found them (tui.sources.procwatch's target) and who held its
    port, so the next call scans those instead of searching every fd on the host again (a fifth of a second on
    a busy host); a call searches again once they are gone or the port's listening sockets changed."""

    main: int | None
    group: int | None
    session: int | None
    run_id: str | None
    known: tuple[tuple[int, int], ...]  # (pid, start time), alive when last seen
    names: tuple[tuple[int, str], ...] = ()
    how: str = ""
    anchored: bool = True
    listeners: tuple[tuple[int, int], ...] = ()  # (uid, inode) of the sockets listening on the port then
    port_pids: tuple[int, ...] = ()  # the processes that held them
    port_names: tuple[tuple[int, str], ...] = ()  # their command lines


@dataclass
class ProbeMemo:
    key: str  # the host, port and log it was written for
    state: Readiness
    parser: LogParser | None = None  # mid-stream: a partial line, an open traceback, the draft's context
    mark: LogMark | None = None
    found: FoundServer | None = None
    saved_at: float = 0.0  # the clock of the call that wrote it
    clues: ClueReader | None = None  # what a remedy reads, from the same bytes (as wait's Monitor has it)


def schema() -> str:
    """A fingerprint of the layout of every record the state is made of: a field added or renamed under the
    same version string (a development tree) makes old memos unreadable rather than wrong."""
    shape = []
    for module in (state, events):
        for name, value in sorted(vars(module).items()):
            if isinstance(value, type) and dataclasses.is_dataclass(value) and value.__module__ == module.__name__:
                shape.append(f"{name}:{','.join(f.name for f in dataclasses.fields(value))}")
    return hashlib.sha256(";".join(shape).encode()).hexdigest()[:16]


def encode(memo: ProbeMemo, version: str) -> bytes:
    payload = pickle.dumps(memo, protocol=pickle.HIGHEST_PROTOCOL)
    digest = hashlib.sha256(payload).hexdigest()
    head = b" ".join((MAGIC, str(FORMAT).encode(), _word(version), schema().encode(), digest.encode()))
    return head + b"\n" + payload


def decode(data: bytes, version: str, key: str) -> ProbeMemo | str:
    """The memo, or why it is not used (one phrase): another format or version, a bad checksum, another key."""
    head, sep, payload = data.partition(b"\n")
    words = head.split(b" ")
    if not sep or len(words) != 5 or words[0] != MAGIC:
        return "not a probe memo"
    if words[1] != str(FORMAT).encode() or words[2] != _word(version) or words[3] != schema().encode():
        return "written by another version"
    if hashlib.sha256(payload).hexdigest().encode() != words[4]:
        return "checksum mismatch (a torn or edited file)"
    try:
        memo = _CoreOnly(io.BytesIO(payload)).load()
    except Exception as err:  # anything a forged or foreign payload raises: rebuilt, never trusted
        return f"unreadable ({type(err).__name__})"
    if not isinstance(memo, ProbeMemo) or not _well_typed(vars(memo)):
        return "not a probe memo"
    if memo.key != key:
        return "written for another server"
    return memo


def _well_typed(fields: dict[str, object]) -> bool:
    """Each part of a memo is what it claims to be (a pickle can set any attribute to anything)."""
    kinds: dict[str, tuple[type, ...]] = {
        "key": (str,), "state": (Readiness,), "parser": (LogParser, type(None)), "mark": (LogMark, type(None)),
        "clues": (ClueReader, type(None)), "found": (FoundServer, type(None)), "saved_at": (float, int),
    }  # fmt: skip
    return set(fields) == set(kinds) and all(isinstance(fields[name], kinds[name]) for name in kinds)


def _word(version: str) -> bytes:
    return (version.replace(" ", "_") or "-").encode()


class _CoreOnly(pickle.Unpickler):
    """Builds only classes defined in tui.core (dataclasses, enums and the parser's own classes): no function,
    no builtin, nothing another module defines, so a forged payload cannot call anything but a constructor of
    the tool's own records."""

    def find_class(self, module: str, name: str) -> type:
        if module.startswith(_ALLOWED_MODULE) and "." not in name:
            import sys

            found = getattr(sys.modules.get(module), name, None)
            if isinstance(found, type) and found.__module__ == module and _plain(found):
                return found
        raise pickle.UnpicklingError(f"{module}.{name} is not allowed in a probe memo")


def _plain(cls: type) -> bool:
    """A record, an enum, or a plain class of tui.core (no metaclass tricks, no __reduce__ of its own)."""
    if dataclasses.is_dataclass(cls) or issubclass(cls, Enum):
        return True
    return type(cls) is type and "__reduce__" not in vars(cls) and "__reduce_ex__" not in vars(cls)
