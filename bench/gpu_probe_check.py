"""Hardware check of the GPU probe and the stop path ON A REAL NVIDIA GPU (not a CPU test: pytest does not
collect this file, whose name does not start with `test_`; it needs a GPU and PyTorch).

Run on a GPU host from the repository root:  python3 bench/gpu_probe_check.py [OUT_DIR]

1. A CUDA process allocates memory in steps; at each step the probe (NVML backend through LocalHost, and
   the nvidia-smi backend) is compared with `nvidia-smi --query-gpu=memory.used` (must agree within 1%)
   and the process's memory must be attributed to its PID.
2. The probe's CPU cost per tick, against one `nvidia-smi` call (wall and CPU).
3. The stop path: a CUDA "server" launched through ServerControl (rank titled `sglang::scheduler_TP0`, plus
   an orphan rank that escaped into its own session), next to a bystander with the same title; terminate;
   every server process gone, the bystander alive, and the GPU memory released per the probe.
Prints a summary and writes OUT_DIR/gpu_check.json; exits 1 if a check fails.
"""

from __future__ import annotations

import asyncio
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

GIB = 2**30
MIB = 2**20
STEP_GIB = 8
STEPS = 5


# ------------------------------------------------------------------------------------ CUDA processes


def rank_main(gib: int, steps: int) -> None:
    """A CUDA process: allocate `gib` GiB per step, print `step k`, wait for a line on stdin (or forever)."""
    import torch

    torch.cuda.init()
    blocks = [torch.empty(1, device="cuda")]
    print("step 0", flush=True)
    for k in range(1, steps + 1):
        if sys.stdin.isatty() or steps > 1:
            sys.stdin.readline()
        blocks.append(torch.empty(gib * GIB, dtype=torch.uint8, device="cuda"))
        torch.cuda.synchronize()
        print(f"step {k}", flush=True)
    while True:
        time.sleep(1)


def titled(title: str, *args: str) -> list[str]:
    """argv for a Python process whose /proc/PID/cmdline starts with `title` (as setproctitle would show)."""
    return [title, str(Path(__file__).resolve()), *args]


def titled_env() -> dict[str, str]:
    """A titled interpreter cannot find its venv from argv[0]: hand it our sys.path."""
    return dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))


def server_main(gib: int) -> None:
    """A CUDA 'server': rank TP0 as a child, rank TP1 escaped into its own session (an orphan)."""
    if os.fork() == 0:
        os.execve(sys.executable, titled("sglang::scheduler_TP0", "rank", str(gib), "1"), titled_env())
    if os.fork() == 0:
        os.setsid()
        if os.fork():
            os._exit(0)
        os.execve(sys.executable, titled("sglang::scheduler_TP1", "rank", str(gib), "1"), titled_env())
    while True:
        time.sleep(1)


# ------------------------------------------------------------------------------------------ measuring


def smi(query: str) -> list[list[str]]:
    out = subprocess.run(
        ["nvidia-smi", f"--query-{query}", "--format=csv,noheader,nounits"], capture_output=True, text=True, timeout=30
    ).stdout
    return [[c.strip() for c in line.split(",")] for line in out.splitlines() if line.strip()]


def smi_used_mib() -> dict[int, int]:
    return {int(i): int(u) for i, u in smi("gpu=index,memory.used")}


def smi_apps() -> dict[int, int]:
    return {int(p): int(u) * MIB for p, u in smi("compute-apps=pid,used_memory") if u.isdigit()}


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def probe_cpu(args: list[str], count: int) -> tuple[float, float]:
    """(CPU s, wall s) of one probe run of `count` ticks."""
    cpu, wall = children_cpu(), time.perf_counter()
    subprocess.run(
        [sys.executable, str(ROOT / "tui/sources/gpu_probe.py"), "--count", str(count), *args],
        stdout=subprocess.DEVNULL,
        check=True,
        timeout=120,
    )
    return children_cpu() - cpu, time.perf_counter() - wall


async def next_fresh(stream, after: float):
    """The first snapshot taken after `after` (probe clock = host clock)."""
    while True:
        snap = await anext(stream)
        if snap.error is None and (snap.t or 0) > after:
            return snap


async def allocation_steps(results: dict) -> None:
    from tui.core.gpuparse import parse_probe_line
    from tui.sources.gpu import gpu_snapshots
    from tui.sources.local import LocalHost

    host = LocalHost()
    await host.connect()
    nvml = gpu_snapshots(host, remote_python=sys.executable, interval=0.5)
    smi_probe = subprocess.Popen(
        [sys.executable, "-u", str(ROOT / "tui/sources/gpu_probe.py"), "--backend", "nvidia-smi", "--interval", "0.5"],
        stdout=subprocess.PIPE,
        text=True,
    )
    rank = subprocess.Popen(
        [sys.executable, str(Path(__file__).resolve()), "rank", str(STEP_GIB), str(STEPS)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    rows = []
    try:
        for k in range(STEPS + 1):
            if k:
                rank.stdin.write("\n")
                rank.stdin.flush()
            assert rank.stdout.readline().strip() == f"step {k}"
            time.sleep(1.0)
            mark = time.time()
            snap = await next_fresh(nvml, mark)
            smi_snap = parse_probe_line(smi_probe.stdout.readline())
            while smi_snap.error is None and (smi_snap.t or 0) <= mark:
                smi_snap = parse_probe_line(smi_probe.stdout.readline())
            truth = smi_used_mib()
            apps = smi_apps()
            gpu = snap.gpus[0]
            mine = [p for g in snap.gpus for p in g.procs if p.pid == rank.pid]
            smi_gpu = smi_snap.gpus[0] if smi_snap.gpus else None
            row = {
                "step": k,
                "allocated_gib": k * STEP_GIB,
                "nvidia_smi_used_mib": truth[0],
                "probe_nvml_used_mib": round(gpu.used_bytes / MIB, 1),
                "probe_nvml_reserved_mib": None if gpu.reserved_bytes is None else round(gpu.reserved_bytes / MIB, 1),
                "probe_smi_used_mib": None if smi_gpu is None else round(smi_gpu.used_bytes / MIB, 1),
                "nvml_vs_smi_pct": round(100 * abs(gpu.used_bytes / MIB - truth[0]) / max(truth[0], 1), 3),
                "smi_backend_vs_smi_pct": None
                if smi_gpu is None
                else round(100 * abs(smi_gpu.used_bytes / MIB - truth[0]) / max(truth[0], 1), 3),
                "pid_attributed_mib": round(mine[0].used_bytes / MIB, 1) if mine and mine[0].used_bytes else None,
                "pid_name": mine[0].name if mine else None,
                "smi_apps_pid_mib": round(apps.get(rank.pid, 0) / MIB, 1),
                "smi_backend_pid_mib": next(
                    (
                        round((p.used_bytes or 0) / MIB, 1)
                        for p in (smi_gpu.procs if smi_gpu else ())
                        if p.pid == rank.pid
                    ),
                    None,
                ),
            }
            rows.append(row)
            print(json.dumps(row), flush=True)
    finally:
        rank.kill()
        rank.wait()
        smi_probe.kill()
        smi_probe.wait()
        await nvml.aclose()
        await host.close()
    results["steps"] = rows
    results["steps_ok"] = all(
        r["nvml_vs_smi_pct"] <= 1.0
        and (r["smi_backend_vs_smi_pct"] or 0) <= 1.0
        and r["pid_attributed_mib"] is not None
        and abs(r["pid_attributed_mib"] - r["smi_apps_pid_mib"]) <= 0.01 * max(r["smi_apps_pid_mib"], 1)
        for r in rows
    )


def costs(results: dict) -> None:
    from tui.sources import gpu_probe

    backend = gpu_probe.NvmlBackend()
    backend.read()
    n = 1000
    cpu, wall = time.process_time(), time.perf_counter()
    for _ in range(n):
        backend.read()
    results["nvml_read_in_process"] = {
        "ticks": n,
        "cpu_us_per_tick": round(1e6 * (time.process_time() - cpu) / n, 1),
        "wall_us_per_tick": round(1e6 * (time.perf_counter() - wall) / n, 1),
    }
    backend.close()
    start_cpu, start_wall = probe_cpu(["--interval", "0.02"], 1)
    run_cpu, run_wall = probe_cpu(["--interval", "0.02"], 201)
    results["nvml_probe_process"] = {
        "startup_cpu_ms": round(1e3 * start_cpu, 1),
        "startup_wall_ms": round(1e3 * start_wall, 1),
        "cpu_us_per_tick": round(1e6 * (run_cpu - start_cpu) / 200, 1),
    }
    s_cpu, s_wall = probe_cpu(["--backend", "nvidia-smi", "--interval", "0.1"], 1)
    r_cpu, r_wall = probe_cpu(["--backend", "nvidia-smi", "--interval", "0.1"], 31)
    results["smi_probe_process"] = {
        "startup_cpu_ms": round(1e3 * s_cpu, 1),
        "startup_wall_ms": round(1e3 * s_wall, 1),
        "cpu_ms_per_tick": round(1e3 * (r_cpu - s_cpu) / 30, 2),
        "note": "includes the two nvidia-smi -lms children",
    }
    calls = 10
    cpu, wall = children_cpu(), time.perf_counter()
    for _ in range(calls):
        smi("gpu=index,uuid,memory.used,memory.total,utilization.gpu")
    results["one_nvidia_smi_call"] = {
        "cpu_ms": round(1e3 * (children_cpu() - cpu) / calls, 1),
        "wall_ms": round(1e3 * (time.perf_counter() - wall) / calls, 1),
    }
    print(
        json.dumps(
            {
                k: results[k]
                for k in ("nvml_read_in_process", "nvml_probe_process", "smi_probe_process", "one_nvidia_smi_call")
            }
        ),
        flush=True,
    )


async def stop_path(results: dict, out: Path) -> None:
    from tui.sources.control import ServerControl
    from tui.sources.local import LocalHost

    this = Path(__file__).resolve()
    bystander = subprocess.Popen(
        titled("sglang::scheduler_TP0", "rank", "2", "1"),
        executable=sys.executable,
        env=titled_env(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    host = LocalHost()
    await host.connect()
    control = ServerControl(
        host,
        port=39999,
        log_path=str(out / "server.log"),
        remote_python=sys.executable,
        launch=f"exec {sys.executable} {this} server 4",
        cwd=str(ROOT),
        grace_s=10,
    )
    try:
        assert bystander.stdout.readline().strip() == "step 0"
        launched = await control.launch()
        deadline = time.monotonic() + 120
        ours: list = []
        while time.monotonic() < deadline:  # until both ranks hold their 4 GiB on the GPU
            snap = await control.gpu_snapshot()
            state = await control.process_state()
            ours = [
                (g.index, p.pid, p.used_bytes, p.name)
                for g in snap.gpus
                for p in g.procs
                if p.pid in state.pids and (p.used_bytes or 0) >= 4 * GIB
            ]
            if len(ours) == 2:
                break
            await asyncio.sleep(1)
        from tui.core.ranks import map_ranks

        # The bystander is another `sglang::scheduler_TP0` on GPU 0: titles alone are ambiguous for TP0,
        # the server's own pids (from process_state) settle it.
        results["map_ranks_titles_only"] = {k: list(v) for k, v in map_ranks(["TP0", "TP1"], snap, 2).items()}
        results["map_ranks"] = {k: list(v) for k, v in map_ranks(["TP0", "TP1"], snap, 2, state.pids).items()}
        ranks_ok = results["map_ranks"] == {
            f"TP{k}": [0, next((pid for _, pid, _, name in ours if f"_TP{k} " in name), None)] for k in range(2)
        }
        before = smi_used_mib()[0]
        print("describe(terminate):\n" + control.describe("terminate"), flush=True)
        started = time.monotonic()
        result = await control.terminate()
        took = time.monotonic() - started
        after = smi_used_mib()[0]
        left = [
            pid
            for _, pid, _, _ in ours
            if Path(f"/proc/{pid}").exists() and "Z" not in Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1][:3]
        ]
        results["stop"] = {
            "launch_ok": launched.ok,
            "launch_detail": launched.detail,
            "ranks_on_gpu": ours,
            "process_state_before": list(state.pids),
            "terminate_ok": result.ok,
            "detail": result.detail,
            "survivors": list(result.survivors),
            "gpu_held": list(result.gpu_held),
            "seconds": round(took, 2),
            "smi_used_mib_before": before,
            "smi_used_mib_after": after,
            "server_pids_left_in_proc": left,
            "bystander_alive": bystander.poll() is None,
            "bystander_still_on_gpu": bystander.pid in smi_apps(),
        }
        results["stop_ok"] = (
            ranks_ok
            and launched.ok
            and len(ours) == 2
            and result.ok
            and not left
            and bystander.poll() is None
            and bystander.pid in smi_apps()
            and before - after >= 2 * 4 * 1024 * 0.99
        )
        print(
            json.dumps(
                {
                    "map_ranks_titles_only": results["map_ranks_titles_only"],
                    "map_ranks": results["map_ranks"],
                    **results["stop"],
                }
            ),
            flush=True,
        )
    finally:
        await control.kill()
        bystander.kill()
        bystander.wait()
        await host.close()


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "rank":
        rank_main(int(sys.argv[2]), int(sys.argv[3]))
        return 0
    if len(sys.argv) > 1 and sys.argv[1] == "server":
        server_main(int(sys.argv[2]))
        return 0
    out = Path(sys.argv[1] if len(sys.argv) > 1 else os.environ.get("OUT", "."))
    out.mkdir(parents=True, exist_ok=True)
    results: dict = {
        "nvidia_smi_L": subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True).stdout.strip()
    }
    try:
        from importlib.metadata import version

        import torch

        results["versions"] = {
            "python": sys.version.split()[0],
            "torch": torch.__version__,
            "nvidia_ml_py": version("nvidia-ml-py"),
            "driver": smi("gpu=driver_version")[0][0],
        }
    except Exception as exc:  # noqa: BLE001 (report, keep going)
        results["versions"] = str(exc)
    for name, step in (
        ("allocation_steps", lambda: asyncio.run(allocation_steps(results))),
        ("costs", lambda: costs(results)),
        ("stop_path", lambda: asyncio.run(stop_path(results, out))),
    ):
        try:
            step()
        except Exception:  # noqa: BLE001 (one failing part must not hide the others' figures)
            import traceback

            results[f"{name}_error"] = traceback.format_exc()
            print(results[f"{name}_error"], flush=True)
    (out / "gpu_check.json").write_text(json.dumps(results, indent=1))
    ok = results.get("steps_ok") and results.get("stop_ok")
    print(f"RESULT steps_ok={results.get('steps_ok')} stop_ok={results.get('stop_ok')}", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
