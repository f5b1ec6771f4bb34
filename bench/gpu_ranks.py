"""A stand-in multi-GPU SGLang server for bench/gpu_multi_check.py: real ranks on real GPUs, no model.

`python3 bench/gpu_ranks.py server --world N --port P --state DIR …` is the command ServerControl
launches. Its main process prints SGLang's `server_args=` line and starts one rank per GPU titled
`sglang::scheduler_TP<r>` (argv[0] + PYTHONHOME, as tui/sim/procs.py does); the ranks form one
torch.distributed group (NCCL; with --cpu, a stdlib socket all-reduce so the dry run needs no torch),
prove it with an all_reduce, allocate GPU memory in steps (each step released by the checker through a
`go<k>` file in DIR) and print SGLang's memory lines; rank 0 then serves /health on P. One rank (--detach)
leaves its parent and process group by a double fork, keeping the session, as SGLang's orphaned schedulers do.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import signal
import site
import socket
import subprocess
import sys
import threading
import time
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # run as a script: the project's `tui` package sits one level up

from tui.sim.procs import spawn_titled_python  # noqa: E402  (after the path above)

GIB = 2**30
GO_WAIT_S = 240.0  # a rank never waits longer than this for the checker's next step (no hang if it died)
PR_SET_PDEATHSIG, PR_SET_NAME = 1, 15
# NVLink multicast stays off on the lent multi-GPU machines (it can take the host's GPUs out of service).
NCCL_SAFE_ENV = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}


def rank_title(rank: int) -> str:
    return f"sglang::scheduler_TP{rank}"


# ------------------------------------------------------------------------------------- titled processes


def spawn_titled(
    title: str,
    entry: str,
    payload: dict[str, Any],
    *,
    env: dict[str, str] | None = None,
    new_session: bool = False,
    stdout: Any = None,
) -> subprocess.Popen[bytes]:
    """Start `gpu_ranks.<entry>(payload)` in a Python whose whole /proc/PID/cmdline is `title`.

    Python cannot find its prefix from a bare argv[0], so PYTHONHOME names the base interpreter's and the
    bootstrap (read from stdin) re-adds this interpreter's sys.path and site dirs (a venv's packages)."""
    code = (
        "import site, sys\n"
        f"sys.path[:0] = {[p for p in sys.path if p]!r}\n"
        f"for d in {site.getsitepackages()!r}: site.addsitedir(d)\n"
        f"sys.path.insert(0, {str(HERE)!r})\n"
        f"import gpu_ranks\ngpu_ranks.{entry}({json.dumps(payload)!r})\n"
    )
    return spawn_titled_python(title, code, env=env, new_session=new_session, stdout=stdout)


def _prctl(option: int, arg: int | bytes) -> None:
    try:
        ctypes.CDLL(None, use_errno=True).prctl(option, arg, 0, 0, 0)
    except (OSError, AttributeError):
        pass


# --------------------------------------------------------------------------------------------- logging


def log_line(rank: int | None, text: str) -> None:
    """One line in SGLang's envelope (`[2026-11-29 16:30:01 TP3] …`), one write so ranks never interleave."""
    stamp = datetime.now().strftime("%Y-%m-%d %H:%M:%S")
    prefix = f"[{stamp}]" if rank is None else f"[{stamp} TP{rank}]"
    os.write(1, f"{prefix} {text}\n".encode())


def write_state(state: Path, name: str, data: dict[str, Any]) -> None:
    tmp = state / f".{name}.tmp{os.getpid()}"
    tmp.write_text(json.dumps(data))
    tmp.rename(state / name)


def wait_go(state: Path, step: int) -> None:
    deadline = time.monotonic() + GO_WAIT_S
    while not (state / f"go{step}").exists() and time.monotonic() < deadline:
        time.sleep(0.05)


# ------------------------------------------------------------------------------------------ collectives


class SocketGroup:
    """The CPU dry run's process group: rank 0 sums what every rank sends over TCP and answers the sum."""

    def __init__(self, rank: int, world: int, port: int) -> None:
        self.rank, self.world = rank, world
        self.peers: list[socket.socket] = []
        if rank == 0:
            server = socket.create_server(("127.0.0.1", port))
            server.settimeout(120)
            self.peers = [server.accept()[0] for _ in range(world - 1)]
            server.close()
        else:
            deadline = time.monotonic() + 120
            while True:
                try:
                    self.peers = [socket.create_connection(("127.0.0.1", port), timeout=120)]
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.1)
        self.files = [p.makefile("rw") for p in self.peers]

    def all_reduce(self, value: float) -> float:
        if self.rank == 0:
            total = value + sum(float(f.readline()) for f in self.files)
            for f in self.files:
                f.write(f"{total}\n")
                f.flush()
            return total
        self.files[0].write(f"{value}\n")
        self.files[0].flush()
        return float(self.files[0].readline())


class TorchGroup:
    """torch.distributed on this rank's GPU (NCCL), the same calls SGLang's schedulers make at start."""

    def __init__(self, rank: int, world: int, port: int) -> None:
        from datetime import timedelta

        import torch
        import torch.distributed as dist

        self.torch, self.dist = torch, dist
        os.environ.update(
            MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(rank)
        )
        torch.cuda.set_device(rank)
        self.device = torch.device("cuda", rank)
        dist.init_process_group("nccl", rank=rank, world_size=world, timeout=timedelta(seconds=120))

    def all_reduce(self, value: float) -> float:
        t = self.torch.tensor([value], dtype=self.torch.float64, device=self.device)
        self.dist.all_reduce(t)
        return float(t.item())

    def avail_gib(self) -> float:
        return self.torch.cuda.mem_get_info(self.device)[0] / GIB

    def allocate(self, gib: float) -> Any:
        block = self.torch.empty(int(gib * GIB), dtype=self.torch.uint8, device=self.device)
        block.fill_(1)  # touch it: the driver charges the pages to this process now
        self.torch.cuda.synchronize(self.device)
        return block


# ------------------------------------------------------------------------------------------------ ranks


class _Health(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        path = self.path.split("?")[0]
        body = {
            "/get_model_info": b'{"model_path":"gpu-multi-check"}',
            "/v1/models": b'{"object":"list","data":[{"id":"gpu-multi-check","object":"model"}]}',
        }.get(path, b"")
        code = 200 if path in ("/health", "/health_generate", "/get_model_info", "/v1/models") else 404
        self.send_response(code)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


def rank_main(payload_json: str) -> None:
    """One scheduler rank: join the group, all_reduce, allocate in steps, (rank 0) serve /health, hold."""
    p = json.loads(payload_json)
    rank, world, steps, step_gib = int(p["rank"]), int(p["world"]), int(p["steps"]), float(p["step_gib"])
    state = Path(p["state"])
    _prctl(PR_SET_NAME, rank_title(rank).encode()[:15])
    if rank == p["detach"]:
        if os.fork():  # the parent (the main process's child) exits; this one is re-parented and
            os._exit(0)
        os.setpgid(0, 0)  # leaves the launcher's process group, not its session (SGLang never calls setsid)
    else:
        _prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL))  # SGLang's kill_itself_when_parent_died
    me: dict[str, Any] = {"rank": rank, "pid": os.getpid(), "pgid": os.getpgid(0), "sid": os.getsid(0), "step": -1}
    write_state(state, f"rank{rank}.json", me)
    begun = time.monotonic()
    log_line(rank, "Init torch distributed begin.")
    group: Any = SocketGroup(rank, world, p["master_port"]) if p["cpu"] else TorchGroup(rank, world, p["master_port"])
    cpu_total = 141.0  # the dry run's pretend GPU, for plausible log figures
    avail = (lambda held: cpu_total - held) if p["cpu"] else (lambda held: group.avail_gib())
    total = group.all_reduce(float(rank + 1))
    me.update(step=0, all_reduce=total, all_reduce_expected=world * (world + 1) / 2)
    log_line(rank, f"Init torch distributed ends. elapsed={time.monotonic() - begun:.2f} s, mem usage=0.50 GB")
    write_state(state, f"rank{rank}.json", me)
    blocks: list[Any] = []
    held = 0.0
    for k in range(1, steps + 1):
        wait_go(state, k)
        if k == 1:
            log_line(rank, f"Load weight begin. avail mem={avail(held):.2f} GB")
        before = avail(held)
        blocks.append(None if p["cpu"] else group.allocate(step_gib))
        held += step_gib
        if k == steps - 1 or (steps == 1 and k == 1):
            log_line(
                rank,
                f"Load weight end. elapsed={time.monotonic() - begun:.2f} s, type=GpuMultiCheckForCausalLM, "
                f"dtype=torch.bfloat16, avail mem={avail(held):.2f} GB, mem usage={held:.2f} GB.",
            )
        if k == steps and steps > 1:
            half = step_gib / 2
            log_line(
                rank,
                f"KV Cache is allocated. #tokens: {int(step_gib * 65536)}, K size: {half:.2f} GB, V size: {half:.2f} GB",
            )
            log_line(rank, f"Memory pool end. avail mem={avail(held):.2f} GB")
        me.update(step=k, allocated_gib=held, avail_before=round(before, 2), avail_after=round(avail(held), 2))
        write_state(state, f"rank{rank}.json", me)
    ready = group.all_reduce(1.0)  # every rank holds its memory: the group says so, not a file
    me.update(ready_sum=ready)
    write_state(state, f"rank{rank}.json", me)
    if rank == 0:
        log_line(
            rank,
            f"max_total_num_tokens={int(step_gib * 65536)}, chunked_prefill_size=8192, max_prefill_tokens=16384, "
            f"max_running_requests=48, context_len=131072, available_gpu_mem={avail(held):.2f} GB",
        )
        server = ThreadingHTTPServer(("127.0.0.1", int(p["port"])), _Health)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        log_line(None, f"INFO:     Started server process [{os.getpid()}]")
        log_line(None, "INFO:     Waiting for application startup.")
        log_line(None, "INFO:     Application startup complete.")
        log_line(None, f"INFO:     Uvicorn running on http://127.0.0.1:{p['port']} (Press CTRL+C to quit)")
        log_line(None, "The server is fired up and ready to roll!")
    while True:
        time.sleep(1)


def bystander_main(payload_json: str) -> None:
    """Another user's process titled like a scheduler, holding a little memory on GPU 0: must survive a stop."""
    p = json.loads(payload_json)
    keep = None
    if not p["cpu"]:
        import torch

        keep = torch.empty(int(p["gib"] * GIB), dtype=torch.uint8, device="cuda:0")
        keep.fill_(1)
        torch.cuda.synchronize()
    Path(p["ready"]).write_text(str(os.getpid()))
    while True:  # `keep` stays referenced here, so its memory stays held
        time.sleep(1)


# ------------------------------------------------------------------------------------------- server main


def server_main(args: argparse.Namespace) -> int:
    """SGLang's main process, reduced: print server_args, start the ranks, exit when a rank fails."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        master_port = s.getsockname()[1]
    log_line(
        None,
        f"server_args=ServerArgs(model_path='gpu-multi-check', host='127.0.0.1', port={args.port}, "
        f"tp_size={args.world}, pp_size=1, dp_size=1, mem_fraction_static=0.88)",
    )
    env = {**os.environ, **NCCL_SAFE_ENV}
    ranks = []
    for r in range(args.world):
        payload = {
            "rank": r,
            "world": args.world,
            "master_port": master_port,
            "port": args.port,
            "state": args.state,
            "steps": args.steps,
            "step_gib": args.step_gib,
            "detach": args.detach,
            "cpu": args.cpu,
        }
        ranks.append(spawn_titled(rank_title(r), "rank_main", payload, env=env))
    while True:
        for r, proc in enumerate(ranks):
            code = proc.poll()
            if code is not None and not (r == args.detach and code == 0):
                log_line(None, f"Rank {r} scheduler is dead. Please check if there are relevant logs. exit code {code}")
                for other in ranks:
                    other.kill()
                return 1
        time.sleep(0.5)


def main() -> int:
    parser = argparse.ArgumentParser(prog="gpu_ranks")
    parser.add_argument("mode", choices=["server"])
    parser.add_argument("--world", type=int, required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--state", required=True, help="directory for the rank/step handshake files")
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--step-gib", type=float, default=8.0)
    parser.add_argument("--detach", type=int, default=-1, help="the rank that escapes into its own session")
    parser.add_argument("--cpu", action="store_true", help="no GPU: socket all-reduce, no allocations")
    return server_main(parser.parse_args())


if __name__ == "__main__":
    sys.exit(main())
