"""The log's clock on ours as a value the state holds (tui.core.clocks decides what it is and uses it)."""

from __future__ import annotations

from tui.core.record import Record, record


@record
class ClockMap(Record):
    """How the log's time maps onto ours, and where the history (bytes written before we read them) ends."""

    skew_s: float = 0.0  # our clock - the host's epoch
    zone_s: float | None = None  # log time - the host's epoch (None: no timestamped line to learn it from yet)
    history_end: int = 0  # byte offset: the bytes before it were written before the last look at the file
    history_at: float | None = None  # our clock when the last of them was written (the file's mtime)


LOG_IS_CLOCK = ClockMap(skew_s=0.0, zone_s=0.0)
"""`replay`'s map: the reducer's clock is the log's own."""
