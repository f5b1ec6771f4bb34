"""`export` on Slurm jobs, on the real 2-node cluster (tests/helpers/slurm.py): a `slurm:J` job beside a plain
server, scraped until the job's row (the fleet board's: tui/commands/export_jobs.py) is ready with its nodes
under `member`; `scancel` turns the row failed with Slurm's word (in /readyz, the probe's line); an srtctl job
(`srt:LOGDIR`, laid out as tests/test_srt_job.py lays one out) is exported with its PD workers as members."""

from __future__ import annotations

import json
import signal
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path

from tests.helpers.processes import Cli, PipeLines, Sims
from tests.helpers.slurm import NODE_LOG, OWN_LOG, SlurmCluster, own_log_job, sim_job
from tests.helpers.sshd import free_port
from tests.test_metrics import samples
from tests.test_slurm import our_steps
from tests.test_srt_job import COMPLETED, MODEL_READY, ZERO_SAID, ZERO_TOKENS, srt_job

Scraped = dict[str, float]


def scrape(port: int) -> Scraped:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        return samples(response.read().decode())


def scrape_until(port: int, condition: Callable[[Scraped], bool], what: str, timeout: float = 180.0) -> Scraped:
    deadline = time.monotonic() + timeout
    found: Scraped = {}
    while not condition(found):
        assert time.monotonic() < deadline, f"never: {what}; last scrape: {sorted(found.items())[:40]}"
        try:
            found = scrape(port)
        except OSError:
            pass
        time.sleep(0.3)
    return found


def readyz(port: int, server: str) -> tuple[int, str, str | None]:
    """(status, body, X-Sglang-Tui-Exit) of /readyz?server=SERVER."""
    url = f"http://127.0.0.1:{port}/readyz?server={urllib.parse.quote(server, safe='')}"
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, response.read().decode(), response.headers["X-Sglang-Tui-Exit"]
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode(), err.headers["X-Sglang-Tui-Exit"]


def test_a_job_beside_a_server_is_ready_then_cancelled_reads_failed_with_slurms_word(
    cluster: SlurmCluster, tmp_path: Path, sim: Sims, cli: Cli
) -> None:
    job = own_log_job(cluster, tmp_path)
    small = sim(speed=100.0, shards=8, speculative="none")
    plain = f"local:{small.port}:{small.log}"
    row = f"slurm:{job.job}"
    port = free_port()
    exporter = cli.popen("export", "--listen", f"127.0.0.1:{port}", row, plain, "--port", str(job.port),
                         "--log", OWN_LOG, "--remote-python", sys.executable, "--no-history")  # fmt: skip
    ready = scrape_until(
        port,
        lambda s: s.get(f'sglang_tui_ready{{server="{row}"}}') == 1 and s.get(f'sglang_tui_ready{{server="{plain}"}}') == 1,
        "the job and the server ready",
    )  # fmt: skip
    # the job's nodes under `member`, the row's whole (the board's combined state) without
    # node 0 serves (its /health); node 1's log ends in its own startup, as `wait slurm:J` shows it
    assert ready[f'sglang_tui_ready{{server="{row}",member="node0"}}'] == 1
    assert ready[f'sglang_tui_health_ok{{server="{row}",member="node0"}}'] == 1
    assert ready[f'sglang_tui_connected{{server="{row}",member="node1"}}'] == 1
    assert ready[f'sglang_tui_phase{{server="{row}",phase="ready"}}'] == 1
    assert not any(key.startswith("sglang_tui_ready{") and "member=" in key and plain in key for key in ready)
    assert readyz(port, row)[0] == 200

    cluster.run("scancel", job.job)
    ended = scrape_until(port, lambda s: s.get(f'sglang_tui_phase{{server="{row}",phase="failed"}}') == 1,
                         "the cancelled job's row failed")  # fmt: skip
    assert ended[f'sglang_tui_ready{{server="{row}"}}'] == 0
    assert ended[f'sglang_tui_ready{{server="{plain}"}}'] == 1  # the plain server is its own row, still ready
    status, said, code = readyz(port, row)
    assert status == 503 and code == "1" and f"slurm job {job.job} CANCELLED" in said, said
    assert ended[f'sglang_tui_failed{{server="{row}",kind="slurm_job"}}'] == 1  # the job's state, not a log line
    exporter.send_signal(signal.SIGTERM)
    assert exporter.wait(60) == 0


def test_a_queued_job_reads_queued_then_opens_its_nodes_in_place(
    cluster: SlurmCluster, tmp_path: Path, cli: Cli
) -> None:
    job = sim_job(cluster, tmp_path, hold=True)  # in the queue until released: JobHeldUser
    row = f"slurm:{job.job}"
    port = free_port()
    exporter = cli.popen("export", "--listen", f"127.0.0.1:{port}", row, "--port", str(job.port), "--log", NODE_LOG,
                         "--remote-python", sys.executable, "--sim-gpus", job.sim_gpus(), "--no-history")  # fmt: skip
    queued = scrape_until(port, lambda s: s.get(f'sglang_tui_phase{{server="{row}",phase="queued"}}') == 1,
                          "the job's row queued")  # fmt: skip
    assert queued[f'sglang_tui_ready{{server="{row}"}}'] == 0
    assert not any("member=" in key for key in queued)  # no nodes before the job runs
    status, said, _ = readyz(port, row)
    assert status == 503 and "queued: JobHeldUser" in said, said
    cluster.run("scontrol", "release", job.job)
    ready = scrape_until(port, lambda s: s.get(f'sglang_tui_ready{{server="{row}"}}') == 1, "the released job ready")
    assert ready[f'sglang_tui_phase{{server="{row}",member="node0",phase="ready"}}'] == 1
    assert f'sglang_tui_connected{{server="{row}",member="node1"}}' in ready
    exporter.send_signal(signal.SIGTERM)
    assert exporter.wait(60) == 0


def test_an_srtctl_job_is_exported_with_its_workers_as_members(cluster: SlurmCluster, tmp_path: Path, cli: Cli) -> None:
    job = srt_job(cluster, tmp_path)
    row = f"srt:{job.log_dir}"
    port = free_port()
    exporter = cli.popen("export", "--listen", f"127.0.0.1:{port}", row, "--remote-python", sys.executable,
                         "--no-history")  # fmt: skip
    found = scrape_until(port, lambda s: s.get(f'sglang_tui_ready{{server="{row}"}}') == 1, "the srtctl job ready")
    members = {key.split('member="')[1].split('"')[0]: value for key, value in found.items()
               if key.startswith(f'sglang_tui_ready{{server="{row}",member=')}  # fmt: skip
    assert members == {"prefill0": 1, "prefill1": 1, "decode0": 1}
    status, said, code = readyz(port, row)
    assert status == 200 and code == "0" and said.strip().endswith("ready: 2P 1D"), said
    assert found[f'sglang_tui_benchmark_disagrees{{server="{row}"}}'] == 0  # no benchmark word: nothing disagrees
    exporter.send_signal(signal.SIGTERM)
    assert exporter.wait(60) == 0
    assert our_steps(cluster, job.job) == []  # export's steps inside the job ended with it


def test_a_benchmark_that_generated_nothing_is_said_by_the_boards_row_and_by_export(
    cluster: SlurmCluster, tmp_path: Path, cli: Cli
) -> None:
    # srtctl's log says its benchmark completed successfully, benchmark.out says it generated 0 tokens: the job
    # watch folds both into the deployment's one state, which the row's JSON, its STATUS cell (the table of
    # `fleet --once`, the board's own cells) and export's metric and /readyz read
    job = srt_job(cluster, tmp_path, said=MODEL_READY + COMPLETED, benchmark=ZERO_TOKENS)
    row = f"srt:{job.log_dir}"
    once = cli("fleet", "--once", "--json", row, "--remote-python", sys.executable, "--no-history", "--timeout",
               "150", timeout=200)  # fmt: skip
    assert once.returncode == 0, once.stderr  # the servers are ready: the word is said beside their verdict
    found = json.loads(once.stdout.splitlines()[-1])
    assert found["phase"] == "ready" and found["reason"] == "ready: 2P 1D", found
    assert found["benchmark"] == {
        "model_ready": "2P 1D", "done": "completed successfully", "generated_tokens": [0], "disagrees": ZERO_SAID,
    }  # fmt: skip
    table = cli("fleet", "--once", row, "--remote-python", sys.executable, "--no-history", "--timeout", "150",
                timeout=200)  # fmt: skip
    assert table.returncode == 0 and "benchmark: 0 generated tokens · ready: 2P 1D" in table.stdout, table.stdout
    port = free_port()
    exporter = cli.popen("export", "--listen", f"127.0.0.1:{port}", row, "--remote-python", sys.executable,
                         "--no-history")  # fmt: skip
    disagrees = f'sglang_tui_benchmark_disagrees{{server="{row}"}}'
    scraped = scrape_until(port, lambda s: s.get(f'sglang_tui_ready{{server="{row}"}}') == 1 and disagrees in s,
                           "the srtctl job ready, its benchmark word read")  # fmt: skip
    assert scraped[disagrees] == 1
    status, said, code = readyz(port, row)  # the servers' verdict decides the probe; the word is said beside it
    assert status == 200 and code == "0" and said.strip().endswith("ready: 2P 1D · benchmark: 0 generated tokens")
    assert not [key for key in scraped if key.startswith("sglang_tui_benchmark_disagrees{") and "member=" in key]
    exporter.send_signal(signal.SIGTERM)
    assert exporter.wait(60) == 0


def test_a_job_that_is_not_there_is_said_and_exported_not_ready(cluster: SlurmCluster, cli: Cli) -> None:
    port = free_port()
    exporter = cli.popen("export", "--listen", f"127.0.0.1:{port}", "slurm:999999", "--no-history")
    err = PipeLines(exporter.stderr)  # type: ignore[arg-type]
    err.wait_for(lambda line: "slurm:999999: no Slurm job 999999" in line, timeout=60)
    found = scrape_until(port, lambda s: 'sglang_tui_ready{server="slurm:999999"}' in s, "the row exported")
    assert found['sglang_tui_ready{server="slurm:999999"}'] == 0
    exporter.send_signal(signal.SIGTERM)
    assert exporter.wait(60) == 0


def test_a_job_target_the_board_refuses_is_one_line_and_exit_2(tmp_path: Path, cli: Cli) -> None:
    (tmp_path / "plain").mkdir()
    done = cli("export", "--listen", "127.0.0.1:0", f"srt:{tmp_path}/plain", "--no-history", timeout=60)
    assert done.returncode == 2 and done.stderr.count("\n") == 2, done.stderr  # the serving line, then why
    assert "names no Slurm job" in done.stderr.splitlines()[-1] and "Traceback" not in done.stderr


def test_a_login_node_that_cannot_be_reached_is_said_and_exported_not_connected(cli: Cli) -> None:
    row = "nologin.invalid/slurm:1"
    port = free_port()
    exporter = cli.popen("export", "--listen", f"127.0.0.1:{port}", row, "--no-history")
    err = PipeLines(exporter.stderr)  # type: ignore[arg-type]
    err.wait_for(lambda line: line.startswith(f"sglang-tui export: {row}: cannot connect"), timeout=60)
    said = next(line for line in err.lines if line.startswith(f"sglang-tui export: {row}: "))
    assert "cannot connect to the login node nologin.invalid" in said, said
    found = scrape_until(port, lambda s: f'sglang_tui_ready{{server="{row}"}}' in s, "the row exported")
    assert found[f'sglang_tui_ready{{server="{row}"}}'] == 0 and found[f'sglang_tui_connected{{server="{row}"}}'] == 0
    exporter.send_signal(signal.SIGTERM)
    assert exporter.wait(60) == 0
