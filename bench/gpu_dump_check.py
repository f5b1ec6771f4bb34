"""On a GPU host (a script, not collected by pytest): `sglang-tui dump` of a real CUDA process stuck in
torch.cuda.synchronize() behind a long-running kernel; its frames must name the call.

The process is titled like a scheduler (`sglang::scheduler_TP0`, through the simulator's titled spawn), listens
on a port (so `dump` finds it as the server, as it finds a real one), launches a ~90 s kernel
(torch.cuda._sleep) and waits for it in torch.cuda.synchronize(), inside a function named like SGLang's.

    python bench/gpu_dump_check.py [--kernel-s 90]
Exit 0 when TP0's frames name synchronize; prints the dump's JSON and summary.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tui.sim.procs import spawn_titled_python  # noqa: E402

CHILD = """import socket, sys, time
import torch
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("127.0.0.1", {port})); s.listen()
torch.cuda.init(); torch.zeros(1, device="cuda"); torch.cuda.synchronize()
start = torch.cuda.Event(enable_timing=True); end = torch.cuda.Event(enable_timing=True)
start.record(); torch.cuda._sleep(1_000_000); end.record(); torch.cuda.synchronize()
cycles_per_ms = 1_000_000 / max(start.elapsed_time(end), 1e-3)
print("ready", torch.cuda.get_device_name(0), f"{{cycles_per_ms:.0f}} cycles/ms", flush=True)

def capture_cuda_graphs():  # where a scheduler waits on its GPU
    torch.cuda._sleep(int(cycles_per_ms * 1000 * {kernel_s}))
    torch.cuda.synchronize()

capture_cuda_graphs()
print("kernel done", flush=True)
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--kernel-s", type=float, default=90.0)
    args = ap.parse_args()
    port = free_port()
    tmp = Path(tempfile.mkdtemp(prefix="gpu-dump-"))
    log = tmp / "server.log"
    with open(log, "wb") as out:
        # The titled process gets PYTHONHOME, not this interpreter's venv or site dirs: re-add them (torch).
        code = f"import sys\nsys.path[:0] = {[p for p in sys.path if p]!r}\n"
        code += CHILD.format(port=port, kernel_s=args.kernel_s)
        child = spawn_titled_python("sglang::scheduler_TP0", code, new_session=True, stdout=out)
    try:
        deadline = time.monotonic() + 120
        while b"ready" not in log.read_bytes():
            if child.poll() is not None or time.monotonic() > deadline:
                print(f"the CUDA process did not start:\n{log.read_text(errors='replace')}")
                return 1
            time.sleep(0.2)
        print(log.read_text().strip())
        time.sleep(3.0)  # well inside the kernel: synchronize() is waiting
        started = time.monotonic()
        proc = subprocess.run(
            [sys.executable, "-m", "tui", "dump", "local", "--port", str(port), "--log", str(log),
             "--remote-python", sys.executable, "--json", "--out", str(tmp / "dump.txt")],
            cwd=ROOT, capture_output=True, text=True, timeout=120,
            env={**os.environ, "XDG_STATE_HOME": str(tmp)},
        )  # fmt: skip
        took = time.monotonic() - started
        print(f"$ sglang-tui dump local --port {port} --json   (exit {proc.returncode}, {took:.2f} s)")
        print(proc.stderr.strip())
        if proc.returncode != 0:
            return 1
        found = json.loads(proc.stdout)
        print(json.dumps(found, indent=1))
        print((tmp / "dump.txt").read_text())
        frames = found["ranks"]["TP0"]["frames"]
        named = any(f.startswith("synchronize ") for f in frames) and any("capture_cuda_graphs" in f for f in frames)
        print(f"TP0's frames name torch.cuda.synchronize(): {named}; the kernel still ran: {child.poll() is None}")
        return 0 if named else 1
    finally:
        try:
            os.killpg(child.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        child.wait()


if __name__ == "__main__":
    raise SystemExit(main())
