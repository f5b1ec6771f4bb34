"""CPU the Monitor costs while nothing happens (a quiet log, no server), locally and over sshd.

Prints CPU seconds of this process per wall second (×100 = % of one core), plus batches per second.
Usage: .venv/bin/python bench/bench_monitor_idle.py [--seconds 10]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.helpers.sshd import Sshd, free_port  # noqa: E402
from tui.sources.host import Host  # noqa: E402
from tui.sources.local import LocalHost  # noqa: E402
from tui.sources.monitor import Monitor  # noqa: E402
from tui.sources.ssh import SshHost  # noqa: E402

PROCS = True  # also poll the server's process state, as `wait` does
WARMUP_S = 2.0


async def idle(host: Host, log: Path, seconds: float) -> tuple[float, float]:
    await host.connect()
    monitor = Monitor(host, log_path=str(log), port=free_port(), gpus=False, processes=PROCS)
    await asyncio.sleep(0)
    batches = 0
    warm_until = time.monotonic() + WARMUP_S  # imports, TLS context, first probes: one-time costs, not idling
    start_wall = start_cpu = 0.0
    async for _ in monitor.batches():
        now = time.monotonic()
        if now < warm_until:
            continue
        if not start_wall:
            start_wall, start_cpu = now, time.process_time()
            continue
        batches += 1
        if now - start_wall >= seconds:
            break
    wall, cpu = time.monotonic() - start_wall, time.process_time() - start_cpu
    await monitor.close()
    await host.close()
    return cpu / wall, batches / wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "quiet.log"
        log.write_bytes(b"[2025-11-29 10:00:02] nothing more will be written\n")
        sshd = Sshd(Path(tmp) / "sshd").start()
        try:
            hosts: list[tuple[str, Host]] = [
                ("local", LocalHost()),
                ("sshd", SshHost("127.0.0.1", port=sshd.port, user=sshd.user, identity=str(sshd.identity),
                                 known_hosts=str(sshd.known_hosts), agent=False)),
            ]  # fmt: skip
            for label, host in hosts:
                share, rate = asyncio.run(idle(host, log, args.seconds))
                print(
                    f"{label:5}  idle monitor: {share * 100:.2f}% of one core, {rate:.1f} batches/s over {args.seconds:g} s"
                )
        finally:
            sshd.stop()


if __name__ == "__main__":
    main()
