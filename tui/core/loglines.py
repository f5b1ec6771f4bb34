"""Bytes of a log stream → lines: decode, strip ANSI, split tqdm `\\r` frames and lines glued to them.

One splitter serves two readers: the log pane wants display lines (a `\\r` frame group collapsed to its last
frame), the parser wants every piece (each frame, so it sees each step of a progress bar, even before the
bar's line ends). Pieces of the still-open line are handed out as soon as the next `\\r` completes them.
"""

from __future__ import annotations

import re

from tui.core.lazyre import lazy
from tui.core.logenvelope import split_envelope

ANSI = lazy(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_])")
# A tqdm frame ends with "…it/s]" or "…s/it]", maybe padded with spaces to its width; text after that is
# another process's line glued on. The padding stays with the frame.
_GLUE = lazy(r"(?:it/s|s/it)\] *(?=\S)")
# The open line's bytes end in a whole tqdm frame ("… 24/64 [00:31<00:51,  1.32s/it]", maybe padded): tqdm
# writes "\r" BEFORE each frame, so its newest frame has no terminator until the next one is drawn.
_FRAME_END = lazy(r"(?:it/s|s/it)\] *$")
# Longest run without "\n" or "\r": a longer one is cut into lines of this size (a stream with no newline
# must not grow memory without end). Cut from the run's start, so any chunking cuts the same way.
MAX_PENDING = 1 << 20


def strip_ansi(text: str) -> str:
    """Remove terminal escape sequences (uvicorn colours `INFO:` on a TTY; tqdm moves the cursor)."""
    return ANSI.sub("", text) if "\x1b" in text else text


def may_be_glued(text: str) -> bool:
    """Cheap pre-check: does the text hold a tqdm frame ("%|" or "Completed |") that ends in "it/s]"/"s/it]"?"""
    return ("it/s]" in text or "s/it]" in text) and ("%|" in text or "Completed |" in text)


def split_glued(frame: str) -> list[str]:
    """Split a frame at each tqdm frame end that has other text glued right after it."""
    if not may_be_glued(frame):
        return [frame]
    parts: list[str] = []
    start = 0
    for m in _GLUE.finditer(frame):
        parts.append(frame[start : m.end()])
        start = m.end()
    parts.append(frame[start:])
    return parts


def frame_pieces(frame: str) -> list[str]:
    """The parser pieces of one "\\r"-separated frame (ANSI already stripped): the frame, then any lines glued
    after it, each tqdm frame without its padding (a frame padded by a later write is the same piece). Text that
    is no tqdm frame stays as it is: the same text as a plain line is the same piece."""
    if not may_be_glued(frame):
        return [] if not frame or frame.isspace() else [frame]
    parts = split_glued(frame)
    pieces = [part.rstrip(" ") if _FRAME_END.search(part) else part for part in parts]
    return pieces[1:] if not parts[0] or parts[0].isspace() else pieces


def _cap_runs(buf: bytes) -> bytes:
    """Insert "\n" every MAX_PENDING bytes into each run that long (runs counted from their start).

    Checks a grid of cells half that wide (a run of MAX_PENDING bytes covers a whole cell) with bytes.find, so a
    normal log costs a few finds per half-MiB."""
    half = MAX_PENDING // 2
    size = len(buf)
    out: list[bytes] = []
    copied = start = 0
    while start + half <= size:
        if buf.find(b"\n", start, start + half) >= 0 or buf.find(b"\r", start, start + half) >= 0:
            start += half
            continue
        left = max(buf.rfind(b"\n", 0, start), buf.rfind(b"\r", 0, start)) + 1
        right = min([i for i in (buf.find(b"\n", start), buf.find(b"\r", start)) if i >= 0] or [size])
        for cut in range(left + MAX_PENDING, right + 1, MAX_PENDING):
            out.append(buf[copied:cut] + b"\n")
            copied = cut
        start = right
    out.append(buf[copied:])
    return b"".join(out) if len(out) > 1 else buf


class LineSplitter:
    """Turns a byte stream, fed in chunks cut anywhere, into display lines (and parser pieces)."""

    def __init__(self) -> None:
        self._pending = b""  # bytes after the last consumed "\n" or "\r"
        self._current: str | None = None  # display: latest frame of the open physical line
        self._line_shown = False  # display: the open physical line produced a display line already

    # ------------------------------------------------------------------ display API

    def feed(self, data: bytes) -> list[str]:
        """Display lines completed by this chunk."""
        display: list[str] = []
        block, partial = self.cut(data)
        if block:
            self.split_block(block.decode("utf-8", "replace"), None, display)
        if partial:
            self.split_partial(partial, None, display)
        return display

    def flush(self) -> list[str]:
        """Display lines of the unterminated tail (end of input)."""
        display: list[str] = []
        tail = self.take_tail()
        if tail is not None:
            self.split_block(tail + "\n", None, display)
        return display

    def open_frame_pieces(self) -> list[str]:
        """The parser pieces of the open line when its bytes end in a whole tqdm frame, else [].

        The pieces a later terminator hands out for this line start with these, whatever comes before it: text
        appended to the line can only split its last piece off at a frame end or pad it with spaces, and pieces
        carry no padding. So a reader may take them now and pass over them when they come (LogParser does)."""
        pending = self._pending
        if not pending or (b"it/s]" not in pending and b"s/it]" not in pending):
            return []
        text = strip_ansi(pending.decode("utf-8", "replace"))
        if _FRAME_END.search(text) is None or not may_be_glued(text):
            return []
        return frame_pieces(text)

    @property
    def current(self) -> str | None:
        """The open line's latest complete frame (a live progress bar: the newest one drawn, before its
        terminator), or None."""
        drawn = self.open_frame_pieces()
        return drawn[-1] if drawn else self._current

    # ------------------------------------------------------------------ shared machinery

    def cut(self, data: bytes) -> tuple[bytes, str]:
        """Take in `data`; return (complete physical lines as bytes ending in "\\n", or b"";
        the decoded complete frames of the open line, "\\r"-separated, or "")."""
        buf = self._pending + data if self._pending else data
        if len(buf) >= MAX_PENDING:
            buf = _cap_runs(buf)
        block = b""
        nl = buf.rfind(b"\n")
        if nl >= 0:
            block, buf = buf[: nl + 1], buf[nl + 1 :]
        partial = ""
        cr = buf.rfind(b"\r")
        if cr >= 0:
            partial, buf = buf[:cr].decode("utf-8", "replace"), buf[cr + 1 :]
            partial += "\r"  # marks that the open line holds frames (even an empty first one)
        self._pending = buf
        return block, partial

    def take_tail(self) -> str | None:
        """The unterminated remainder, decoded (None when there is none)."""
        tail, self._pending = self._pending, b""
        if not tail and self._current is None and not self._line_shown:
            return None
        return tail.decode("utf-8", "replace")

    def split_block(self, text: str, pieces: list[str] | None, display: list[str] | None) -> None:
        """Split complete physical lines (`text` ends with "\\n") into pieces and display lines."""
        lines = text.split("\n")
        lines.pop()  # the text after the final "\n" is empty
        for line in lines:
            if "\r" in line or "\x1b" in line or may_be_glued(line):
                self._frames(line.split("\r"), pieces, display)
            else:  # the common case: one plain line
                if pieces is not None and line:
                    pieces.append(line)
                if display is not None and (line or self._current is None):
                    self._current = line
            if display is not None:
                if self._current is not None:
                    display.append(self._current)
                elif not self._line_shown:
                    display.append("")
            self._current = None
            self._line_shown = False

    def split_partial(self, partial: str, pieces: list[str] | None, display: list[str] | None) -> None:
        """Split the complete frames of the still-open line (`partial` as returned by cut)."""
        frames = partial.split("\r")
        frames.pop()  # the marker's empty remainder
        self._frames(frames, pieces, display)

    def _frames(self, frames: list[str], pieces: list[str] | None, display: list[str] | None) -> None:
        for frame in frames:
            frame = strip_ansi(frame)
            if pieces is not None:
                pieces += frame_pieces(frame)
            parts = split_glued(frame)
            head = parts[0]
            if head and not head.isspace():
                self._current = head
            for tail in parts[1:]:  # another process's line: shown after the frame it was glued to
                if display is not None:
                    if self._current is not None:
                        display.append(self._current)
                    display.append(tail)
                    self._line_shown = True
                self._current = None


# ---------------------------------------------------------------------------------------------- highlighting

_PROGRESS = lazy(r"\d+% Completed \||\d+%\|")
_ERROR = lazy(
    r"Traceback \(most recent call last\)|hit an exception|^Exception in \w+|"
    r"^(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception)(?::|$)|^Exception:|"
    r"OutOfMemoryError|CUDA out of memory|CUDA error|Not enough memory\.|"
    r"Received sigquit|SIGQUIT received|Initialization failed\.|scheduler is dead|died during initialization|"
    r"crashed with exit code|watchdog timeout|Watchdog timeout|Watchdog caught collective|^ERROR:|"
    r"^\[rank\d+\]:\[E|^terminate called|address already in use|Port is already in use|^Killed$|"
    r"^what\(\):|\[Errno 98\]|Cannot access gated repo|access a gated repo",
    re.ASCII,
)
_WARNING = lazy(
    r"warn|WARN|deprecated|is unbalanced|could finish the model loading|^\[rank\d+\]:\[W|"
    r"is in use\. Waiting|can be ignored|Health check failed",
    re.ASCII,
)
_MILESTONE = lazy(
    r"server_args=|Init torch distributed|Init parallel|Memory baseline taken|Load weight (?:begin|end)|"
    r"KV Cache is allocated|Memory pool end|(?i:cuda|cpu|npu) graph (?:begin|end)|max_total_num_tokens=|"
    r"Engine startup timings|Started server process|Application startup complete|Uvicorn running on|"
    r"fired up and ready to roll",
    re.ASCII,
)


def classify_line(text: str) -> str | None:
    """ "error" | "warning" | "milestone" | "progress" | None, for highlighting a display line."""
    msg = split_envelope(text).msg.lstrip()
    if _PROGRESS.search(msg):
        return "progress"
    if _ERROR.search(msg):
        return "error"
    if _WARNING.search(text):
        return "warning"
    if _MILESTONE.search(msg):
        return "milestone"
    return None
