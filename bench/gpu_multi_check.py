"""Hardware check on ALL the GPUs of one host (issue 7): N real ranks, the probe, wait, the GPU pane and stop.

Not a CPU test: pytest does not collect this file (its name does not start with `test_`). On a GPU host,
from the repository root:  python3 bench/gpu_multi_check.py OUT_DIR        (N = torch.cuda.device_count())
Dry run with no GPU and no torch:  python3 bench/gpu_multi_check.py OUT_DIR --cpu [--world 2]

1. Launches bench/gpu_ranks.py through ServerControl.launch() (real pidfile, process group, run
   marker): N ranks titled `sglang::scheduler_TP<r>` in one NCCL group (all_reduce), allocating
   --steps × --step-gib on their own GPU and logging SGLang's lines; rank 0 serves /health; the last rank
   escapes into a process group of its own, re-parented, still in the launch's session. A bystander titled
   `sglang::scheduler_TP0` holds a little of GPU 0.
2. Meanwhile `python -m tui wait local --log LOG --port PORT --timeout 120 --json`; at every step the probe
   (NVML through LocalHost, and its nvidia-smi backend) against `nvidia-smi --query-gpu=index,memory.used`
   per GPU, and map_ranks (with the server's pids) against the ranks' own pids and GPUs.
3. A screenshot of the TUI (real Monitor on LocalHost) while the ranks hold their memory.
4. `python -m tui stop local --port PORT --log LOG`: every rank gone (the escaped one too, by the
   session), nothing left with the marker in /proc, GPU memory released per the probe, the bystander alive.
Writes OUT_DIR/results.json, OUT_DIR/server.log, the screenshots; prints `RESULT …`; exit 0 when all pass.
A hard limit (--limit seconds) kills everything it started and writes what it has.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import gpu_ranks  # noqa: E402  (beside this script)

MIB = 2**20
MARKER = "SGLANG_TUI_RUN"
RESULTS: dict[str, Any] = {"checks": {}}
STARTED: list[subprocess.Popen[Any]] = []  # what we started ourselves, for the cleanup


def say(text: str) -> None:
    print(text, flush=True)


def check(name: str, ok: bool, detail: Any = None) -> bool:
    RESULTS["checks"][name] = {"ok": bool(ok), **({"detail": detail} if detail is not None else {})}
    say(f"CHECK {'PASS' if ok else 'FAIL'} {name}" + (f": {detail}" if detail is not None else ""))
    return ok


# ------------------------------------------------------------------------------------------- /proc


def proc_fields(pid: int) -> dict[str, Any] | None:
    """cmdline, state, ppid, pgid, sid of a live (not zombie) process, None when gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except (OSError, IndexError):
        return None
    if stat[0] in ("Z", "X"):
        return None
    return {
        "cmdline": cmdline.decode(errors="replace").replace("\0", " ").strip(),
        "state": stat[0],
        "ppid": int(stat[1]),
        "pgid": int(stat[2]),
        "sid": int(stat[3]),
    }


def marker_of(pid: int) -> str | None:
    try:
        env = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return None
    return next((e.split(b"=", 1)[1].decode() for e in env if e.startswith(MARKER.encode() + b"=")), None)


def pids_with_marker(run_id: str) -> list[int]:
    needle = f"{MARKER}={run_id}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and proc_fields(int(entry.name)) is not None:
            try:
                if needle in (entry / "environ").read_bytes().split(b"\0"):
                    found.append(int(entry.name))
            except OSError:
                continue
    return sorted(found)


# ------------------------------------------------------------------------------------------- GPU truth


def smi_used_mib() -> dict[int, int]:
    """`nvidia-smi --query-gpu=index,memory.used` per GPU ({} with no nvidia-smi: the CPU dry run)."""
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=index,memory.used", "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            timeout=30,
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        return {}
    rows = [line.split(",") for line in out.splitlines() if line.strip()]
    return {int(i): int(u) for i, u in rows}


def smi_backend_snapshot() -> Any:
    """One tick of the probe's nvidia-smi backend (the fallback when NVML is missing)."""
    from tui.core.gpuparse import parse_probe_line

    out = subprocess.run(
        [
            sys.executable,
            str(ROOT / "tui/sources/gpu_probe.py"),
            "--backend",
            "nvidia-smi",
            "--count",
            "1",
            "--interval",
            "0.2",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout
    lines = [line for line in out.splitlines() if line.strip()]
    return parse_probe_line(lines[-1]) if lines else None


def pct(a: float, b: float) -> float:
    return round(100 * abs(a - b) / max(b, 1), 3)


# ------------------------------------------------------------------------------------------- the parts


def rank_states(state: Path, world: int) -> dict[int, dict[str, Any]]:
    found = {}
    for r in range(world):
        try:
            found[r] = json.loads((state / f"rank{r}.json").read_text())
        except (OSError, ValueError):
            pass
    return found


def wait_ranks(state: Path, world: int, step: int, limit_s: float, key: str = "step") -> dict[int, dict[str, Any]]:
    """The ranks' state files once every rank is at `step`; fails at once when the server's main process died."""
    deadline = time.monotonic() + limit_s
    main_pid = RESULTS.get("main_pid")
    while True:
        if main_pid and proc_fields(main_pid) is None:
            raise RuntimeError(f"the server's main process {main_pid} died (see server.log)")
        ranks = rank_states(state, world)
        if len(ranks) == world and all(r.get(key, -1) >= step for r in ranks.values()):
            return ranks
        if time.monotonic() > deadline:
            raise TimeoutError(f"ranks not at {key} {step} after {limit_s:g} s: {ranks}")
        time.sleep(0.1)


async def measure_step(
    control: Any, k: int, args: argparse.Namespace, ranks: dict[int, dict[str, Any]], world: int
) -> dict[str, Any]:
    """Probe (NVML via LocalHost, nvidia-smi backend) vs nvidia-smi per GPU, and map_ranks, at one step."""
    from tui.core.ranks import map_ranks

    time.sleep(1.0)  # let the driver's accounting settle after the allocation
    snap = await control.gpu_snapshot()
    truth = smi_used_mib()
    smi_snap = smi_backend_snapshot() if truth else None
    state = await control.process_state()
    rank_pids = {r: s["pid"] for r, s in ranks.items()}
    row: dict[str, Any] = {
        "step": k,
        "allocated_gib_per_rank": k * args.step_gib,
        "probe_source": snap.source,
        "probe_error": snap.error,
        "server_pids": list(state.pids),
        "gpus": [],
    }
    for gpu in snap.gpus:
        smi_gpu = next((g for g in (smi_snap.gpus if smi_snap else ()) if g.index == gpu.index), None)
        used_mib = (gpu.used_bytes or 0) / MIB
        rank_of_gpu = next((r for r, pid in rank_pids.items() if r == gpu.index), None)
        rank_proc = next((p for p in gpu.procs if rank_of_gpu is not None and p.pid == rank_pids[rank_of_gpu]), None)
        row["gpus"].append(
            {
                "index": gpu.index,
                "nvidia_smi_used_mib": truth.get(gpu.index),
                "probe_nvml_used_mib": round(used_mib, 1),
                "probe_smi_used_mib": None if smi_gpu is None else round((smi_gpu.used_bytes or 0) / MIB, 1),
                "nvml_vs_smi_pct": None if gpu.index not in truth else pct(used_mib, truth[gpu.index]),
                "smi_backend_vs_smi_pct": None
                if smi_gpu is None or gpu.index not in truth
                else pct((smi_gpu.used_bytes or 0) / MIB, truth[gpu.index]),
                "rank_pid_used_mib": None
                if rank_proc is None or rank_proc.used_bytes is None
                else round(rank_proc.used_bytes / MIB, 1),
                "procs": [
                    [p.pid, None if p.used_bytes is None else round(p.used_bytes / MIB, 1), p.name] for p in gpu.procs
                ],
            }
        )
    names = [f"TP{r}" for r in range(world)]
    row["map_ranks"] = {k_: list(v) for k_, v in map_ranks(names, snap, world, state.pids).items()}
    row["map_ranks_titles_only"] = {k_: list(v) for k_, v in map_ranks(names, snap, world).items()}
    say("STEP " + json.dumps({**row, "gpus": [{k_: v for k_, v in g.items() if k_ != "procs"} for g in row["gpus"]]}))
    return row


async def screenshot(out: Path, log: Path, port: int, world: int, control: Any) -> dict[str, Any]:
    """The real TUI (Monitor on LocalHost) headless, saved once its GPU pane shows every rank's memory."""
    from tui.sources.local import LocalHost
    from tui.sources.monitor import Monitor
    from tui.sources.session import Session
    from tui.ui.app import SglangTui, UiSources

    host = LocalHost()
    await host.connect()
    monitor = Monitor(host, log_path=str(log), port=port, remote_python=sys.executable, process_watch=control)
    session = Session(monitor)
    app = SglangTui(
        UiSources(batches=session.batches, control=None, host_label="local", fold=session.fold, port=port),
        read_only=True,
    )
    info: dict[str, Any] = {}
    try:
        async with app.run_test(size=(160, 48)) as pilot:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                await pilot.pause(0.5)
                snap = app.state.gpus
                held = snap is not None and len(snap.gpus) >= world and all(g.procs for g in snap.gpus)
                if (held or snap is not None and world == 0) and app.state.phase.value in ("ready", "serving"):
                    break
            await pilot.pause(1.5)  # one more GPU tick and tick of the clock on screen
            snap = app.state.gpus
            info = {
                "phase": app.state.phase.value,
                "gpus_on_screen": 0 if snap is None else len(snap.gpus),
                "probe_source": None if snap is None else snap.source,
                "ranks": [[r.name, r.gpu_index, r.pid] for r in app.state.ranks],
            }
            info["files"] = [app.save_screenshot(filename="gpu_pane_real.svg", path=str(out))]
            await pilot.press("3", "3")  # focus the GPU pane, then maximize it
            await pilot.pause(0.5)
            info["files"].append(app.save_screenshot(filename="gpu_pane_real_maximized.svg", path=str(out)))
    finally:
        await monitor.close()
        await host.close()
    return info


def cli(*argv: str, timeout: float) -> dict[str, Any]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep),
    }
    begun = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "tui", *argv], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout
    )
    return {
        "command": "python -m tui " + shlex.join(argv),
        "rc": done.returncode,
        "stdout": done.stdout,
        "stderr": done.stderr,
        "seconds": round(time.monotonic() - begun, 2),
    }


async def run_check(args: argparse.Namespace, out: Path, work: Path) -> None:
    from tui.core.gpuparse import memory_held
    from tui.sources.control import ServerControl
    from tui.sources.local import LocalHost

    if args.cpu:
        world = args.world
    else:
        import torch

        world = torch.cuda.device_count()
        RESULTS["versions"] = {"torch": torch.__version__, "python": sys.version.split()[0]}
        try:
            RESULTS["versions"]["nccl"] = str(torch.cuda.nccl.version())
        except Exception as exc:  # noqa: BLE001 (a version string is not worth the run)
            RESULTS["versions"]["nccl"] = f"unknown: {exc}"
    RESULTS["world"] = world
    RESULTS["nvidia_smi_L"] = (
        subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True).stdout.strip() if not args.cpu else None
    )
    detach = world - 1 if world > 1 else -1  # rank 0 serves /health, so another one escapes
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = work / "server.log"
    state = work / "state"
    state.mkdir()

    # A same-titled process of someone else's, on GPU 0, in its own session and without our run marker.
    by_env = {k: v for k, v in os.environ.items() if k != MARKER}
    bystander = gpu_ranks.spawn_titled(
        gpu_ranks.rank_title(0),
        "bystander_main",
        {"cpu": args.cpu, "gib": 1, "ready": str(state / "bystander")},
        env=by_env,
        new_session=True,
    )
    STARTED.append(bystander)
    deadline = time.monotonic() + 60
    while not (state / "bystander").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    RESULTS["bystander"] = {"pid": bystander.pid, "before": proc_fields(bystander.pid)}

    launch = " ".join(
        shlex.quote(a)
        for a in [
            "exec",
            sys.executable,
            str(ROOT / "bench/gpu_ranks.py"),
            "server",
            "--world",
            str(world),
            "--port",
            str(port),
            "--state",
            str(state),
            "--steps",
            str(args.steps),
            "--step-gib",
            str(args.step_gib),
            "--detach",
            str(detach),
            *(["--cpu"] if args.cpu else []),
        ]
    )
    host = LocalHost()
    await host.connect()
    control = ServerControl(
        host, port=port, log_path=str(log), launch=launch, cwd=str(ROOT), remote_python=sys.executable
    )
    launched = await control.launch()
    RESULTS["launch"] = {"ok": launched.ok, "detail": launched.detail, "command": launched.command}
    say(f"LAUNCH {launched.ok}: {launched.detail}")
    if not launched.ok:
        raise RuntimeError(f"launch failed: {launched.detail}")
    main_pid = int(Path(f"{log}.sglang-tui.pid").read_text())
    RESULTS["main_pid"] = main_pid
    run_id = marker_of(main_pid)
    RESULTS["run_marker"] = run_id

    wait_out = open(work / "wait.stdout", "w")  # noqa: SIM115  (the waiter writes into it; closed once it is done)
    wait_err = open(work / "wait.stderr", "w")  # noqa: SIM115
    wait_argv = ["wait", "local", "--log", str(log), "--port", str(port), "--timeout", "120", "--json"]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep),
    }
    waiter = subprocess.Popen(
        [sys.executable, "-m", "tui", *wait_argv], cwd=ROOT, env=env, stdout=wait_out, stderr=wait_err
    )
    STARTED.append(waiter)

    ranks = wait_ranks(state, world, 0, 150)
    RESULTS["ranks"] = {
        r: {**s, "proc": proc_fields(s["pid"]), "marker": marker_of(s["pid"])} for r, s in ranks.items()
    }
    steps = []
    for k in range(args.steps + 1):
        if k:
            (state / f"go{k}").write_text("")
            ranks = wait_ranks(state, world, k, 120)
        steps.append(await measure_step(control, k, args, ranks, world))
        RESULTS["steps"] = steps
    wait_ranks(state, world, 1, 60, key="ready_sum")

    try:
        waiter.wait(timeout=130)
    except subprocess.TimeoutExpired:
        waiter.kill()
    wait_out.close()
    wait_err.close()
    json_lines = [line for line in (work / "wait.stdout").read_text().splitlines() if line.strip()]
    RESULTS["wait"] = {
        "command": "python -m tui " + shlex.join(wait_argv),
        "rc": waiter.returncode,
        "json_lines": len(json_lines),
        "last_json": json.loads(json_lines[-1]) if json_lines else None,
        "stderr_tail": (work / "wait.stderr").read_text().splitlines()[-6:],
    }
    say(f"WAIT rc={waiter.returncode} stderr: {RESULTS['wait']['stderr_tail']}")

    try:
        RESULTS["screenshot"] = await screenshot(
            out, log, port, world, ServerControl(host, port=port, log_path=str(log), remote_python=sys.executable)
        )
    except Exception as exc:  # noqa: BLE001 (the other checks still count)
        RESULTS["screenshot"] = {"error": f"{type(exc).__name__}: {exc}"}
    say("SCREENSHOT " + json.dumps(RESULTS["screenshot"]))

    ranks = rank_states(state, world)
    rank_pids = {r: s["pid"] for r, s in ranks.items()}
    RESULTS["ranks_before_stop"] = {
        r: {"pid": pid, **(proc_fields(pid) or {}), "marker": marker_of(pid)} for r, pid in rank_pids.items()
    }
    titles_ok = all((proc_fields(pid) or {}).get("cmdline") == gpu_ranks.rank_title(r) for r, pid in rank_pids.items())
    server_before = (await control.process_state()).pids
    before_mib = smi_used_mib()

    stop_argv = ("stop", "local", "--port", str(port), "--log", str(log))
    RESULTS["stop"] = cli(*stop_argv, timeout=150)
    say(
        f"STOP rc={RESULTS['stop']['rc']} ({RESULTS['stop']['seconds']} s)\n{RESULTS['stop']['stdout']}{RESULTS['stop']['stderr']}"
    )

    after = await control.gpu_snapshot()
    after_mib = smi_used_mib()
    left_marker = pids_with_marker(run_id) if run_id else []
    left_ranks = [pid for pid in rank_pids.values() if proc_fields(pid) is not None]
    held = memory_held(after, set(server_before) | set(rank_pids.values()))
    by_alive = proc_fields(bystander.pid) is not None
    by_on_gpu = any(p.pid == bystander.pid for g in after.gpus for p in g.procs)
    RESULTS["after_stop"] = {
        "probe_source": after.source,
        "probe_error": after.error,
        "probe_used_mib": {g.index: round((g.used_bytes or 0) / MIB, 1) for g in after.gpus},
        "probe_procs": {
            g.index: [[p.pid, None if p.used_bytes is None else round(p.used_bytes / MIB, 1), p.name] for p in g.procs]
            for g in after.gpus
        },
        "nvidia_smi_used_mib_before": before_mib,
        "nvidia_smi_used_mib_after": after_mib,
        "server_pids_before": list(server_before),
        "rank_pids_left": left_ranks,
        "marker_pids_left": left_marker,
        "held_by_server": [list(h) for h in held],
        "bystander_alive": by_alive,
        "bystander_on_gpu0": by_on_gpu,
        "bystander_after": proc_fields(bystander.pid),
    }
    say("AFTER " + json.dumps(RESULTS["after_stop"]))

    # ------------------------------------------------------------------------------------------ verdicts
    rows = RESULTS["steps"]
    expected_sum = world * (world + 1) / 2
    check(
        "all_reduce",
        all(s.get("all_reduce") == expected_sum and s.get("ready_sum") == world for s in ranks.values()),
        {r: s.get("all_reduce") for r, s in ranks.items()},
    )
    check("titles", titles_ok, {r: d.get("cmdline") for r, d in RESULTS["ranks_before_stop"].items()})
    if detach >= 0:
        d = RESULTS["ranks_before_stop"][detach]
        check(
            "detached_rank",
            d.get("pgid") == d.get("pid") and d.get("sid") == main_pid and d.get("ppid") != main_pid,
            {
                "pid": d.get("pid"),
                "pgid": d.get("pgid"),
                "sid": d.get("sid"),
                "ppid": d.get("ppid"),
                "launcher_sid": main_pid,
            },
        )
    if not args.cpu:
        check("probe_sees_all_gpus", all(len(r["gpus"]) == world for r in rows), [len(r["gpus"]) for r in rows])
        check(
            "probe_within_1pct",
            all(
                g["nvml_vs_smi_pct"] is not None
                and g["nvml_vs_smi_pct"] <= 1.0
                and (g["smi_backend_vs_smi_pct"] or 0) <= 1.0
                for r in rows
                for g in r["gpus"]
            ),
        )
        check(
            "rank_memory_attributed",
            all(
                g["rank_pid_used_mib"] is not None
                and g["rank_pid_used_mib"] >= r["allocated_gib_per_rank"] * 1024 * 0.99
                for r in rows[1:]
                for g in r["gpus"]
            ),
        )
        expect = {f"TP{r}": [r, pid] for r, pid in rank_pids.items()}
        check("map_ranks", all(r["map_ranks"] == expect for r in rows[1:]), rows[-1]["map_ranks"])
        check(
            "gpu_released",
            not held
            and after.error is None
            and all(
                after_mib.get(i, 0) <= before_mib.get(i, 0) - args.steps * args.step_gib * 1024 * 0.99
                for i in range(world)
            ),
            {"before": before_mib, "after": after_mib},
        )
        check("bystander_on_gpu0_after", by_on_gpu)
    check(
        "wait_ready",
        waiter.returncode == 0 and (RESULTS["wait"]["last_json"] or {}).get("phase") in ("ready", "serving"),
        RESULTS["wait"]["stderr_tail"][-1:] or None,
    )
    check(
        "screenshot",
        "files" in RESULTS["screenshot"] and (args.cpu or (RESULTS["screenshot"].get("gpus_on_screen") == world)),
        RESULTS["screenshot"].get("error"),
    )
    check(
        "stop_exit_0",
        RESULTS["stop"]["rc"] == 0,
        RESULTS["stop"]["stdout"].strip() or RESULTS["stop"]["stderr"].strip(),
    )
    check("no_process_left", not left_ranks and not left_marker, {"ranks": left_ranks, "marker": left_marker})
    check("bystander_alive", by_alive)
    await host.close()


def cleanup(work: Path) -> None:
    """Kill what this check started (our own children, the server's group and marker), never by name."""
    run_id = RESULTS.get("run_marker")
    pidfile = work / "server.log.sglang-tui.pid"
    try:
        os.killpg(int(pidfile.read_text()), signal.SIGKILL)
    except (OSError, ValueError):
        pass
    for pid in pids_with_marker(run_id) if run_id else []:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    for proc in STARTED:
        if proc.poll() is None:
            proc.kill()


def summary() -> str:
    """The figures as Markdown: per step and GPU, the probe against nvidia-smi; ranks; wait; stop."""
    lines = [
        "| step | GiB/rank | GPU | nvidia-smi MiB | probe NVML MiB | diff | probe smi-backend MiB | diff | rank's pid MiB |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for row in RESULTS.get("steps", []):
        for g in row["gpus"]:
            lines.append(
                f"| {row['step']} | {row['allocated_gib_per_rank']:g} | {g['index']} | {g['nvidia_smi_used_mib']} | "
                f"{g['probe_nvml_used_mib']} | {g['nvml_vs_smi_pct']}% | {g['probe_smi_used_mib']} | "
                f"{g['smi_backend_vs_smi_pct']}% | {g['rank_pid_used_mib']} |"
            )
    if RESULTS.get("steps"):
        lines += [
            "",
            "map_ranks (with the server's pids), last step: " + json.dumps(RESULTS["steps"][-1]["map_ranks"]),
            "map_ranks (titles only), last step: " + json.dumps(RESULTS["steps"][-1]["map_ranks_titles_only"]),
        ]
    for part in ("wait", "stop"):
        if part in RESULTS:
            r = RESULTS[part]
            said = r.get("stderr_tail") or (r.get("stdout", "") + r.get("stderr", "")).strip().splitlines()
            lines += [
                "",
                f"`{r['command']}` -> exit {r['rc']}" + (f" in {r['seconds']} s" if "seconds" in r else ""),
                *[f"    {line}" for line in said[-3:]],
            ]
    lines += ["", "checks: " + ", ".join(f"{k} {'PASS' if c['ok'] else 'FAIL'}" for k, c in RESULTS["checks"].items())]
    return "\n".join(lines) + "\n"


def finish(out: Path, work: Path) -> int:
    try:
        (out / "summary.md").write_text(summary())
    except Exception as exc:  # noqa: BLE001 (results.json still holds everything)
        say(f"summary failed: {exc}")
    if (work / "server.log").exists():
        (out / "server.log").write_bytes((work / "server.log").read_bytes())
    checks = RESULTS["checks"]
    RESULTS["ok"] = bool(checks) and all(c["ok"] for c in checks.values()) and "error" not in RESULTS
    (out / "results.json").write_text(json.dumps(RESULTS, indent=1, default=str))
    failed = [name for name, c in checks.items() if not c["ok"]]
    say(
        f"RESULT ok={RESULTS['ok']} passed={len(checks) - len(failed)}/{len(checks)} failed={failed}"
        + (f" error={RESULTS['error']}" if "error" in RESULTS else "")
    )
    return 0 if RESULTS["ok"] else 1


def main() -> int:
    parser = argparse.ArgumentParser(prog="gpu_multi_check", description=__doc__.splitlines()[0])
    parser.add_argument("out", help="directory for results.json, server.log and screenshots")
    parser.add_argument("--cpu", action="store_true", help="dry run: no GPU, no torch (socket all-reduce)")
    parser.add_argument("--world", type=int, default=2, help="ranks in the --cpu dry run")
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--step-gib", type=float, default=8.0)
    parser.add_argument("--limit", type=float, default=420.0, help="hard limit in seconds for the whole check")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="gpu_multi_"))
    begun = time.monotonic()

    def hard_stop() -> None:
        RESULTS["error"] = f"hard limit of {args.limit:g} s reached"
        cleanup(work)
        finish(out, work)
        os._exit(3)

    timer = threading.Timer(args.limit, hard_stop)
    timer.daemon = True
    timer.start()
    try:
        asyncio.run(run_check(args, out, work))
    except Exception as exc:  # noqa: BLE001 (write what we have)
        import traceback

        RESULTS["error"] = f"{type(exc).__name__}: {exc}"
        RESULTS["traceback"] = traceback.format_exc()
        say(RESULTS["traceback"])
    finally:
        timer.cancel()
        cleanup(work)
    RESULTS["seconds"] = round(time.monotonic() - begun, 1)
    return finish(out, work)


if __name__ == "__main__":
    sys.exit(main())
