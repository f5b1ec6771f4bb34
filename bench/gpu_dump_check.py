"""On a GPU host (a script, not collected by pytest): `sglang-tui dump` of a real CUDA rank stuck in
torch.cuda.synchronize() behind a long-running kernel; its frames must name the call.

The rank is started the way SGLang starts a scheduler: a `server` process (it listens on a port and writes the
log, so `dump` finds it as it finds a real server) starts it with `multiprocessing`'s spawn context, and the rank
titles itself `sglang::scheduler_TP0` with setproctitle (SGLang's `run_scheduler_process` does both). The rank's
code is this file's functions, imported by the spawned interpreter, never a program read from stdin. It
launches a ~90 s kernel (torch.cuda._sleep) and waits for it in torch.cuda.synchronize(), inside a function
named like SGLang's.

    python bench/gpu_dump_check.py [--kernel-s 90]
    python bench/gpu_dump_check.py --cpu          dry run with no GPU and no torch: the rank waits in a function
                                                 of its own named `synchronize`, called from the same place
Exit 0 when TP0's frames name synchronize and capture_cuda_graphs; prints the dump's JSON and summary.
Without the setproctitle package (the dry run here) the title is written the way it writes it: over the
process's argv area, through /proc/self/mem.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import multiprocessing
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TITLE = "sglang::scheduler_TP0"
PR_SET_NAME = 15


# ------------------------------------------------------------------------------------------------ the rank


def set_title(title: str) -> str:
    """Title this process as SGLang does (setproctitle); without the package, write the title over the argv
    area (what setproctitle does on Linux) and set the short name. Returns how it was done."""
    try:
        import setproctitle  # type: ignore[import-not-found, unused-ignore]
    except ImportError:
        pass
    else:
        setproctitle.setproctitle(title)
        return "setproctitle"
    fields = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()
    start, end = int(fields[45]), int(fields[46])  # arg_start, arg_end (fields 48 and 49 of stat)
    data = title.encode()[: end - start - 1]
    with open("/proc/self/mem", "r+b", buffering=0) as mem:
        mem.seek(start)
        mem.write(data + b"\0" * (end - start - len(data)))
    ctypes.CDLL(None).prctl(PR_SET_NAME, title.encode()[:15], 0, 0, 0)
    return "argv area"


def synchronize() -> None:
    """The dry run's stand-in for torch.cuda.synchronize(): it waits, and never returns."""
    while True:
        time.sleep(0.05)


def rank_main(cpu: bool, kernel_s: float) -> None:
    """The scheduler rank: titled, then stuck where a scheduler waits on its GPU during CUDA graph capture."""
    how = set_title(TITLE)
    if cpu:
        print(f"ready: dry run (no GPU), titled by {how}", flush=True)

        def capture_cuda_graphs() -> None:
            synchronize()

        capture_cuda_graphs()
        return
    import torch

    torch.cuda.init()
    torch.zeros(1, device="cuda")
    torch.cuda.synchronize()
    # A cold GPU runs its first kernels at a low clock (on a fresh H200 the first measure read 134k cycles/ms, then
    # 1.3M): the kernel came out 10x short and ended before the dump. Warm up, then keep the fastest of three.
    torch.cuda._sleep(1_000_000)
    torch.cuda.synchronize()
    cycles_per_ms = 0.0
    for _ in range(3):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        torch.cuda._sleep(10_000_000)
        end.record()
        torch.cuda.synchronize()
        cycles_per_ms = max(cycles_per_ms, 10_000_000 / max(start.elapsed_time(end), 1e-3))
    print(f"ready: {torch.cuda.get_device_name(0)}, {cycles_per_ms:.0f} cycles/ms, titled by {how}", flush=True)

    def capture_cuda_graphs() -> None:  # where a scheduler waits on its GPU
        torch.cuda._sleep(int(cycles_per_ms * 1000 * kernel_s))
        torch.cuda.synchronize()

    capture_cuda_graphs()
    print("kernel done", flush=True)


def serve(port: int, cpu: bool, kernel_s: float) -> None:
    """The server's main process: listens on the port, spawns the rank as SGLang does, waits for it."""
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen()
    rank = multiprocessing.get_context("spawn").Process(target=rank_main, args=(cpu, kernel_s))
    rank.start()
    print(f"server: rank pid {rank.pid}", flush=True)
    rank.join()


# ----------------------------------------------------------------------------------------------- the check


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def check(args: argparse.Namespace) -> int:
    port = free_port()
    tmp = Path(tempfile.mkdtemp(prefix="gpu-dump-"))
    log = tmp / "server.log"
    with open(log, "wb") as out:
        server = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--serve", str(port), "--kernel-s", str(args.kernel_s),
             *(["--cpu"] if args.cpu else [])],
            cwd=ROOT, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while b"ready" not in log.read_bytes():
            if server.poll() is not None or time.monotonic() > deadline:
                print(f"the rank did not start:\n{log.read_text(errors='replace')}")
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
            if b"kernel done" in log.read_bytes():
                print("the rank's kernel had already ended (its length is calibrated at start): rerun")
            return 1
        found = json.loads(proc.stdout)
        print(json.dumps(found, indent=1))
        print((tmp / "dump.txt").read_text())
        frames = found["ranks"].get("TP0", {}).get("frames", [])
        named = any(f.startswith("synchronize ") for f in frames) and any("capture_cuda_graphs" in f for f in frames)
        print(f"TP0's frames name synchronize ← capture_cuda_graphs: {named}; still waiting: {server.poll() is None}")
        return 0 if named else 1
    finally:
        try:
            os.killpg(server.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        server.wait()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kernel-s", type=float, default=90.0)
    ap.add_argument("--cpu", action="store_true", help="dry run: no GPU, no torch")
    ap.add_argument("--serve", type=int, metavar="PORT", help=argparse.SUPPRESS)  # the server process itself
    args = ap.parse_args()
    if args.serve is not None:
        serve(args.serve, args.cpu, args.kernel_s)
        return 0
    return check(args)


if __name__ == "__main__":
    raise SystemExit(main())
