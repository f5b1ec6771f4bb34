"""The capture now: the one CUDA graph capture count that the header, the shards pane and `wait` all show.

SGLang 0.5.x can capture its regular CUDA graphs (the `Capturing batches` bar) and then a piecewise CUDA graph
(`Compiling num tokens` / `Capturing num tokens`): both bars exist at once, and a view that picked its own showed
"piecewise 0/12" over a pane's "graphs 23/23 done". The capture that began last is the capture: its
`Capture … graph begin` line or a frame of its bar says which (`BarFacts.capture_now`, set by the fold).
"""

from __future__ import annotations

from tui.core.state import BarState, Readiness
from tui.core.vocab import CaptureBar


def capture_bar_of(what: str) -> CaptureBar:
    """The bar a `Capture {what} … graph begin` line starts: the piecewise one, or the regular one."""
    return "piecewise" if "piecewise" in what.lower() else "capture"


def current_capture(s: Readiness) -> tuple[CaptureBar, BarState | None]:
    """(which capture, its bar: None before its first frame). Without a begin line (a partial log), the bar
    seen; the regular capture when there is none."""
    name = s.capture_now or ("piecewise" if s.capture is None and s.piecewise is not None else "capture")
    return name, s.piecewise if name == "piecewise" else s.capture
