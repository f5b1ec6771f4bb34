"""Capped exponential backoff with jitter, shared by the SSH reconnect loop and the source workers."""

from __future__ import annotations

from collections.abc import Iterator


def backoff_delays(
    initial: float = 0.5, cap: float = 30.0, factor: float = 2.0, jitter: float = 0.25
) -> Iterator[float]:
    """Endless delays: initial, initial*factor, … capped at cap, each scaled by a random ±jitter."""
    import random  # at the first delay: a one-look probe imports the modules that wait, never waits (issue 32)

    delay = initial
    while True:
        yield delay * random.uniform(1.0 - jitter, 1.0 + jitter)
        delay = min(cap, delay * factor)
