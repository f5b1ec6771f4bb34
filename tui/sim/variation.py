"""How one simulated launch differs from the next (issue 9): seeded jitter of a few percent per phase
(`--seed`; seed 0 keeps the classic schedule), a slow phase on demand (`--slow PHASE=FACTOR`), and the
multi-thread loader's burst pattern (`--loader multithread`): shards load THREADS at a time and finish in
bursts, while the bytes they copy to the GPUs grow steadily (the issue's model of it: a real loader's GPU
copies may come in bursts too, and then the byte ETA is only as good as the shard count's).
"""

from __future__ import annotations

import random
import zlib

SLOW_PHASES = {"loading_weights": "loading_weights", "weights": "loading_weights", "cuda_graph": "cuda_graph",
               "capture": "cuda_graph"}  # fmt: skip
LOADERS = ("default", "multithread")
PHASE_JITTER = 0.04  # +-4 % per phase, seeded
THREADS = 8  # SGLang's multi-thread loader's default worker count
MEM_STEP_S = 1.0  # simulated seconds between GPU memory updates of a multi-thread load


def parse_slow(text: str) -> dict[str, float]:
    """ "cuda_graph=2,weights=1.5" -> {"cuda_graph": 2.0, "loading_weights": 1.5}; ValueError with one line."""
    out: dict[str, float] = {}
    for part in filter(None, (p.strip() for p in (text or "").split(","))):
        name, sep, value = part.partition("=")
        phase = SLOW_PHASES.get(name.strip())
        if not sep or phase is None:
            raise ValueError(f"--slow {part}: use PHASE=FACTOR with PHASE one of {', '.join(sorted(SLOW_PHASES))}")
        try:
            factor = float(value)
        except ValueError:
            raise ValueError(f"--slow {part}: FACTOR must be a number, e.g. cuda_graph=2") from None
        if not 0.05 <= factor <= 100:
            raise ValueError(f"--slow {part}: FACTOR must be between 0.05 and 100")
        out[phase] = factor
    return out


def phase_scale(seed: int, slow: str, phase: str) -> float:
    """The factor this launch's `phase` runs slower (or faster) than the schedule: jitter x --slow."""
    factor = parse_slow(slow).get(phase, 1.0) if slow else 1.0
    if seed:
        rng = random.Random(seed * 7919 + zlib.crc32(phase.encode()))
        factor *= 1.0 + rng.uniform(-PHASE_JITTER, PHASE_JITTER)
    return factor


def multithread_shards(n: int, per_shard: float, start: float, rng: random.Random) -> tuple[tuple[float, float], ...]:
    """(start, end) of each shard when THREADS workers load them in waves.

    A worker reads one shard at 1/THREADS of the disk's rate, so a shard takes THREADS x per_shard seconds and
    the workers of a wave finish theirs at about the same time; the next wave starts as the last of a wave
    ends. The bar moves in bursts of THREADS with silences of a whole wave between them, while the bytes
    reach the GPUs steadily.
    """
    spans = []
    t = start
    for first in range(0, n, THREADS):
        wave = min(THREADS, n - first)
        ends = [t + per_shard * wave * rng.uniform(0.9, 1.1) for _ in range(wave)]
        spans += [(t, end) for end in ends]
        t = max(ends)
    return tuple(sorted(spans, key=lambda s: s[1]))


def loaded_fraction(spans: tuple[tuple[float, float], ...], t: float) -> float:
    """The fraction of all shard bytes copied by time t (each shard's bytes arrive evenly over its span)."""
    if not spans:
        return 1.0
    total = 0.0
    for begin, end in spans:
        if t >= end:
            total += 1.0
        elif t > begin:
            total += (t - begin) / (end - begin)
    return total / len(spans)
