"""Serving-time `Prefill batch` / `Decode batch` lines, coalesced into one BatchStats per stage and run.

A run is the batch lines between two other events; only its last line per stage is parsed (the reducer wants
the latest numbers), so a serving log of a million lines costs a substring check per line, not a regex.
"""

from __future__ import annotations

import re

from tui.core.events import BatchStats
from tui.core.lazyre import lazy
from tui.core.logenvelope import LogClock, split_envelope
from tui.core.loglines import strip_ansi
from tui.core.vocab import BatchStage

_BATCH_FIELD = lazy(
    r"(#running-req|#queue-req|token usage|accept len|accept rate|gen throughput \(token/s\)): (-?\d{1,12}(?:\.\d{1,6})?)",
    re.ASCII,
)


def batch_fields(msg: str) -> dict[str, float]:
    """The numbers of a batch line (first occurrence of each key; trailing ", " allowed)."""
    out: dict[str, float] = {}
    for key, value in _BATCH_FIELD.findall(msg):
        out.setdefault(key, float(value))
    return out


class BatchRun:
    """The current run: per stage, the last line seen (text or raw bytes) and how many lines it stands for."""

    def __init__(self) -> None:
        self._stages: dict[BatchStage, tuple[str | bytes, int, int]] = {}  # stage → (last line, count, its order)
        self._order = 0

    def __bool__(self) -> bool:
        return bool(self._stages)

    def add(self, stage: BatchStage, line: str | bytes, count: int = 1) -> None:
        self._order += 1
        entry = self._stages.get(stage)
        self._stages[stage] = (line, count if entry is None else entry[1] + count, self._order)

    def add_block(self, decode: bytes | None, n_decode: int, prefill: bytes | None, n_prefill: int,
                  decode_last: bool) -> None:  # fmt: skip
        """Add what a scan over a block collected, keeping the order of the two stages' last lines."""
        stages: list[tuple[BatchStage, bytes | None, int]] = [
            ("decode", decode, n_decode),
            ("prefill", prefill, n_prefill),
        ]
        for stage, line, count in stages[::-1] if decode_last else stages:
            if line is not None:
                self.add(stage, line, count)

    def drain(self, clock: LogClock) -> list[BatchStats]:
        """The run as events (ordered by each stage's last line), leaving it empty."""
        stages, self._stages = self._stages, {}
        out = []
        for stage, (line, count, _) in sorted(stages.items(), key=lambda item: item[1][2]):
            text = line.decode("utf-8", "replace") if isinstance(line, bytes) else str(line)
            env = split_envelope(strip_ansi(text))
            f = batch_fields(env.msg)
            running, queue = f.get("#running-req"), f.get("#queue-req")
            out.append(
                BatchStats(
                    stage=stage,
                    gen_throughput=f.get("gen throughput (token/s)"),
                    accept_len=f.get("accept len"),
                    accept_rate=f.get("accept rate"),
                    running_req=int(running) if running is not None else None,
                    queue_req=int(queue) if queue is not None else None,
                    token_usage=f.get("token usage"),
                    rank=env.rank,
                    at=env.at,
                    t=clock.seconds(env.at) if env.at else None,
                    count=count,
                )
            )
        return out
