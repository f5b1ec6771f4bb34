"""`srt:LOGDIR` on the real 2-node cluster: a batch script that lays out a job as srtctl does (srt-slurm c88ef73:
`{out}/{job_id}/logs/` with `sweep_{job_id}.log` as the job's StdOut, `config.yaml` beside it, one srun per
worker writing `{node}_{mode}_w{index}.out`; docs/srtctl-layout.md) and runs the simulator as its PD workers:
`wait` counts the roles and is ready, a decode worker hung in capture is stalled naming it, a prefill worker's OOM
is failed naming it, `stop` stops every worker and cancels the job."""

from __future__ import annotations

import json
import re
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.processes import Cli, PipeLines, Sims
from tests.helpers.slurm import NODES, SlurmCluster
from tests.helpers.sshd import free_port
from tests.test_slurm import job_processes

# srtctl's own log lines (its orchestrator logs them into the job's StdOut, sweep_{job_id}.log): srt-slurm's
# src/srtctl/core/health.py and src/srtctl/cli/mixins/benchmark_stage.py; sa-bench's result table in benchmark.out
# (src/srtctl/benchmarks/scripts/sa-bench/benchmark_serving.py). docs/srtctl-layout.md cites them.
MODEL_READY = "INFO srtctl.core.health: Model is ready. Have 2 prefills and 1 decodes.\n"
COMPLETED = "INFO srtctl.cli.mixins.benchmark_stage: Benchmark completed successfully\n"
ZERO_TOKENS = "Total generated tokens:                  0\n"
ZERO_SAID = (
    "benchmark.out reports 0 generated tokens (1 of 1 run(s)), yet srtctl says its benchmark completed "
    "successfully: the servers never served it"
)
WORKERS = (("prefill", 0, NODES[0]), ("prefill", 1, NODES[0]), ("decode", 0, NODES[1]))
RECIPE = """\
name: "sim-pd"
model:
  path: "meta-llama/Llama-3.3-70B-Instruct"
resources:
  gpu_type: "h100"
  prefill_nodes: 1
  decode_nodes: 1
  prefill_workers: 2
  decode_workers: 1
  gpus_per_node: 8
"""


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        return b""


def wait_logged(logs: Iterable[Path], text: bytes, timeout: float = 120) -> None:
    """Until every one of these logs says `text` (any case): a short --stall-after applies to every phase, and a
    loaded machine can take that long to start Python, so a stall test watches once its workers got there."""
    deadline = time.monotonic() + timeout
    while not all(text in _read(log).lower() for log in logs):
        assert time.monotonic() < deadline, f"{text!r} never in {[str(log) for log in logs]}"
        time.sleep(0.05)


def wait_stalled(cli: Cli, job: SrtJob, member: str) -> tuple[dict[str, Any], list[str]]:
    """`wait srt:… --stall-after 4` on a job one of whose members hangs: exit 3, that member's reason stalled;
    the final JSON object and wait's stderr lines."""
    out = cli("wait", f"srt:{job.log_dir}", *job.args(), "--stall-after", "4", "--timeout", "150", "--json",
              timeout=200)  # fmt: skip
    assert out.returncode == 3, out.stderr
    final = json.loads(out.stdout.splitlines()[-1])
    stalled = next(m for m in final["members"] if m["name"] == member)
    assert stalled["reason"].startswith("stalled"), final["members"]
    return final, out.stderr.splitlines()


def board_until_ready(cli: Cli, target: str) -> list[dict[str, Any]]:
    """`fleet --json TARGET`'s objects until its row reads ready (the board then stopped)."""
    board = cli.popen("fleet", "--json", target, "--remote-python", sys.executable, "--no-history")
    rows = PipeLines(board.stdout)  # type: ignore[arg-type]
    try:
        rows.wait_for(lambda line: line.startswith("{") and json.loads(line).get("phase") == "ready", timeout=120)
    finally:
        board.terminate()
        board.wait(60)
    return [json.loads(line) for line in rows.text(5).splitlines() if line.startswith("{")]


@dataclass
class SrtJob:
    job: str
    log_dir: Path
    gpus: list[Path]

    def args(self) -> list[str]:
        return ["--remote-python", sys.executable, "--sim-gpus", ",".join(map(str, self.gpus))]


def srt_job(
    cluster: SlurmCluster,
    root: Path,
    faults: Mapping[str, str] | None = None,
    benchmark: str = "",
    late: Mapping[str, float] | None = None,
    tp: Mapping[str, int] | None = None,
    said: str = "",
    router: bool = False,
    layout: Sequence[tuple[str, int, str, int, int]] | None = None,
    recipe: str = RECIPE,
) -> SrtJob:
    """sbatch (held until its log directory exists, as srtctl makes it) a 2-node job laid out as srtctl lays one
    out; returns once it runs. `faults`: worker name (prefill1, decode0) -> --fault KIND. `said`: srtctl's own lines
    in the job's StdOut (said as the workers start: this orchestrator says them whatever the workers do);
    `benchmark`: benchmark.out's text. `late`: worker name -> seconds its step waits before its Python starts (its
    log is there, empty, meanwhile: srun makes the file at the step's start, and a real worker's container and
    imports take that long before its first line). `tp`: worker name -> its --tp (else 2). `router`: a simulated
    sglang-router in front of them, on the first node, as srtctl's frontend starts one (`{node}_router_0.out`).
    `layout`: (mode, index, node, node_rank, nnodes) per worker log, a worker on several nodes one srun per node
    with `--nnodes`/`--node-rank`/`--dist-init-addr` and `--port 0` off its node 0 (srt-slurm's
    src/srtctl/backends/sglang.py build_worker_command, src/srtctl/core/topology.py endpoints_to_processes);
    its members are then `prefill0`, `prefill0.node1`, … (faults, late and the GPU directories by those names)."""
    repo = Path(__file__).resolve().parent.parent
    steps = []
    gpus = []
    urls: list[str] = []
    ports: dict[tuple[str, int], tuple[int, int, int]] = {}  # a worker's HTTP, bootstrap and dist-init ports
    for mode, index, node, rank, nnodes in layout or [(m, i, n, 0, 1) for m, i, n in WORKERS]:
        worker = f"{mode}{index}"
        name = worker if rank == 0 else f"{worker}.node{rank}"
        gpu = root / f"gpus-{name}"
        gpus.append(gpu)
        fault = f" --fault {faults[name]}" if faults and name in faults else ""
        wait = f"sleep {late[name]:g}; exec " if late and name in late else "exec "
        port, bootstrap, dist = ports.setdefault((mode, index), (free_port(), free_port(), free_port()))
        if rank == 0:
            urls.append(f"--{mode} http://127.0.0.1:{port}" + (f"@{bootstrap}" if mode == "prefill" else ""))
        multi = f" --nnodes {nnodes} --node-rank {rank} --dist-init-addr 127.0.0.1:{dist}" if nnodes > 1 else ""
        steps.append(
            f'srun -N1 -n1 --overlap -w {node} --output "$L/{node}_{mode}_w{index}.out" sh -c "{wait}{sys.executable} -m tui '
            f"simulate --log /dev/stdout --port {port if rank == 0 else 0} --tp {(tp or {}).get(worker, 2 * nnodes)} "
            f"--disaggregation-mode {mode} --disaggregation-bootstrap-port {bootstrap} --gpu-state {gpu} --shards 4 "
            f'--speed 100 --speculative none{multi}{fault}" &'
        )
    if router:  # srt-slurm's src/srtctl/frontends/sglang.py: one srun per router, `--output {node}_router_{idx}.out`
        steps.append(
            f'srun -N1 -n1 --overlap -w {NODES[0]} --output "$L/{NODES[0]}_router_0.out" sh -c "exec {sys.executable} '
            f'-m tui simulate --router {" ".join(urls)} --port {free_port()} --log /dev/stdout" &'
        )
    script = (
        f"#!/bin/sh\nexport PYTHONPATH={repo}\nL={root}/$SLURM_JOB_ID/logs\n"
        f"cat > {root}/$SLURM_JOB_ID/config.yaml <<'EOF'\n{recipe}EOF\n"
        'echo "Prefill worker 0 leader: '
        + NODES[0]
        + ' (127.0.0.1)"\n'
        + "\n".join(steps)
        + "\n"
        + (f"cat <<'EOF'\n{said}EOF\n" if said else "")
        + (f"cat > \"$L/benchmark.out\" <<'EOF'\n{benchmark}EOF\n" if benchmark else "")
        + "wait\n"
    )
    job = cluster.sbatch(script, "-N2", "-J", "sim-pd", "--oversubscribe", "--hold",
                         "-o", f"{root}/%j/logs/sweep_%j.log", cwd=root)  # fmt: skip
    log_dir = root / job / "logs"
    log_dir.mkdir(parents=True)
    cluster.run("scontrol", "release", job)
    cluster.wait_running(job)
    return SrtJob(job, log_dir, gpus)


def test_wait_counts_the_roles_and_is_ready_then_stop_cancels(cluster: SlurmCluster, tmp_path: Path, cli: Cli) -> None:
    job = srt_job(cluster, tmp_path, said=MODEL_READY + COMPLETED, benchmark=ZERO_TOKENS)
    target = f"srt:{job.log_dir}"
    out = cli("wait", target, *job.args(), "--timeout", "120", "--json", timeout=180)
    assert out.returncode == 0, out.stderr
    final = json.loads(out.stdout.splitlines()[-1])
    assert final["phase"] == "ready"
    assert [(m["name"], m["role"], m["host"]) for m in final["members"]] == [
        ("prefill0", "prefill", NODES[0]), ("prefill1", "prefill", NODES[0]), ("decode0", "decode", NODES[1])
    ]  # fmt: skip
    assert f"sglang-tui wait: srtctl job {job.job}: 2P 1D (prefill0 on {NODES[0]}:" in out.stderr, out.stderr
    assert out.stderr.splitlines()[-2:] == ["sglang-tui wait: ready: 2P 1D", f"sglang-tui wait: {ZERO_SAID}"]
    assert final["benchmark"]["disagrees"] == ZERO_SAID  # the line and the JSON read the one fact
    # the job by its id: its StdOut is srtctl's sweep log, so its workers are the members
    by_id = cli("wait", f"slurm:{job.job}", *job.args(), "--timeout", "120", timeout=180)
    assert by_id.returncode == 0, by_id.stderr
    assert by_id.stderr.splitlines()[-2] == "sglang-tui wait: ready: 2P 1D", by_id.stderr
    # a board row: the job, its workers as the row's members
    board = cli.popen("fleet", "--json", target, "--remote-python", sys.executable, "--no-history")
    rows = PipeLines(board.stdout)  # type: ignore[arg-type]
    rows.wait_for(lambda line: json.loads(line).get("phase") == "ready", timeout=120)
    board.terminate()
    board.wait(60)
    row = json.loads([line for line in rows.text(5).splitlines() if line.startswith("{")][-1])
    assert [m["name"] for m in row["members"]] == ["prefill0", "prefill1", "decode0"] and row[
        "reason"
    ] == "ready: 2P 1D"
    stopped = cli("stop", target, *job.args(), "--grace", "5", timeout=180)
    assert stopped.returncode == 0, stopped.stderr + stopped.stdout
    assert stopped.stdout.count("GPU memory released") == 3, stopped.stdout
    assert stopped.stdout.splitlines()[-1].startswith(f"cancelled slurm job {job.job}: ")
    assert cluster.state(job.job) == "" and job_processes(job.job) == []


def test_a_decode_worker_hung_in_capture_is_stalled_naming_it_and_dump_names_its_odd_rank(
    cluster: SlurmCluster, tmp_path: Path, cli: Cli
) -> None:
    # hang-rank: decode0's TP3 blocks in a collective of its own during capture, the others wait at the next barrier
    # (TP3 of its four: an odd one out needs a majority to be odd against)
    job = srt_job(cluster, tmp_path, {"decode0": "hang-rank"}, said=MODEL_READY, tp={"decode0": 4})
    # watch once every worker is in its capture (the prefills then wait in their PD warmup for the decode worker):
    # a short --stall-after applies to every phase, and a loaded machine can take that long to start Python
    logs = {name: job.log_dir / f"{node}_{mode}_w{index}.out" for mode, index, node in WORKERS
            for name in [f"{mode}{index}"]}  # fmt: skip
    wait_logged(logs.values(), b"cuda graph begin")
    _, stderr = wait_stalled(cli, job, "decode0")
    last, said = stderr[-2:]
    assert "decode0 stalled" in last, stderr
    # the benchmark's word against the servers': it says ready while decode0's own log says it never got there
    assert (
        said.startswith(
            "sglang-tui wait: srtctl's log says the model is ready (2P 1D), but the workers' own logs say: stalled"
        )
        and "decode0 stalled" in said
    ), said
    # the stalled worker's ranks, dumped inside the job on its node: the odd one named
    target = f"srt:{job.log_dir}"
    dumped = cli("dump", target, "--member", "decode0", "--remote-python", sys.executable, "--json",
                 "--out", str(tmp_path / "decode0.txt"), timeout=180)  # fmt: skip
    assert dumped.returncode == 0, dumped.stderr
    found = json.loads(dumped.stdout)
    assert {"TP0", "TP1", "TP2", "TP3"} <= set(found["ranks"]) and found["odd"] == ["TP3"], found
    assert "sglang-tui dump: decode0: " in dumped.stderr and "TP3" in dumped.stderr, dumped.stderr
    assert "all_reduce" in (tmp_path / "decode0.txt").read_text()  # TP3's own frame, where it is stuck
    # which member: one line, exit 2
    unnamed = cli("dump", target, "--remote-python", sys.executable)
    assert unnamed.returncode == 2 and "name one with --member (prefill0, prefill1, decode0)" in unnamed.stderr
    wrong = cli("dump", target, "--member", "decode7", "--remote-python", sys.executable)
    assert wrong.returncode == 2 and wrong.stderr.count("\n") == 1 and "no member decode7" in wrong.stderr


def test_the_frontend_is_the_router_member_and_ready_waits_for_it_to_route(
    cluster: SlurmCluster, tmp_path: Path, cli: Cli
) -> None:
    # srtctl's sglang-router (its log `{node}_router_0.out`) is the deployment's router member: ready once the
    # router's /workers says a healthy prefill and decode worker (the deployment's own rule, as --deployment has it)
    job = srt_job(cluster, tmp_path, router=True)
    out = cli("wait", f"srt:{job.log_dir}", *job.args(), "--timeout", "150", "--json", timeout=200)
    assert out.returncode == 0, out.stderr
    final = json.loads(out.stdout.splitlines()[-1])
    assert [(m["name"], m["role"], m["host"], m["phase"]) for m in final["members"]][-1] == (
        "router0",
        "router",
        NODES[0],
        "ready",
    ), final["members"]
    assert f"router0 on {NODES[0]}:" in out.stderr, out.stderr
    # ready needs a healthy prefill and decode worker in the router's /workers: of 2P 1D, at least 2 of 3 (m57: the
    # router had not yet checked the third when the rule held, and the wait rightly ended at "2/3")
    routed = re.search(r"router0 up, (\d)/3 workers healthy$", out.stderr.splitlines()[-1])
    assert routed is not None and int(routed[1]) >= 2, out.stderr
    # stop: the router is a member, stopped with the workers; nothing else runs, so the job is cancelled
    stopped = cli("stop", f"srt:{job.log_dir}", *job.args(), "--grace", "5", timeout=180)
    assert stopped.returncode == 0, stopped.stderr + stopped.stdout
    assert cluster.state(job.job) == "" and job_processes(job.job) == [], stopped.stdout


def test_a_prefill_workers_oom_is_failed_naming_it(cluster: SlurmCluster, tmp_path: Path, cli: Cli) -> None:
    job = srt_job(cluster, tmp_path, {"prefill1": "oom-load"})
    out = cli("wait", f"srt:{job.log_dir}", *job.args(), "--timeout", "150", "--json", timeout=200)
    assert out.returncode == 1, out.stderr
    final = json.loads(out.stdout.splitlines()[-1])
    prefill1 = next(m for m in final["members"] if m["name"] == "prefill1")
    # the deployment's verdict stands as folded: the scheduler's exception line may come before its OOM line
    assert prefill1["phase"] == "failed" and prefill1["error"]["kind"] in ("oom", "exception"), final["members"]
    assert out.stderr.splitlines()[-1].startswith("sglang-tui wait: prefill1 failed in loading weights ("), out.stderr


def test_the_board_takes_a_late_workers_port_from_its_log_never_reading_it_exited(
    cluster: SlurmCluster, tmp_path: Path, cli: Cli
) -> None:
    # prefill1's log is there and empty when the board opens (its Python starts 5 s late): the row waits for it to
    # name its port, as `wait` does, instead of watching it on srtctl's allocated port (issue 36's flake)
    job = srt_job(cluster, tmp_path, late={"prefill1": 5})
    objects = board_until_ready(cli, f"srt:{job.log_dir}")
    assert objects[-1]["reason"] == "ready: 2P 1D", objects[-1]
    assert [m["name"] for m in objects[-1]["members"]] == ["prefill0", "prefill1", "decode0"]
    assert not [o for o in objects if o.get("phase") == "failed"], objects  # never read exited on its way


def test_a_bad_or_missing_directory_is_one_line(cluster: SlurmCluster, tmp_path: Path, cli: Cli) -> None:
    missing = cli("wait", f"srt:{tmp_path}/nope/1/logs", "--remote-python", sys.executable)
    assert missing.returncode == 6 and missing.stderr.count("\n") == 1, missing.stderr
    assert "no srtctl log directory" in missing.stderr
    (tmp_path / "plain").mkdir()
    nameless = cli("wait", f"srt:{tmp_path}/plain", "--remote-python", sys.executable)
    assert nameless.returncode == 2 and "names no Slurm job" in nameless.stderr, nameless.stderr


def test_the_board_with_two_srtctl_jobs_and_four_plain_servers(
    cluster: SlurmCluster, tmp_path: Path, cli: Cli, sim: Sims
) -> None:
    """Issue 36's board: two srtctl jobs (one ready, one whose prefill1 ran out of memory) beside four plain servers,
    one `fleet --once --json` look: each job one row with its workers counted and its verdict (the failed one names
    its worker), each plain server its own row, and the exit code of the worst row (1: a failure settled)."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    ready = srt_job(cluster, tmp_path / "a", said=MODEL_READY)
    failing = srt_job(cluster, tmp_path / "b", {"prefill1": "oom-load"})
    plain = [sim(speed=100.0, shards=4, speculative="none") for _ in range(4)]
    targets = [f"srt:{ready.log_dir}", f"srt:{failing.log_dir}", *(f"local:{s.port}:{s.log}" for s in plain)]
    out = cli("fleet", "--once", "--json", *targets, "--remote-python", sys.executable, "--no-history",
              "--timeout", "150", timeout=240)  # fmt: skip
    assert out.returncode == 1, out.stdout + out.stderr
    rows = {o["name"]: o for o in (json.loads(line) for line in out.stdout.splitlines() if line.startswith("{"))}
    assert sorted(rows) == sorted(targets), sorted(rows)
    good, bad = rows[targets[0]], rows[targets[1]]
    assert good["phase"] == "ready" and good["reason"] == "ready: 2P 1D", good
    assert [m["name"] for m in good["members"]] == ["prefill0", "prefill1", "decode0"]
    assert bad["phase"] == "failed" and bad["reason"].startswith("prefill1 failed in loading weights ("), bad
    assert [rows[t]["phase"] for t in targets[2:]] == ["ready"] * 4, [rows[t]["reason"] for t in targets[2:]]


@pytest.mark.screenshots
async def test_the_board_with_two_srtctl_jobs_and_four_plain_servers_screenshot(
    cluster: SlurmCluster, tmp_path: Path, sim: Sims
) -> None:
    """screenshots/fleet_srt_{size}.svg (-m screenshots: it rewrites tracked files): two srtctl jobs (one ready, one
    whose prefill1 ran out of memory) beside four plain servers, once both jobs have settled, at 120×40 and 200×50.
    the board of the test above."""
    from tests.test_screenshots import SCREENSHOTS, portable_fonts
    from tui.commands.fleet_board import board_app
    from tui.commands.fleet_watch import Fleet
    from tui.commands.options import FleetOptions
    from tui.commands.targets import fleet_target
    from tui.core.state import Phase
    from tui.sources.hostpool import HostPool

    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    ready = srt_job(cluster, tmp_path / "a", said=MODEL_READY)
    failing = srt_job(cluster, tmp_path / "b", {"prefill1": "oom-load"})
    plain = [sim(speed=100.0, shards=4, speculative="none") for _ in range(4)]
    rows = [
        (fleet_target(f"srt:{ready.log_dir}"), "pd-a", "srtctl"),
        (fleet_target(f"srt:{failing.log_dir}"), "pd-b", "srtctl"),
    ]
    rows += [(fleet_target(f"local:{s.port}:{s.log}"), f"chat-{i}", "plain") for i, s in enumerate(plain)]
    args = FleetOptions(remote_python=sys.executable)
    fleet = Fleet(args, HostPool(remote_python=sys.executable))
    await fleet.open(rows)
    fleet.start()
    app = board_app(args, fleet)
    settled = {Phase.READY, Phase.SERVING, Phase.FAILED}
    try:
        async with app.run_test(size=(200, 50)) as pilot:
            for _ in range(3600):
                if all(e.state.phase in settled for e in fleet.entries):
                    break
                await pilot.pause(0.05)
            assert [e.state.phase for e in fleet.entries].count(Phase.FAILED) == 1, [
                e.state.phase for e in fleet.entries
            ]
            for width, height in ((120, 40), (200, 50)):
                await pilot.resize_terminal(width, height)
                await pilot.pause(0.5)
                path = Path(app.save_screenshot(filename=f"fleet_srt_{width}x{height}.svg", path=str(SCREENSHOTS)))
                path.write_text(portable_fonts(path.read_text()))
                text = path.read_text().replace("&#160;", " ")
                assert "2/2P 1/1D" in text and "1/2P 1/1D" in text, path  # the PHASE cells
                assert width < 200 or "prefill1 failed" in text, path  # STATUS, cut under 200 columns
    finally:
        await fleet.close()
