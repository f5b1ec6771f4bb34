"""The log's clock on the reducer's clock: when a log event happened, for the phase, the progress and the bars.

Three clocks meet here. A log line's `t` is the host's local time read as if UTC (tui.core.logenvelope), with no
zone; the host's epoch is another's; the reducer's `now` is this machine's epoch (time.time()) in `wait` and the
TUI, and the log's own `t` in `replay`. The rule, decided only here:

- ours = t - zone + skew. `skew` (our clock - the host's) is measured by the log tail's look at the file (the
  host's `date` against the midpoint of our send and receive). `zone` (log time - host epoch) comes from the
  file's mtime and its last bytes, which the look reads: their newest timestamped line was written at or before
  mtime, so t_last - mtime <= zone, up to a second of mtime's truncation. Zones are whole quarter hours, so zone is the first quarter hour at or above
  t_last - mtime - ZONE_SLACK_S: right while the newest timestamped line is less than 15 minutes older than the
  file's last write (a tail of tqdm frames alone for longer is the one case it cannot tell; the mapped times are
  then a multiple of 15 minutes late, and never later than now). Until a timestamped line was seen during a
  look, the zone is learnt from the first live one (written about now).
- The bytes up to the size the look saw are history: written before we read them, the newest at mtime. Their
  events happened at their log time when they carry one; an untimed one (a tqdm frame, a rank line without a
  stamp) no earlier than the last timestamped line before it, nor later than mtime. Bytes beyond are live:
  they happened when they arrive (`now`). History is what makes an attach honest: the quiet time is
  now - mtime, a phase begun 3 minutes ago reads 3 minutes, and a burst of old frames gives no rate of its own.
- Without a map (no look yet, or a test that feeds events alone), every event happened at `now`: the old rule.
  `replay` sets LOG_IS_CLOCK (zone 0, skew 0): its clock is the log's, so ours = t.

A mapped time is never later than `now` (a clock that disagrees must not put progress in the future).
"""

from __future__ import annotations

import math
import time
from dataclasses import replace
from typing import TYPE_CHECKING

from tui.core.clockmap import ClockMap
from tui.core.events import LogLook
from tui.core.logenvelope import LogClock, split_envelope

if TYPE_CHECKING:
    from tui.core.state import Readiness

QUARTER_HOUR_S = 900.0
ZONE_SLACK_S = 5.0  # mtime is truncated to the second, and a line is stamped a moment before it is written
LIVE_ZONE_SLACK_S = QUARTER_HOUR_S / 2  # a live line is written about now: the nearest quarter hour
STAMP_S = 1.0  # a log stamp is whole seconds: its line was written up to a second after it


def zone_of(last_t: float, mtime_s: float, slack: float = ZONE_SLACK_S) -> float:
    """The log's zone from its newest timestamped line and the file's mtime: the first quarter hour at or above
    last_t - mtime - slack (a line is written at or after its stamp, so the zone is never below that)."""
    return QUARTER_HOUR_S * math.ceil((last_t - mtime_s - slack) / QUARTER_HOUR_S)


def newest_log_time(data: bytes) -> float | None:
    """The log time of the newest timestamped line in a log's last bytes (what the tail's look read of its end),
    as the parser reads it; None when none of them carries a time. A time-only stamp counts seconds of its day."""
    for raw in reversed(data.replace(b"\r", b"\n").split(b"\n")):
        if b"[" not in raw[:300] and not raw[:1].isdigit():
            continue
        at = split_envelope(raw.decode("utf-8", "replace")).at
        if at:
            return LogClock().seconds(at)
    return None


def learn(old: ClockMap | None, ev: LogLook) -> ClockMap:
    """The map after a look at the file (and, with `last_t`, the history it read)."""
    base = old or ClockMap()
    skew = ev.skew_s if ev.skew_s is not None else base.skew_s
    zone = base.zone_s
    if ev.last_t is not None and ev.mtime_s is not None:
        zone = zone_of(ev.last_t, ev.mtime_s)
    history_at = ev.mtime_s + skew if ev.mtime_s is not None else base.history_at
    return ClockMap(skew_s=skew, zone_s=zone, history_end=max(ev.end, 0), history_at=history_at)


def learn_live(clock: ClockMap, t: float, now: float) -> ClockMap:
    """A zone from a live line (written about now), when no look has seen a timestamped one."""
    host_now = now - clock.skew_s
    zone = QUARTER_HOUR_S * math.floor((t - host_now + LIVE_ZONE_SLACK_S) / QUARTER_HOUR_S)
    return replace(clock, zone_s=zone)


def ours(clock: ClockMap | None, t: float | None, now: float) -> float | None:
    """Log time t on our clock (never later than now); None when it cannot be mapped."""
    if clock is None or clock.zone_s is None or t is None:
        return None
    return min(now, t - clock.zone_s + clock.skew_s)


def to_log(clock: ClockMap | None, at: float) -> float | None:
    """Our clock time on the log's clock (the inverse of `ours`); None when the zone is unknown."""
    if clock is None or clock.zone_s is None:
        return None
    return at - clock.skew_s + clock.zone_s


def history_bytes(clock: ClockMap | None, offset: int) -> bool:
    """Bytes consumed up to `offset` were all written before the last look (history), not live."""
    return clock is not None and clock.history_at is not None and 0 < offset <= clock.history_end


def event_time(s: Readiness, t: float | None, now: float, logged: bool = True) -> float:
    """When an event happened, on our clock: a log event at its log time when it has one; an untimed one of the
    history no earlier than the last timestamped line before it (else the history's last write); a live one, and
    any other source's event (`logged` False: HTTP, the process watch), now."""
    clock = s.progress.clock
    mapped = ours(clock, t, now)
    if mapped is not None:
        return mapped
    if logged and clock is not None and s.progress.reading_history:
        floor = ours(clock, s.progress.last_log_t, now)
        if floor is not None:
            return floor
        if clock.history_at is not None:
            return min(now, clock.history_at)
    return now


def live(s: Readiness) -> bool:
    """The event being folded came from bytes read as they were written (not the history read at a look)."""
    return s.progress.clock is None or not s.progress.reading_history


def later(old: float | None, new: float) -> float:
    """The later of two progress times: an old event folded after a newer one does not move progress back."""
    return new if old is None or new >= old else old


def log_text(s: Readiness, at: float | None) -> str | None:
    """Our clock time `at` as the log prints its time ("2026-12-01 20:18:30", or "20:18:30" for a log whose
    stamps carry no date); None when the log's clock is not known (no stamp seen, no zone)."""
    shown = s.progress.last_log_at
    if at is None or shown is None:
        return None
    t = to_log(s.progress.clock, at)
    if t is None or not math.isfinite(t):
        return None
    if len(shown) >= 19 and shown[4] == "-":
        try:
            return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(t))
        except (OverflowError, OSError, ValueError):
            return None
    return time.strftime("%H:%M:%S", time.gmtime(t % 86400.0))
