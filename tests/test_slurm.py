"""Slurm as the cluster engine, on a real 2-node Slurm cluster (tests/helpers/slurm.py: slurmctld and two
`slurmd -N` on this machine, munge, a private slurm.conf): srun into a running job, Slurm's own file names,
`wait slurm:JOB` and `stop slurm:JOB` on a simulated 2x8 TP16 launch (one srun task per node), here and
through a login node over a real sshd."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.pids import alive
from tests.helpers.processes import Cli, PipeLines, Spawner
from tests.helpers.slurm import NODE_LOG, NODES, SimJob, SlurmCluster, sim_job
from tests.helpers.sshd import Sshd
from tests.test_stop import TREE, server_pids
from tui.core import slurmjob as sj
from tui.sim.rank import ESCAPE_ENV
from tui.sources.local import LocalHost
from tui.sources.slurm import STEP_NAME, SlurmCli, SrunHost


@pytest.fixture(scope="module")
def login(slurm_cluster: SlurmCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sshd]:
    """A login node: a real sshd on 127.0.0.1 whose sessions reach the test cluster (SetEnv SLURM_CONF, as a
    real login node has its /etc/slurm/slurm.conf)."""
    server = Sshd(tmp_path_factory.mktemp("login"))
    with server.config.open("a") as f:
        f.write(f"SetEnv SLURM_CONF={slurm_cluster.conf}\n")
    server.start()
    yield server
    server.stop()


def job_processes(job: str) -> list[int]:
    """Live processes of the job on this machine (SLURM_JOB_ID=J in their environment)."""
    found = []
    needle = f"SLURM_JOB_ID={job}".encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            env = (entry / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if needle in env and alive(int(entry.name)):
            found.append(int(entry.name))
    return found


def our_steps(cluster: SlurmCluster, job: str) -> list[str]:
    """The nodes of the job's steps that are ours (named sglang-tui), one entry per step."""
    text = cluster.run("squeue", "-h", "-s", "-j", job, "-o", "%j %N", check=False).stdout
    return sorted(words[1] for words in (line.split() for line in text.splitlines()) if words[:1] == [STEP_NAME])


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        return b""


def _common(sim: SimJob) -> list[str]:
    return ["--port", str(sim.port), "--remote-python", sys.executable, "--sim-gpus", sim.sim_gpus()]


# ----------------------------------------------------------------------------------------------- srun, files


async def test_one_srun_step_per_node_serves_every_command(cluster: SlurmCluster, tmp_path: Path) -> None:
    job = cluster.sbatch("#!/bin/sh\nsrun -N2 -n2 sleep 300\n", "-N2", "--oversubscribe", cwd=tmp_path)
    cluster.wait_running(job)
    base = LocalHost()
    hosts = [SrunHost(base, job, node, remote_python=sys.executable) for node in NODES]
    try:
        tails = []
        for node, host in zip(NODES, hosts, strict=True):
            where = await host.run("echo $SLURMD_NODENAME ${SLURM_JOB_ID:-none}")
            assert where.stdout.split() == [node.encode(), b"none"]  # on that node, and no job process of it
            tails.append(await host.start("echo up; exec sleep 300"))  # a long-lived command, as a log tail
            assert await tails[-1].read() == b"up\n"
            data = bytes(range(256)) * 512
            fed = await host.run("cat", input=data)  # stdin reaches the command (the GPU probe's script does)
            assert fed.stdout == data
        assert our_steps(cluster, job) == sorted(NODES)  # one step per node, whatever runs in it
    finally:
        for host in hosts:
            await host.close()
    assert our_steps(cluster, job) == []  # closed: no step of ours outlives the hosts


async def test_slurm_names_its_files_as_we_expand_the_patterns(cluster: SlurmCluster, tmp_path: Path) -> None:
    batch = "b_%x_%j_%N_%n_%t_%s_%J_%u_%4j_%%.out"
    step = "s_%x_%j_%N_%n_%t_%s_%J_%u_%3j.out"
    script = f"#!/bin/sh\nsrun -N2 -n2 -o '{step}' true\nsleep 300\n"
    job = cluster.sbatch(script, "-N2", "-J", "pat", "-o", batch, "--oversubscribe", cwd=tmp_path)
    cluster.wait_running(job)
    cli = SlurmCli(LocalHost())
    found = await cli.job(job)
    assert found is not None and found.running
    nodes = await cli.job_nodes(found, hostnames=True)
    assert nodes.nodes == NODES
    expected = {sj.batch_log(found, nodes.hostnames[found.batch_host])}
    expected |= {sj.node_log(step, found, i, nodes.hostnames[n]) for i, n in enumerate(nodes.nodes)}
    deadline = time.monotonic() + 30
    while len(written := {str(p) for p in tmp_path.glob("[bs]_*")}) < 3 and time.monotonic() < deadline:
        time.sleep(0.05)  # the step's files appear once the script reaches its srun
    assert written == expected


# -------------------------------------------------------------------------------------------------- wait


@pytest.mark.parametrize("per_node_logs", [True, False], ids=["per-node-logs", "one-batch-log"])
def test_wait_is_ready_with_tp16(cluster: SlurmCluster, tmp_path: Path, cli: Cli, per_node_logs: bool) -> None:
    sim = sim_job(cluster, tmp_path, per_node_logs=per_node_logs)
    logs = ["--log", NODE_LOG] if per_node_logs else []
    out = cli("wait", f"slurm:{sim.job}", *_common(sim), *logs, "--timeout", "120", "--json", timeout=180)
    assert out.returncode == 0, out.stderr
    final = json.loads(out.stdout.splitlines()[-1])
    assert final["phase"] == "ready" and final["tp_size"] == 16
    assert [(m["name"], m["host"]) for m in final["members"]] == [("node0", NODES[0]), ("node1", NODES[1])]
    assert sorted(final["ranks"]) == sorted(f"TP{i}" for i in range(16))
    assert out.stderr.splitlines()[-1] == "sglang-tui wait: ready: 2 nodes, tp 16"
    if per_node_logs:
        assert f"logs: {NODE_LOG} on each node ({sim.log(0)}, …)" in out.stderr
    else:  # every node's output in the batch script's one file, read on node 0: node 1 is what node 0 shows
        assert f"log: {tmp_path}/slurm-{sim.job}.out (the batch script's output, every node's)" in out.stderr
        assert final["members"][1]["reason"] == "ready (in node0's log)"
    assert our_steps(cluster, sim.job) == []


def test_a_hang_on_node1_is_stalled_and_names_node1(cluster: SlurmCluster, tmp_path: Path, cli: Cli) -> None:
    sim = sim_job(cluster, tmp_path, faults={1: "hang-weights"})
    # Watch from the weights on: a short --stall-after applies to every phase, and a loaded machine can take
    # that long just to start the simulator's Python.
    deadline = time.monotonic() + 60
    while not all(b"Load weight begin" in _read(sim.log(i)) for i in range(2)):
        assert time.monotonic() < deadline, "the simulated nodes never began to load"
        time.sleep(0.05)
    proc = cli.popen("wait", f"slurm:{sim.job}", *_common(sim), "--log", NODE_LOG, "--stall-after", "4",
                     "--timeout", "120", "--json")  # fmt: skip
    lines = PipeLines(proc.stdout)  # type: ignore[arg-type]
    lines.wait_for(lambda line: json.loads(line)["members"][1]["reason"].startswith("stalled"), timeout=120)
    assert proc.wait(30) == 3
    final = json.loads(lines.text(5).splitlines()[-1])
    assert final["phase"] == "loading_weights"
    assert final["members"][1]["reason"].startswith("stalled loading weights")
    assert final["members"][0]["phase"] == "loading_weights"  # node 0 cannot go on: its collective waits for node 1
    assert proc.stderr is not None
    assert proc.stderr.read().splitlines()[-1].startswith("sglang-tui wait: stalled in loading weights: node1")


def test_no_such_job_and_a_bad_target_are_one_line(cluster: SlurmCluster, cli: Cli) -> None:
    for command in ("wait", "stop"):
        none = cli(command, "slurm:999999", "--remote-python", sys.executable)
        assert none.returncode == 6, none.stderr
        assert none.stderr.strip() == f"sglang-tui {command}: no Slurm job 999999: nothing to watch"
    bad = cli("wait", "slurm:abc")
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1 and "slurm:JOBID" in bad.stderr


def test_slurm_colon_takes_the_one_job_that_runs_a_server(cluster: SlurmCluster, tmp_path: Path, cli: Cli) -> None:
    other = cluster.sbatch("#!/bin/sh\nsrun -N1 -n1 sleep 300\n", "-N1", "--oversubscribe", cwd=tmp_path)
    cluster.wait_running(other)
    sim = sim_job(cluster, tmp_path / "sim")  # its script names no SGLang: found by its sglang:: processes
    out = cli("wait", "slurm:", *_common(sim), "--log", NODE_LOG, "--timeout", "120", timeout=180)
    assert out.returncode == 0, out.stderr
    assert out.stderr.splitlines()[-1] == "sglang-tui wait: ready: 2 nodes, tp 16"
    second = sim_job(cluster, tmp_path / "sim2")
    both = cli("wait", "slurm:", "--remote-python", sys.executable, "--timeout", "60")
    assert both.returncode == 2, both.stderr
    assert re.search(rf"2 running Slurm jobs run SGLang: name one \(slurm:{sim.job} .*slurm:{second.job} ", both.stderr)


# -------------------------------------------------------------------------------------------------- stop


def _bystanders(spawn: Spawner, sim: SimJob) -> list[subprocess.Popen[bytes]]:
    """Outside the job, on each node's simulated GPUs: a process titled sglang::scheduler_TP0 holding memory."""
    return [spawn([sys.executable, str(TREE), "bystander", "--gpu-state", str(d)], stdout=subprocess.DEVNULL)
            for d in sim.gpu_dirs()]  # fmt: skip


def _ranks(sim: SimJob, bystanders: list[subprocess.Popen[bytes]]) -> list[int]:
    return [p for d, b in zip(sim.gpu_dirs(), bystanders, strict=True) for p in server_pids(d, b.pid)]


def test_stop_stops_every_node_then_cancels_the_job(
    cluster: SlurmCluster, tmp_path: Path, cli: Cli, spawn: Spawner
) -> None:
    sim = sim_job(cluster, tmp_path)
    ready = cli("wait", f"slurm:{sim.job}", *_common(sim), "--log", NODE_LOG, "--timeout", "120", timeout=180)
    assert ready.returncode == 0, ready.stderr
    bystanders = _bystanders(spawn, sim)
    ranks = _ranks(sim, bystanders)
    assert len(ranks) == 16 and job_processes(sim.job)
    stopped = cli("stop", f"slurm:{sim.job}", *_common(sim), timeout=180)
    assert stopped.returncode == 0, stopped.stderr + stopped.stdout
    assert stopped.stdout.count("GPU memory released") == 2, stopped.stdout
    assert f"node0 ({NODES[0]}, slurm job {sim.job}, " in stopped.stdout and "exited on TERM" in stopped.stdout
    assert stopped.stdout.splitlines()[-1].startswith(f"cancelled slurm job {sim.job}: every node stopped and free")
    assert cluster.state(sim.job) == ""  # gone from squeue
    assert [p for p in ranks if alive(p)] == [] and job_processes(sim.job) == []
    assert all(alive(b.pid) for b in bystanders)  # same title, outside the job: untouched
    again = cli("stop", f"slurm:{sim.job}", *_common(sim))
    assert again.returncode == 6 and again.stdout == "", again.stdout + again.stderr
    assert f"slurm job {sim.job} is CANCELLED" in again.stderr


@pytest.mark.parametrize("setsid", [False, True], ids=["in-its-group", "setsid"])
def test_stop_sweeps_the_schedulers_that_escaped_their_parent(
    cluster: SlurmCluster, tmp_path: Path, cli: Cli, spawn: Spawner, setsid: bool
) -> None:
    """SGLang issue #23627: schedulers whose parent died outlive the job step and keep their memory after
    scancel. Under the orphans fault node 0's schedulers ignore TERM and are re-parented when their main
    process dies of it (node 1's tree then dies with the lost head): the stop holds the job (its batch script
    paused, else the job would end with its server), KILLs them by their group, confirms, then cancels. Ranks
    that also left the group and session (setsid) are still swept: seen as the server's descendants before,
    and in a job step there is no session of the server's to have left."""
    sim = sim_job(cluster, tmp_path, faults={0: "orphans", 1: "orphans"}, env={ESCAPE_ENV: "1"} if setsid else None)
    ready = cli("wait", f"slurm:{sim.job}", *_common(sim), "--log", NODE_LOG, "--timeout", "120", timeout=180)
    assert ready.returncode == 0, ready.stderr
    bystanders = _bystanders(spawn, sim)
    ranks = _ranks(sim, bystanders)
    assert len(ranks) == 16
    assert all((os.getsid(p) == p) is setsid for p in ranks)  # the fault reached the ranks through the job
    stopped = cli("stop", f"slurm:{sim.job}", *_common(sim), "--grace", "2", timeout=180)
    assert stopped.returncode == 0, stopped.stderr + stopped.stdout
    node0 = next(line for line in stopped.stdout.splitlines() if line.startswith("stopped the server on node0"))
    assert "8 still alive after 2 s of TERM; killed; GPU memory released" in node0, node0
    assert cluster.state(sim.job) == "" and job_processes(sim.job) == []
    assert [p for p in ranks if alive(p)] == []
    assert all(alive(b.pid) for b in bystanders)


# ----------------------------------------------------------------------------------------- a login node


def test_the_same_through_a_login_node(cluster: SlurmCluster, login: Sshd, tmp_path: Path, cli: Cli) -> None:
    sim = sim_job(cluster, tmp_path)
    target = f"{login.user}@{login.host}/slurm:{sim.job}"
    out = cli("wait", target, *login.ssh_args(), *_common(sim), "--log", NODE_LOG, "--timeout", "120", "--json",
              timeout=180)  # fmt: skip
    assert out.returncode == 0, out.stderr
    final = json.loads(out.stdout.splitlines()[-1])
    assert final["phase"] == "ready" and final["tp_size"] == 16
    stopped = cli("stop", target, *login.ssh_args(), *_common(sim), timeout=180)
    assert stopped.returncode == 0, stopped.stderr + stopped.stdout
    assert stopped.stdout.count("GPU memory released") == 2
    assert cluster.state(sim.job) == "" and job_processes(sim.job) == []


def test_a_slurmd_that_died_is_found_and_started_again(cluster: SlurmCluster) -> None:
    """The harness's own repair (tests/helpers/slurm.py): a slurmd gone (SIGKILL, as a crash or the OOM killer
    leaves it) is named dead, and heal() starts it again; its node then runs a step."""
    pidfile = cluster.root / f"slurmd-{NODES[0]}.pid"
    os.kill(int(pidfile.read_text()), 9)
    deadline = time.monotonic() + 30
    while not cluster.dead_daemons() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert cluster.dead_daemons() == [f"slurmd -N {NODES[0]}"]
    assert cluster.heal() == [f"slurmd -N {NODES[0]}"]
    assert cluster.dead_daemons() == [] and "slurmd-" in cluster.deaths[-1]
    done = cluster.run("srun", "-w", NODES[0], "-N1", "-n1", "sh", "-c", "echo $SLURMD_NODENAME", timeout=60)
    assert done.stdout.strip() == NODES[0]
