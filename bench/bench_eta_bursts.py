"""How wrong is the weights ETA under SGLang's multi-thread loader (shards finish in bursts)? GPU-memory (byte)
ETA against the shard-count ETA, from 25% loaded on.

Runs the simulator with `--loader multithread` twice on this machine: the first launch teaches the history how
many GiB each rank's weights take; the second is watched in process (the real Monitor and reducer, as `wait`
runs them) and, at every state, both ETAs of the weights phase are compared with the time that was really
left until loading_weights ended. Prints the error at each step and the worst and median error per method.
Usage:
    .venv/bin/python bench/bench_eta_bursts.py [--speed 10] [--shards 64] [--tp 2]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.helpers.sim import start_sim  # noqa: E402
from tui.core.eta import memory_left  # noqa: E402
from tui.core.state import Phase, Readiness  # noqa: E402
from tui.history.recorder import Recorder  # noqa: E402
from tui.sources.local import LocalHost  # noqa: E402
from tui.sources.monitor import Monitor  # noqa: E402
from tui.sources.session import Session  # noqa: E402


async def watch(tmp: Path, history: Path, args: argparse.Namespace, seed: int) -> list[tuple[float, Readiness]]:
    """(clock, state) after every batch of one launch, until ready."""
    sim = start_sim(tmp, speed=args.speed, tp=args.tp, shards=args.shards,
                    extra=("--loader", "multithread", "--seed", str(seed)))  # fmt: skip
    host = LocalHost()
    await host.connect()
    monitor = Monitor(host, log_path=str(sim.log), port=sim.port, sim_gpus=str(sim.gpu_state))
    recorder = Recorder(history, "local", "bench")
    session = Session(monitor, steps=(recorder.step,))  # the fold `wait` runs, with the history
    states: list[tuple[float, Readiness]] = []
    try:
        async with asyncio.timeout(600):
            async for state, now in session.states():
                states.append((now, state))
                if state.phase in (Phase.READY, Phase.SERVING, Phase.FAILED):
                    break
    finally:
        recorder.finish(session.state)
        await session.close()
        await host.close()
        sim.stop()
    return states


def loading_end(states: list[tuple[float, Readiness]]) -> float:
    return next(now for now, s in states if s.phase not in (Phase.STARTING, Phase.INIT, Phase.LOADING_WEIGHTS))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--speed", type=float, default=10.0)
    ap.add_argument("--shards", type=int, default=64)
    ap.add_argument("--tp", type=int, default=2)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-eta-") as tmp_dir:
        tmp = Path(tmp_dir)
        history = tmp / "history.sqlite3"
        (tmp / "one").mkdir()
        (tmp / "two").mkdir()
        asyncio.run(watch(tmp / "one", history, args, seed=1))
        states = asyncio.run(watch(tmp / "two", history, args, seed=2))
    end = loading_end(states)
    rows: list[tuple[float, float, float | None, float | None]] = []  # (fraction, truth, by bytes, by shards)
    for now, s in states:
        if s.phase is not Phase.LOADING_WEIGHTS or s.shards is None or s.shards.done >= s.shards.total:
            continue
        expected = s.past.weight_gib_per_rank() if s.past is not None else None
        by_mem = memory_left(s.weights_mem, expected, now)
        fraction = by_mem[1] if by_mem is not None else s.shards.done / s.shards.total
        if fraction < 0.25:
            continue
        by_shards = s.shards.eta_s  # the shard-count rate ETA, as tqdm and the old header showed it
        if by_shards is not None:
            by_shards = max(0.0, by_shards - (now - s.shards.updated_at))
        rows.append((fraction, end - now, by_mem[0] if by_mem is not None else None, by_shards))
    if not rows:
        print("no states from 25% loaded on: nothing to compare", file=sys.stderr)
        return 1
    print(f"multi-thread loader, {args.shards} shards, TP{args.tp}, speed {args.speed}: weights ETA error vs truth")
    print(f"{'loaded':>7} {'truth':>7} {'bytes':>7} {'err':>6} {'shards':>7} {'err':>6}")
    errors: dict[str, list[float]] = {"bytes": [], "shards": []}
    step = max(1, len(rows) // 40)
    for i, (fraction, truth, mem, shards) in enumerate(rows):
        if truth < 1.0:
            continue  # the last second: relative errors of nothing
        e_mem = (mem - truth) / truth if mem is not None else None
        e_sh = (shards - truth) / truth if shards is not None else None
        if e_mem is not None:
            errors["bytes"].append(abs(e_mem))
        if e_sh is not None:
            errors["shards"].append(abs(e_sh))
        if i % step == 0:

            def cell(x: float | None) -> str:
                return f"{x:7.1f}" if x is not None else "      -"

            def pct(x: float | None) -> str:
                return f"{x * 100:+5.0f}%" if x is not None else "     -"

            print(f"{fraction * 100:6.0f}% {truth:7.1f} {cell(mem)} {pct(e_mem)} {cell(shards)} {pct(e_sh)}")
    print("(|error| over the states from 25% loaded on with at least 1 s really left)")
    for name, errs in errors.items():
        if errs:
            within = sum(1 for e in errs if e <= 0.30) / len(errs)
            print(f"{name:>6} ETA: median |error| {statistics.median(errs) * 100:.0f}%, worst {max(errs) * 100:.0f}%, "
                  f"within ±30% {within * 100:.0f}% of {len(errs)} states")  # fmt: skip
        else:
            print(f"{name:>6} ETA: never available")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
