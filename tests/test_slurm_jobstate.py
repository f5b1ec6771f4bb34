"""The Slurm job's state as a fact each cycle, on the real 2-node cluster (tests/helpers/slurm.py): `wait
slurm:J` right after `sbatch` waits through the queue (`queued`, Slurm's reason) and then for the server; a job
cancelled under a wait ends it with Slurm's word; a requeued job is followed into its new run."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.helpers.processes import Cli, PipeLines
from tests.helpers.slurm import NODE_LOG, NODES, OWN_LOG, SimJob, SlurmCluster, own_log_job, sim_job
from tests.helpers.sshd import free_port


def _common(sim: SimJob) -> list[str]:
    return ["--port", str(sim.port), "--remote-python", sys.executable, "--sim-gpus", sim.sim_gpus(),
            "--log", NODE_LOG]  # fmt: skip


def _phases(lines: PipeLines) -> list[str]:
    return [json.loads(line)["phase"] for line in lines.text(0).splitlines() if line.startswith("{")]


def test_wait_right_after_sbatch_is_queued_then_ready(cluster: SlurmCluster, tmp_path: Path, cli: Cli) -> None:
    sim = sim_job(cluster, tmp_path, hold=True)  # in the queue until released: JobHeldUser
    assert cluster.state(sim.job) == "PENDING"
    proc = cli.popen("wait", f"slurm:{sim.job}", *_common(sim), "--timeout", "120", "--json")
    lines = PipeLines(proc.stdout)  # type: ignore[arg-type]
    lines.wait_for(lambda line: json.loads(line)["phase"] == "queued", timeout=60)
    queued = json.loads(lines.lines[0])  # the first look: the job in the queue, Slurm's reason
    assert queued["phase"] == "queued" and queued["reason"].startswith("queued: JobHeldUser, "), queued
    assert " in queue" in queued["reason"]
    cluster.run("scontrol", "release", sim.job)
    assert proc.wait(180) == 0, proc.stderr.read() if proc.stderr else ""
    phases = _phases(lines)
    assert phases[0] == "queued" and phases[-1] == "ready", phases
    assert "queued" not in phases[phases.index("ready") :]
    final = json.loads(lines.text(5).splitlines()[-1])
    assert final["tp_size"] == 16 and [m["host"] for m in final["members"]] == list(NODES)
    assert proc.stderr is not None
    err = proc.stderr.read().splitlines()
    assert any(line.startswith("[") and " queued · queued: JobHeldUser, " in line for line in err), err
    assert err[-1] == "sglang-tui wait: ready: 2 nodes, tp 16"


def test_a_job_cancelled_in_the_queue_ends_the_wait(cluster: SlurmCluster, tmp_path: Path, cli: Cli) -> None:
    sim = sim_job(cluster, tmp_path, hold=True)
    proc = cli.popen("wait", f"slurm:{sim.job}", *_common(sim), "--json")  # no --timeout: only Slurm's word ends it
    lines = PipeLines(proc.stdout)  # type: ignore[arg-type]
    lines.wait_for(lambda line: json.loads(line)["phase"] == "queued", timeout=60)
    cluster.run("scancel", sim.job)
    assert proc.wait(60) == 1
    final = json.loads(lines.text(5).splitlines()[-1])
    assert final["phase"] == "failed" and final["error"]["kind"] == "slurm_job"
    assert final["error"]["line"].startswith(f"slurm job {sim.job} CANCELLED")
    assert proc.stderr is not None
    last = proc.stderr.read().splitlines()[-1]
    assert last.startswith(f"sglang-tui wait: failed in the queue (Slurm): slurm job {sim.job} CANCELLED"), last


@pytest.mark.parametrize("per_node_logs", [True, False], ids=["per-node-logs", "one-batch-log"])
def test_scancel_mid_load_ends_the_wait_naming_cancelled(
    cluster: SlurmCluster, tmp_path: Path, cli: Cli, per_node_logs: bool
) -> None:
    sim = sim_job(cluster, tmp_path, faults={0: "hang-weights", 1: "hang-weights"}, per_node_logs=per_node_logs)
    logs = ["--log", NODE_LOG] if per_node_logs else []
    common = ["--port", str(sim.port), "--remote-python", sys.executable, "--sim-gpus", sim.sim_gpus(), *logs]
    proc = cli.popen("wait", f"slurm:{sim.job}", *common, "--json")  # no --timeout: without the job's word, forever
    lines = PipeLines(proc.stdout)  # type: ignore[arg-type]
    lines.wait_for(lambda line: json.loads(line)["phase"] == "loading_weights", timeout=120)
    cluster.run("scancel", sim.job)
    assert proc.wait(120) == 1
    final = json.loads(lines.text(5).splitlines()[-1])
    assert final["phase"] == "failed"
    assert proc.stderr is not None
    last = proc.stderr.read().splitlines()[-1]
    assert last.startswith("sglang-tui wait: ") and "CANCELLED" in last, last


def _requeue_script(root: Path, port: int, dist: int) -> str:
    """Two simulated nodes whose first run hangs loading weights and whose run after a requeue starts cleanly
    (Slurm sets SLURM_RESTART_COUNT in a requeued job)."""
    repo = Path(__file__).resolve().parent.parent
    sim = (
        f"exec env PYTHONPATH={repo} {sys.executable} -m tui simulate --log /dev/stdout --port {port} --tp 16 "
        f"--nnodes 2 --node-rank $SLURM_NODEID --dist-init-addr {NODES[0]}:{dist} "
        f"--gpu-state {root}/gpus-node$SLURM_NODEID --shards 8 --speed 100 --speculative none $F"
    )
    pick = 'if [ "${SLURM_RESTART_COUNT:-0}" = 0 ]; then F="--fault hang-weights"; else F=""; fi; '
    return f"#!/bin/sh\nsrun -N2 -n2 -o '{root}/{NODE_LOG}' sh -c '{pick}{sim}'\n"


def test_a_requeued_job_is_followed_into_its_new_run(cluster: SlurmCluster, tmp_path: Path, cli: Cli) -> None:
    port = free_port()
    job = cluster.sbatch(_requeue_script(tmp_path, port, free_port()), "-N2", "-J", "sgl", "--oversubscribe",
                         "--requeue", cwd=tmp_path)  # fmt: skip
    cluster.wait_running(job)
    sim = SimJob(job, port, tmp_path)
    proc = cli.popen("wait", f"slurm:{job}", *_common(sim), "--timeout", "300", "--json")
    lines = PipeLines(proc.stdout)  # type: ignore[arg-type]
    lines.wait_for(lambda line: json.loads(line)["phase"] == "loading_weights", timeout=120)
    cluster.run("scontrol", "requeue", job)
    lines.wait_for(lambda line: json.loads(line)["phase"] == "queued", timeout=120)
    cluster.run("scontrol", "update", f"JobId={job}", "StartTime=now")  # Slurm holds a requeued job ~2 min
    assert proc.wait(240) == 0, proc.stderr.read() if proc.stderr else ""
    phases = _phases(lines)
    assert phases.index("loading_weights") < phases.index("queued") < len(phases) - 1 and phases[-1] == "ready"
    assert proc.stderr is not None
    err = proc.stderr.read()
    assert f"sglang-tui wait: slurm job {job} was requeued: following it into its new run" in err
    assert err.splitlines()[-1] == "sglang-tui wait: ready: 2 nodes, tp 16"


def test_only_the_jobs_state_can_say_it_was_cancelled(cluster: SlurmCluster, tmp_path: Path, cli: Cli) -> None:
    """wait, and the board's row, on a job whose logs say nothing of the cancel: Slurm's word ends both."""
    sim = own_log_job(cluster, tmp_path, fault="hang-weights")
    common = ["--port", str(sim.port), "--log", OWN_LOG, "--remote-python", sys.executable]
    waiting = cli.popen("wait", f"slurm:{sim.job}", *common, "--json")  # no --timeout
    board = cli.popen("fleet", "--json", f"slurm:{sim.job}", *common, "--no-history")
    waits, rows = PipeLines(waiting.stdout), PipeLines(board.stdout)  # type: ignore[arg-type]
    for lines in (waits, rows):
        lines.wait_for(lambda line: json.loads(line).get("phase") == "loading_weights", timeout=120)
    cluster.run("scancel", sim.job)
    assert waiting.wait(120) == 1
    final = json.loads(waits.text(5).splitlines()[-1])
    assert final["phase"] == "failed" and f"slurm job {sim.job} CANCELLED" in final["reason"], final
    # node 1 may say first what the cancel did to it (node 0's TCPStore gone): its own log's word stays its cause
    assert "slurm_job" in {m["error"]["kind"] for m in final["members"]}, final["members"]
    # the board may first show node 1's own word (its row is live); the job's state, folded the next cycle, is the
    # cause it settles on (m22: a look at the first failed row read node 1's NCCL line)
    cancelled = f"slurm job {sim.job} CANCELLED"
    rows.wait_for(lambda line: cancelled in str(json.loads(line).get("reason")), timeout=120)
    board.terminate()
    board.wait(30)
    row = json.loads([line for line in rows.text(5).splitlines() if line.startswith("{")][-1])
    assert row["phase"] == "failed" and cancelled in str(row["reason"]), row
    assert {m["name"]: m["error"]["kind"] for m in row["members"]}["node0"] == "slurm_job", row["members"]


def test_the_board_row_of_a_job_in_the_queue_is_queued_then_ready(
    cluster: SlurmCluster, tmp_path: Path, cli: Cli
) -> None:
    sim = sim_job(cluster, tmp_path, hold=True)
    board = cli.popen("fleet", "--json", f"slurm:{sim.job}", "--port", str(sim.port), "--log", NODE_LOG,
                      "--remote-python", sys.executable, "--sim-gpus", sim.sim_gpus(), "--no-history")  # fmt: skip
    rows = PipeLines(board.stdout)  # type: ignore[arg-type]
    rows.wait_for(lambda line: json.loads(line).get("phase") == "queued", timeout=60)
    first = json.loads(rows.lines[0])
    assert first["phase"] == "queued" and str(first["reason"]).startswith("queued: JobHeldUser, "), first
    cluster.run("scontrol", "release", sim.job)
    rows.wait_for(lambda line: json.loads(line).get("phase") == "ready", timeout=180)
    board.terminate()
    board.wait(30)
    ready = json.loads([line for line in rows.text(5).splitlines() if line.startswith("{")][-1])
    assert ready["tp_size"] == 16 and [m["host"] for m in ready["members"]] == list(NODES), ready


def test_the_tui_on_a_job_in_the_queue_says_queued_until_it_ends(
    cluster: SlurmCluster, tmp_path: Path, cli: Cli
) -> None:
    """`sglang-tui slurm:J` before the job runs: the queue's lines on the terminal (the TUI opens once it runs);
    cancelled in the queue, it ends with Slurm's word without opening."""
    sim = sim_job(cluster, tmp_path, hold=True)
    tui = cli.popen(f"slurm:{sim.job}", *_common(sim))
    err = PipeLines(tui.stderr)  # type: ignore[arg-type]
    err.wait_for(lambda line: line.startswith("sglang-tui: queued: JobHeldUser, "), timeout=60)
    cluster.run("scancel", sim.job)
    assert tui.wait(60) == 1
    last = err.text(5).splitlines()[-1]
    assert last == f"sglang-tui: failed in the queue (Slurm): slurm job {sim.job} CANCELLED (JobHeldUser)", last


def test_a_job_cancelled_by_sglang_tui_reads_stopped_not_failed(
    cluster: SlurmCluster, tmp_path: Path, cli: Cli
) -> None:
    """`stop` marks the job (its Comment) before its scancel: a wait watching the job says stopped by sglang-tui."""
    import asyncio

    from tui.sources.local import LocalHost
    from tui.sources.slurm import SlurmCli

    sim = sim_job(cluster, tmp_path, hold=True)
    proc = cli.popen("wait", f"slurm:{sim.job}", *_common(sim), "--json")
    lines = PipeLines(proc.stdout)  # type: ignore[arg-type]
    lines.wait_for(lambda line: json.loads(line)["phase"] == "queued", timeout=60)
    asyncio.run(SlurmCli(LocalHost()).mark_stopping(sim.job))  # what stop does before its scancel
    assert cluster.run("squeue", "-h", "-j", sim.job, "-o", "%k").stdout.strip() == "sglang-tui stop"
    cluster.run("scancel", sim.job)
    assert proc.wait(60) == 1
    assert proc.stderr is not None
    last = proc.stderr.read().splitlines()[-1]
    assert last.startswith("sglang-tui wait: stopped by sglang-tui"), last
