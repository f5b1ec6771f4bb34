"""What a remedy reads in the log, beside the failure line: the launch's `server_args=` text, SGLang's own printed
suggestion, the cache directories a failed build names, and the batch size the CUDA graph capture began with.

The parser says what happened; these are the few lines that say what to change. They are read from the same bytes
(`wait`, the TUI: sources/monitor; `replay`: commands/replay) by a reader of their own, so the parser's job stays
one, and folded as one `LogClues` snapshot into `state.clues` (`on_log_clues`). Only lines that hold one of a few
fixed words are looked at, so a serving log's gigabytes cost a `bytes.find` each chunk.
"""

from __future__ import annotations

import re
from dataclasses import replace

from tui.core.events import LogClues
from tui.core.lazyre import lazy
from tui.core.state import Readiness

ARGS_MAX = 64 << 10  # a server_args line longer than this is cut: the fields a remedy reads come first or early
ADVICE_MAX = 12  # lines of SGLang's `Possible solutions:` block kept
CACHE_DIRS_MAX = 4
_CARRY_MAX = 256 << 10  # a partial line longer than this is dropped (no clue line is that long but server_args)
# a cache directory's own words, not "cache" alone: every prefill batch line says "cache hit rate"
_CACHE_WORDS = ("/.cache/", "torchinductor_", "/.triton", "/.deep_gemm")
_CAPTURE_WORD = b"Capturing batches (bs="
# each word is one pass of bytes.find over a chunk: the cache directories' are found by what they share (a dot
# directory: ~/.cache/…, ~/.triton, ~/.deep_gemm) and torch inductor's /tmp/torchinductor_USER
_WORDS = (b"server_args=", b"Possible solutions", _CAPTURE_WORD, b"/.", b"torchinductor_")

# `Capturing batches (bs=160 avail_mem=…)`: SGLang captures the largest batch size first
_CAPTURE_BS = lazy(r"Capturing batches \(bs=(\d+)")
_ADVICE_ITEM = lazy(r"^\s*\d+\.\s+\S")
# a cache directory named by a line about a failed or locked build (FlashInfer, Triton, DeepGEMM, TVM FFI,
# torch inductor, torch extensions): the place a half-written build is left
_CACHE_DIR = lazy(
    r"(?P<dir>(?:~|/)[\w.@+-]*(?:/[\w.@+-]+)*/(?:\.cache/[\w.+-]+|torch_extensions|torchinductor_[\w.-]+|"
    r"\.triton|\.deep_gemm|triton_cache|deep_gemm|flashinfer|tvm-ffi)(?:/[\w.@+-]+)?)"
)
_BUILD_WORDS = lazy(r"error|failed|lock|compil|build|ninja|nvcc", re.IGNORECASE)


def _line_around(data: bytes, at: int) -> tuple[int, int]:
    """(start, end) of the line holding byte `at` (lines end at \n or \r: tqdm frames are lines of their own).
    Each search is bounded by the \n found first, so a chunk without \r is not scanned to its end per line."""
    start = data.rfind(b"\n", 0, at) + 1
    start = max(start, data.rfind(b"\r", start, at) + 1)
    end = data.find(b"\n", at)
    end = len(data) if end < 0 else end
    cr = data.find(b"\r", at, end)
    return start, end if cr < 0 else cr


def on_log_clues(s: Readiness, ev: LogClues, now: float) -> Readiness:
    """The latest snapshot of the log's clues replaces the last."""
    return s if s.clues == ev else s.evolve(clues=ev)


class ClueReader:
    """Bytes of one log file in, a new `LogClues` out when they say something new. A new `server_args=` line is a
    new launch: the suggestion and cache directories of the last one go."""

    def __init__(self) -> None:
        self._carry = b""
        self._clues = LogClues()
        self._in_advice = False

    def feed(self, data: bytes) -> LogClues | None:
        """The snapshot after these bytes, or None when they changed nothing. Only the lines that hold a word of
        _WORDS (found with bytes.find) and the numbered lines after `Possible solutions:` are decoded."""
        before = self._clues
        text = self._carry + data if self._carry else data
        cut = max(text.rfind(b"\n"), text.rfind(b"\r"))
        if cut < 0:
            self._carry = text if len(text) <= _CARRY_MAX else b""
            return None
        self._carry = text[cut + 1 :] if len(text) - cut - 1 <= _CARRY_MAX else b""
        whole = text[: cut + 1]
        done = self._advice_from(whole, 0) if self._in_advice else 0
        for start, end in self._hit_lines(whole):
            if start < done:
                continue
            self._line(whole[start:end].decode("utf-8", errors="replace"))
            done = self._advice_from(whole, end) if self._in_advice else end
        return self._clues if self._clues != before else None

    def _hit_lines(self, whole: bytes) -> list[tuple[int, int]]:
        """(start, end) of each line that holds a word, in order."""
        spans: set[tuple[int, int]] = set()
        for word in _WORDS:
            at = whole.find(word)
            while at >= 0:
                span = _line_around(whole, at)
                spans.add(span)
                if word == _CAPTURE_WORD:  # only the capture's first frame says its largest batch size
                    break
                at = whole.find(word, span[1])
        return sorted(spans)

    def _advice_from(self, whole: bytes, pos: int) -> int:
        """Read the numbered lines of SGLang's suggestion from `pos`; where the first other line starts."""
        while self._in_advice and pos < len(whole):
            if whole[pos] in b"\r\n":
                pos += 1
                continue
            start, end = _line_around(whole, pos)
            line = whole[start:end].decode("utf-8", errors="replace")
            c = self._clues
            if not (_ADVICE_ITEM.match(line) and len(c.advice) < ADVICE_MAX):
                self._in_advice = False
                return start
            self._clues = replace(c, advice=(*c.advice, line.strip()))
            pos = end
        return pos

    def flush(self) -> LogClues | None:
        """The last line without its newline (end of a replayed file)."""
        rest, self._carry = self._carry, b""
        if not rest:
            return None
        before = self._clues
        self._line(rest.decode("utf-8", errors="replace"))
        return self._clues if self._clues != before else None

    def _line(self, line: str) -> None:
        c = self._clues
        if self._in_advice:
            if _ADVICE_ITEM.match(line) and len(c.advice) < ADVICE_MAX:
                self._clues = replace(c, advice=(*c.advice, line.strip()))
                return
            self._in_advice = False
        at = line.find("server_args=")
        if at >= 0:
            self._clues = LogClues(args_line=line[at : at + ARGS_MAX])
            return
        if "Possible solutions" in line:
            self._in_advice = True
            self._clues = replace(c, advice=("Possible solutions:",))
            return
        if "Capturing batches (bs=" in line and c.capture_bs is None:
            m = _CAPTURE_BS.search(line)
            if m:
                self._clues = replace(c, capture_bs=int(m.group(1)))
            return
        if any(word in line for word in _CACHE_WORDS) and _BUILD_WORDS.search(line):
            for m in _CACHE_DIR.finditer(line):
                found = m.group("dir").rstrip(".")
                if found not in c.cache_dirs:
                    c = replace(c, cache_dirs=(*c.cache_dirs, found)[-CACHE_DIRS_MAX:])
            self._clues = c
