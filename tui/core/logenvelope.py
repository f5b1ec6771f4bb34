"""The line envelope: wrapper prefixes real deployments add, SGLang's `[time ranks]` head, and log time.

SGLang writes `[%Y-%m-%d %H:%M:%S{.ms}{ DP1 PP0 ATTN_CP0 MOE_DP0 TP3 EP3}] message` (older builds print the time
only); docker compose, srun, log collectors, Ray and foreign Python loggers may wrap that in prefixes of their own.
"""

from __future__ import annotations

import calendar
import re
from typing import NamedTuple

from tui.core.lazyre import lazy

ENVELOPE = lazy(
    r"\[(?P<ts>(?:\d{4}-\d{2}-\d{2} )?\d{2}:\d{2}:\d{2}(?:[.,]\d{1,6})?)"
    r"(?P<ranks>(?: (?:DP|PP|ATTN_CP|MOE_DP|TP|EP)\d{1,6})*)\](?: |$)",
    re.ASCII,
)
# Prefixes put in front of a line by whatever collected it; stripped one at a time from the start.
WRAPPER = lazy(
    r"(?:\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})? (?:\| )?"  # collector time
    r"|[A-Za-z0-9][\w.@/-]*\s*\| "  # docker compose service
    r"|\[[A-Za-z0-9][\w.@/-]*\]\s*\| "  # a bracketed service name (`[sglang]     | `)
    r"|\d{1,5}: "  # srun task id
    r"|\[pod/[^\]\s]+\] "  # kubectl logs --prefix
    r"|\(\w+ pid=\d+(?:, ip=[\d.]+)?\)\s?"  # Ray actor
    r"|[A-Z][a-z]{2} [ \d]\d \d{2}:\d{2}:\d{2} \S+ [\w.@/-]+(?:\[\d+\])?: "  # syslog / journald
    r"|(?:DEBUG|INFO|WARNING|ERROR|CRITICAL):[\w.]*:"  # Python logging's default format
    r"|(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) \d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:\.\d+)? \[?[\w.]+:\d+\] "  # vLLM-style
    r"|(?:- )?(?:[\w.]+ - )?(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) - "  # "name - LEVEL - " (after "asctime - ")
    r")",
    re.ASCII,
)
# A tracing formatter (Rust `tracing`, NVIDIA Dynamo) that rewrites every line:
# `2025-11-05T01:56:54.281615Z  INFO model_runner.init_device_graphs: message   `.
TRACING = lazy(
    r"(?P<date>\d{4}-\d{2}-\d{2})T(?P<time>\d{2}:\d{2}:\d{2})(?:\.(?P<frac>\d{1,9}))?(?:Z|[+-]\d{2}:?\d{2})?\s+"
    r"(?P<level>TRACE|DEBUG|INFO|WARN|WARNING|ERROR|CRITICAL)\s+"
    r"(?P<target>[\w.<>-]*(?:\{[^}]*\})?(?:::?[\w.<>-]+(?:\{[^}]*\})?)*)(?::\s+|:?$)",
    re.ASCII,
)
# A logger that puts the level and the module after SGLang's time: `[2025-12-18 07:58:50] INFO trace.py:52: msg`.
LEVEL_HEAD = lazy(r"(?P<level>DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL) [\w./-]+\.py:\d+: ?", re.ASCII)
# A Python logger's level and source before the message, once a wrapper's time is gone:
# `INFO 151972 [scheduler_metrics_mixin.py:287] msg`, `INFO sglang.srt.managers.scheduler: msg`, `ERROR [x.py:3] msg`.
LEVEL_PREFIX = lazy(
    r"(?P<level>DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL)\s+(?:\d{1,10}\s+)?"
    r"(?:\[[\w./-]+:\d+\]\s*|[A-Za-z_][\w.]*(?:\.py)?(?::\d+)?:\s+)",
    re.ASCII,
)
# SGLang 0.1–0.2's envelope (`[gpu_id=0] Load weight begin. …`), alone or under a later time stamp: the GPU's index on
# its node, not the TP rank (a node of a multi-node group counts from 0 again): a label that says no TP index.
GPU_ID = lazy(r"\[gpu_id=(\d{1,4})\] ?", re.ASCII)
CUT_ERROR = lazy(r"(?P<level>ERROR|CRITICAL)(?:\s+\S*)?$", re.ASCII)  # the level, then the line was cut
_TORCH_RANK = lazy(r"\[rank(\d{1,6})\]:", re.ASCII)


class Envelope(NamedTuple):
    line: str  # the line from SGLang's envelope on (wrappers removed): what failures and milestones quote
    msg: str  # the message after the envelope
    at: str | None  # timestamp as printed
    rank: str | None  # rank tokens as printed ("TP3", "DP1 TP3 EP3"), None for main process / TP=1
    level: str | None = None  # the log level where the format prints one (tracing, `[time] LEVEL file.py:N:`)


def split_envelope(text: str) -> Envelope:
    """Strip wrapper prefixes, then read SGLang's `[time ranks]` head when there is one."""
    if text.startswith("["):
        m = ENVELOPE.match(text)
        if m:
            ranks = m.group("ranks")
            return _leveled(Envelope(text, text[m.end() :], m.group("ts"), ranks[1:] if ranks else None))
        if text.startswith("[gpu_id="):
            g = GPU_ID.match(text)
            if g:
                return Envelope(text, text[g.end() :], None, f"GPU{g.group(1)}")
        if not text.startswith("[pod/") and not ("]" in text[:64] and "| " in text[:80] and WRAPPER.match(text)):
            return Envelope(text, text, None, None)
    if text[:1].isdigit() and "T" in text[:11]:
        t = TRACING.match(text)
        if t:
            frac = t.group("frac")
            at = f"{t.group('date')} {t.group('time')}" + (f".{frac[:6]}" if frac else "")
            level = t.group("level")
            return Envelope(text[t.start("level") :], text[t.end() :].rstrip(), at, None, _LEVELS.get(level, level))
    line = text
    for _ in range(4):
        w = WRAPPER.match(line)
        if not w or not w.end():
            break
        line = line[w.end() :]
    if "[" in line[:200]:
        m = ENVELOPE.search(line, 0, 260)
        if m and (m.start() == 0 or _plausible_prefix(line[: m.start()])):
            ranks = m.group("ranks")
            line = line[m.start() :]
            return _leveled(Envelope(line, line[m.end() - m.start() :], m.group("ts"), ranks[1:] if ranks else None))
    if line[:1] in "DIWEC":
        lv = LEVEL_PREFIX.match(line)
        if lv:
            level = lv.group("level")
            return Envelope(line, line[lv.end() :], None, None, _LEVELS.get(level, level))
        cut = CUT_ERROR.match(line)
        if cut:
            return Envelope(line, "", None, None, cut.group("level"))
    return Envelope(line, line, None, None)


_LEVELS = {"WARN": "WARNING"}


def _leveled(env: Envelope) -> Envelope:
    """`[time] INFO file.py:52: message`: the level and source move out of the message (and `[gpu_id=N]` after
    the time, into the rank)."""
    msg = env.msg
    if msg.startswith("[gpu_id=") and env.rank is None:
        g = GPU_ID.match(msg)
        if g:
            return env._replace(msg=msg[g.end() :], rank=f"GPU{g.group(1)}")
    if msg[:1] in "DIWEC" and msg[:3] in ("DEB", "INF", "WAR", "ERR", "CRI"):
        m = LEVEL_HEAD.match(msg)
        if m:
            level = m.group("level")
            return env._replace(msg=msg[m.end() :], level=_LEVELS.get(level, level))
    return env


def _plausible_prefix(prefix: str) -> bool:
    # An unknown wrapper: short, a few words, not the middle of a message that quotes a time.
    return (
        len(prefix) <= 80
        and prefix.count(" ") <= 4
        and not prefix.startswith((" ", "\t"))
        and not any(word in prefix for word in ('"', "Error", "Exception", "error", "Traceback"))
    )


def torch_rank(text: str) -> str | None:
    """`[rank3]:` at the start of a PyTorch c10d (glog) line → "rank3"."""
    if text.startswith("[rank"):
        m = _TORCH_RANK.match(text)
        if m:
            return "rank" + str(int(m.group(1)))
    return None


class LogClock:
    """Timestamp text → float seconds (naive local time read as UTC); time-only stamps count seconds of day,
    moving on a day when the clock goes back more than 12 h (midnight rollover), so `t` never runs backwards
    by a day."""

    def __init__(self) -> None:
        self._midnights: dict[str, float] = {}
        self._day_offset = 0.0
        self._last_tod: float | None = None

    def seconds(self, at: str) -> float | None:
        if len(at) >= 19 and at[4] == "-":
            midnight = self._midnights.get(at[:10])
            if midnight is None:
                try:
                    midnight = float(calendar.timegm((int(at[:4]), int(at[5:7]), int(at[8:10]), 0, 0, 0)))
                except (ValueError, OverflowError):
                    return None
                if len(self._midnights) > 64:
                    self._midnights.clear()
                self._midnights[at[:10]] = midnight
            return midnight + _time_of_day(at[11:])
        tod = _time_of_day(at)
        if self._last_tod is not None and tod + self._day_offset < self._last_tod - 43200:
            self._day_offset += 86400.0
        value = tod + self._day_offset
        self._last_tod = value
        return value


def _time_of_day(hms: str) -> float:
    seconds = int(hms[0:2]) * 3600 + int(hms[3:5]) * 60 + int(hms[6:8])
    if len(hms) > 9:
        frac = hms[9:]
        return seconds + float("0." + frac)
    return float(seconds)
