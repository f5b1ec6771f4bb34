"""tqdm progress frames: the weight-shard bar (`{desc}: 40% Completed | 12/30 [00:37<00:55, 3.10s/it]`)
and the CUDA-graph capture bars (`Capturing batches (bs=48 avail_mem=25.71 GB):   4%|▍ | 1/23 [...]`)."""

from __future__ import annotations

import re
from typing import NamedTuple

from tui.core.lazyre import lazy

SHARDS = lazy(
    r"(?P<desc>[^\r\n]*?):\s+\d{1,3}% Completed \| (?P<n>\d{1,9})/(?P<total>\d{1,9})"
    r"(?: \[(?P<elapsed>[\d:]{1,12})<(?P<remaining>[\d:?]{1,12}))?",
    re.ASCII,
)
TQDM = lazy(
    r"\s*(?:(?P<desc>[^\r\n]*?):\s*)?\d{1,3}%\|[^|]*\|\s*(?P<n>\d{1,9})/(?P<total>\d{1,9})"
    r"(?: \[(?P<elapsed>[\d:]{1,12})<(?P<remaining>[\d:?]{1,12}))?",
    re.ASCII,
)
_BS = lazy(r"\b(?:bs|num_tokens)=(\d{1,9})", re.ASCII)
_AVAIL = lazy(r"avail_mem=(\d{1,9}(?:\.\d{1,6})?) ?GB", re.ASCII)
CAPTURE_DESCS = ("Capturing batches", "Capturing num tokens", "Capturing prefill shape", "Compiling num tokens")
PIECEWISE_DESCS = ("Capturing num tokens", "Compiling num tokens")  # piecewise CUDA graph: its own bar
JIT_DESCS = ("DeepGEMM warmup",)  # DeepGEMM JIT: one bar over the M sizes of each kernel shape
WARMUP_DESCS = ("Warmup prefill shapes", "Profiling prefill latency")  # --warmups and dynamic chunking


class Frame(NamedTuple):
    """One parsed frame. kind: "shards" (a weight bar), "capture" (a named capture bar), "jit" (DeepGEMM warmup),
    "warmup" (warmup prefill shapes, dynamic-chunking profile), "bare" (no description: the first frame of a
    capture bar, or an old capture bar with none)."""

    kind: str
    desc: str
    done: int
    total: int
    bs: int | None = None
    avail_mem_gb: float | None = None
    elapsed_s: float | None = None
    remaining_s: float | None = None


def parse_frame(text: str) -> Frame | None:
    """A tqdm frame of a bar the parser knows, or None."""
    if " Completed | " in text:
        m = SHARDS.search(text)
        if m:
            return _frame("shards", m.group("desc").strip(), m)
    if "%|" in text:
        m = TQDM.match(text)
        if m:
            desc = (m.group("desc") or "").strip()
            if not desc:
                return _frame("bare", "", m)
            if desc.startswith(CAPTURE_DESCS):
                bs = _BS.search(desc)
                avail = _AVAIL.search(desc)
                done, total, elapsed, remaining = _numbers(m)
                return Frame(
                    "capture",
                    desc,
                    done,
                    total,
                    int(bs.group(1)) if bs else None,
                    float(avail.group(1)) if avail else None,
                    elapsed,
                    remaining,
                )
            if "shards" in desc or desc.startswith(("Loading safetensors", "Loading pt", "Loading np")):
                return _frame("shards", desc, m)
            if desc.startswith(JIT_DESCS):
                return _frame("jit", desc, m)
            if desc.startswith(WARMUP_DESCS):
                return _frame("warmup", desc, m)
    return None


def _frame(kind: str, desc: str, m: re.Match[str]) -> Frame:
    done, total, elapsed, remaining = _numbers(m)
    return Frame(kind, desc, done, total, elapsed_s=elapsed, remaining_s=remaining)


def _numbers(m: re.Match[str]) -> tuple[int, int, float | None, float | None]:
    return int(m.group("n")), int(m.group("total")), _clock(m.group("elapsed")), _clock(m.group("remaining"))


def _clock(text: str | None) -> float | None:
    """tqdm's "MM:SS" / "H:MM:SS" → seconds; "?" (unknown) → None."""
    if not text or "?" in text:
        return None
    total = 0
    for part in text.split(":"):
        if not part:
            return None
        total = total * 60 + int(part)
    return float(total)
