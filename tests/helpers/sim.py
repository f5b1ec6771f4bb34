"""Start the project's simulated SGLang server for a test, the way a person would: `setsid … &` with the log
redirected, so the main pid is the process-group and session leader."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from tests.helpers.sshd import free_port
from tui.sim.forkserver import start_ticks

ROOT = Path(__file__).resolve().parent.parent.parent
RUN_MARKER = "SGLANG_TUI_RUN"


def _pids_with_marker(marker: str) -> list[int]:
    """Processes whose environment carries this run's marker (orphans re-parented to PID 1 keep it)."""
    needle = f"{RUN_MARKER}={marker}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            env = (entry / "environ").read_bytes()
            state = (entry / "stat").read_bytes().rsplit(b")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state != b"Z" and needle in env.split(b"\0"):
            found.append(int(entry.name))
    return found


@dataclass
class SimServer:
    log: Path
    port: int
    gpu_state: Path
    pid: int
    argv: list[str]
    run_id: str
    proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    def launch_command(self) -> str:
        """The `sh` command line that starts this simulator (for `--launch`); the caller redirects the log."""
        return shlex.join(["env", f"PYTHONPATH={ROOT}", *self.argv])

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def wait(self, timeout: float) -> int | None:
        """Exit status of the main process (negative: killed by that signal), None if still running."""
        assert self.proc is not None
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def stop(self) -> None:
        """SIGKILL the whole process group, then anything left that carries this run's marker. Idempotent."""
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        for pid in _pids_with_marker(self.run_id):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if self.proc is not None:
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                pass
        # SIGKILL is sent, not done: a process still dying is in its group (not yet a zombie) for a moment after
        # (CI once saw one rank there). Stopped means the marker's processes and the group are both gone.
        deadline = time.monotonic() + 5
        while (_pids_with_marker(self.run_id) or group_pids(self.pid)) and time.monotonic() < deadline:
            time.sleep(0.02)


def start_sim(
    tmp_path: Path,
    *,
    fault: str | None = None,
    speed: float = 200.0,
    tp: int = 8,
    shards: int = 64,
    fmt: str = "0.5.23",
    speculative: str = "EAGLE3",
    port: int | None = None,
    traffic: float = 0.0,
    env: dict[str, str] | None = None,
    prefix: list[str] | None = None,
    accept_len: float | str | None = None,
    extra: tuple[str, ...] | list[str] = (),
) -> SimServer:
    """Start `python -m tui simulate` in its own session, logging to tmp_path/sim.log (appending)."""
    port = port or free_port()
    log = tmp_path / "sim.log"
    gpu_state = tmp_path / "gpus"
    run_id = f"sim-{uuid.uuid4().hex[:12]}"
    argv = [
        *(prefix or []),  # a wrapper that execs the simulator (e.g. setpriv), so its pid stays the main pid
        sys.executable, "-m", "tui", "simulate", "--log", str(log), "--port", str(port), "--tp", str(tp),
        "--shards", str(shards), "--speed", str(speed), "--format", fmt, "--speculative", speculative,
        "--gpu-state", str(gpu_state),
    ]  # fmt: skip
    if fault:
        argv += ["--fault", fault]
    if traffic:
        argv += ["--traffic", str(traffic)]
    if accept_len is not None:
        argv += ["--accept-len", str(accept_len)]
    argv += list(extra)  # e.g. ("--seed", "3", "--slow", "cuda_graph=2")
    full_env = {**os.environ, "PYTHONPATH": str(ROOT), RUN_MARKER: run_id, **(env or {})}
    with open(log, "ab") as out:
        proc = subprocess.Popen(
            argv, cwd=ROOT, env=full_env, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
    return SimServer(log, port, gpu_state, proc.pid, argv, run_id, proc)


# ------------------------------------------------------------------------------------ helpers for the tests


def wait_for_log(sim: SimServer, needle: bytes, timeout: float = 20.0) -> bytes:
    """Poll the log until it contains `needle`; returns the log. Fails with the log's tail on timeout."""
    deadline = time.monotonic() + timeout
    while True:
        data = sim.log.read_bytes() if sim.log.exists() else b""
        if needle in data:
            return data
        if time.monotonic() > deadline:
            tail = data[-2000:].decode(errors="replace")
            raise AssertionError(f"{needle!r} not in the log after {timeout} s; tail:\n{tail}")
        time.sleep(0.01)


def wait_ready(sim: SimServer, timeout: float = 60.0) -> SimServer:
    """Until the log says fired up and /health answers 200; returns the simulator."""
    wait_for_log(sim, b"fired up", timeout)
    deadline = time.monotonic() + timeout
    while http_get(sim.port, "/health")[0] != 200:
        if time.monotonic() > deadline:
            raise AssertionError(f"the simulator never answered /health 200 in {timeout} s")
        time.sleep(0.05)
    return sim


def gpu_holders(state: Path) -> dict[int, int]:
    """pid -> bytes of each simulated-GPU entry in `state` whose process still lives: that very process (the start
    time the entry records, as the GPU probe's simulator backend checks), never a later one given its pid. A test
    that counted or killed the pids of stale entries hit other tests' processes: this machine's pid_max is 32768,
    and a CI run starts tens of thousands of processes."""
    out = {}
    for path in state.glob("proc-*.json"):
        try:
            entry = json.loads(path.read_text())
        except (OSError, ValueError):
            continue  # replaced between listing and reading
        pid = int(entry["pid"])
        started = start_ticks(pid)  # None: gone, or a zombie
        if started is not None and entry.get("start", started) == started:
            out[pid] = int(entry["used"])
    return out


def group_pids(pgid: int) -> list[int]:
    """Live (not zombie) processes of a process group."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if fields[0] not in ("Z", "X") and int(fields[2]) == pgid:
            found.append(int(entry.name))
    return found


def http_get(port: int, path: str, timeout: float = 10.0) -> tuple[int, bytes]:
    """One GET to 127.0.0.1:port; raises ConnectionRefusedError when nothing listens."""
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("GET", path)
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def http_post(port: int, path: str, body: dict[str, object], timeout: float = 30.0) -> tuple[int, bytes]:
    import http.client
    import json

    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("POST", path, json.dumps(body), {"content-type": "application/json"})
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def start_nodes(tmp_path: Path, nnodes: int = 2, *, tp: int = 16, faults: dict[int, str] | None = None,
                **kw: object) -> list[SimServer]:  # fmt: skip
    """A simulated multi-node launch: one simulator per node (tmp_path/nodeR/sim.log, its own GPUs), node 0
    listening on a free dist-init-addr; all nodes share the HTTP port (only node 0 serves it)."""
    addr = f"127.0.0.1:{free_port()}"
    port = free_port()
    nodes = []
    for rank in range(nnodes):
        where = tmp_path / f"node{rank}"
        where.mkdir(exist_ok=True)
        extra = ["--nnodes", str(nnodes), "--node-rank", str(rank), "--dist-init-addr", addr]
        fault = (faults or {}).get(rank)
        nodes.append(start_sim(where, tp=tp, port=port, fault=fault, extra=extra, **kw))  # type: ignore[arg-type]
    return nodes
