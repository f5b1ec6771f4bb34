"""`sglang-tui wait` end to end: the simulator on this machine, `python -m tui wait` over a real sshd."""

from __future__ import annotations

import json
import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.processes import Cli, PipeLines, Sims, Spawner
from tests.helpers.sim import wait_for_log
from tests.helpers.sshd import Sshd, free_port
from tui.core.names import kind_words
from tui.core.report import JSON_KEYS

FAULT_KINDS = {
    "oom-capture": {"oom"},
    "oom-load": {"oom"},
    "nccl-timeout": {"nccl"},
    "crash": {"other", "exception"},  # a rank died: the parser names what it could
    "port-in-use": {"port_in_use"},
    "warmup-fail": {"exception"},
}


@dataclass
class Outcome:
    code: int
    stdout: str
    stderr: str

    def last_json(self) -> dict[str, object]:
        lines = [line for line in self.stdout.splitlines() if line.strip()]
        assert lines, f"no JSON on stdout; stderr:\n{self.stderr}"
        return json.loads(lines[-1])


def run_wait(cli: Cli, sshd: Sshd | None, *args: str, timeout: float = 90) -> Outcome:
    target = ["127.0.0.1", *sshd.ssh_args()] if sshd is not None else ["local"]
    proc = cli("wait", *target, *args, timeout=timeout)
    return Outcome(proc.returncode, proc.stdout, proc.stderr)


def wait_on_sim(
    sims: Sims, cli: Cli, sshd: Sshd | None, tmp_path: Path, fault: str | None, *extra: str, speed: float = 500.0,
    after: bytes = b"",
) -> Outcome:  # fmt: skip
    sim = sims(tmp_path, fault=fault, speed=speed, tp=2, shards=8)
    try:
        if after:
            wait_for_log(sim, after, timeout=30)
        return run_wait(
            cli, sshd, "--log", str(sim.log), "--port", str(sim.port), "--sim-gpus", str(sim.gpu_state),
            "--timeout", "60", "--json", *extra,
        )  # fmt: skip
    finally:
        sim.stop()


def watch_then_start(
    sims: Sims, cli: Cli, sshd: Sshd | None, tmp_path: Path, *extra: str, **sim_kw: Any
) -> tuple[subprocess.Popen[str], PipeLines, PipeLines]:
    """`wait --json` on an empty log and a free port first, the simulator only once wait watches them: wait
    sees the whole startup whatever the machine's load (started the other way round, a fast simulator can be
    ready before wait has read its log, and then wait is right to say ready from /health alone)."""
    port, log = free_port(), tmp_path / "sim.log"
    log.touch()
    target = ["127.0.0.1", *sshd.ssh_args()] if sshd is not None else ["local"]
    proc = cli.popen("wait", *target, "--log", log, "--port", str(port), "--sim-gpus", tmp_path / "gpus",
                     "--timeout", "60", "--json", *extra)  # fmt: skip
    assert proc.stdout is not None and proc.stderr is not None
    out_lines, err_lines = PipeLines(proc.stdout), PipeLines(proc.stderr)
    err_lines.wait_for(lambda line: "waiting for the first log line" in line)
    sims(tmp_path, port=port, **{"tp": 2, "shards": 8, **sim_kw})
    return proc, out_lines, err_lines


@pytest.fixture(scope="module")
def fault_outcomes(
    sshd: Sshd, tmp_path_factory: pytest.TempPathFactory, module_sim: Sims, module_spawn: Spawner
) -> dict[str, Outcome]:
    """Every fault scenario, run a few at a time (each is mostly waiting on the simulated clock)."""
    cli = Cli(module_spawn)

    def one(fault: str) -> Outcome:
        return wait_on_sim(module_sim, cli, sshd, tmp_path_factory.mktemp(fault), fault)

    with ThreadPoolExecutor(max_workers=len(FAULT_KINDS)) as pool:
        outcomes = dict(zip(FAULT_KINDS, pool.map(one, FAULT_KINDS), strict=True))
    # Alone: with a 2 s stall limit, a machine busy with other scenarios could starve the simulator itself.
    # It starts once the simulator has begun loading, so a slow start of the simulator itself (a busy machine:
    # its rank processes spawning) is not what the 2 s limit measures; the quiet time counts from the log's own
    # lines, not from the attach.
    outcomes["hang-weights"] = wait_on_sim(
        module_sim,
        cli,
        sshd,
        tmp_path_factory.mktemp("hang"),
        "hang-weights",
        "--stall-after",
        "2",
        after=b"Load weight begin",
    )
    return outcomes


def test_ready_over_ssh_exits_0_with_json_lines(sshd: Sshd, tmp_path: Path, cli: Cli, sim: Sims) -> None:
    proc, out_lines, err_lines = watch_then_start(sim, cli, sshd, tmp_path, speed=500.0)
    code = proc.wait(timeout=90)
    out = Outcome(code, out_lines.text(10), err_lines.text(10))
    assert out.code == 0, out.stderr
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    assert len(lines) >= 3  # one per state change
    assert all(tuple(line) == JSON_KEYS for line in lines)
    final = out.last_json()
    assert final["phase"] == "ready"
    assert final["shards"] == {"done": 8, "total": 8}
    assert final["tp_size"] == 2
    phases = [line["phase"] for line in lines]
    assert phases.index("ready") == len(phases) - 1
    assert "ready" in out.stderr.splitlines()[-1]
    assert "Traceback" not in out.stderr


def test_ready_locally_without_ssh(tmp_path: Path, cli: Cli, sim: Sims) -> None:
    out = wait_on_sim(sim, cli, None, tmp_path, None)
    assert out.code == 0, out.stderr
    assert out.last_json()["phase"] == "ready"


@pytest.mark.parametrize("fault", sorted(FAULT_KINDS))
def test_fault_exits_1_with_its_kind(fault_outcomes: dict[str, Outcome], fault: str) -> None:
    out = fault_outcomes[fault]
    assert out.code == 1, out.stderr
    final = out.last_json()
    assert final["phase"] == "failed"
    assert isinstance(final["error"], dict) and final["error"]["kind"] in FAULT_KINDS[fault], final["error"]
    last = out.stderr.splitlines()[-1]
    assert last.startswith("sglang-tui wait: failed") and f"({kind_words(final['error']['kind'])}): " in last, last


def test_hang_in_weights_exits_3_stalled(fault_outcomes: dict[str, Outcome]) -> None:
    out = fault_outcomes["hang-weights"]
    assert out.code == 3, out.stderr
    assert out.last_json()["phase"] == "loading_weights"
    assert "stalled in loading weights" in out.stderr.splitlines()[-1]


def test_timeout_exits_7(sshd: Sshd, tmp_path: Path, cli: Cli) -> None:
    out = run_wait(cli, sshd, "--log", str(tmp_path / "never.log"), "--port", str(free_port()), "--timeout", "1.5")
    assert out.code == 7, out.stderr
    assert "timed out" in out.stderr.splitlines()[-1]


def test_a_directory_as_log_is_said_at_once_not_after_the_timeout(sshd: Sshd, tmp_path: Path, cli: Cli) -> None:
    """QA pass: `wait --log DIR` waited out the whole --timeout (30 min in the README's example) for a path that
    can never become the log; now it ends at the first look, over SSH as locally, with exit 2 and one line."""
    out = run_wait(
        cli, sshd, "--log", str(tmp_path), "--port", str(free_port()), "--timeout", "600", "--json", timeout=60
    )
    assert out.code == 2, out.stderr
    assert out.stderr.splitlines()[-1] == (
        f"sglang-tui wait: log path is a directory, not a file: {tmp_path}; pass the log file inside it"
    )
    assert "Traceback" not in out.stderr and "timed out" not in out.stderr
    assert "log path is a directory" in str(out.last_json()["reason"])


def test_a_stall_after_of_zero_or_less_is_one_line_and_exit_2(tmp_path: Path, cli: Cli) -> None:
    """QA pass: `wait --stall-after -5` was taken (the demo refused it)."""
    for value in ("-5", "0"):
        out = run_wait(cli, None, "--log", str(tmp_path / "x.log"), "--port", str(free_port()), "--stall-after", value,
                       "--timeout", "30")  # fmt: skip
        said = "not 0 or more seconds: '-5'" if value == "-5" else "0 is not above 0 seconds"
        assert out.code == 2 and out.stdout == ""
        assert out.stderr == f"sglang-tui wait: --stall-after: {said} (try sglang-tui wait --help)\n"


def _one_clear_line(out: Outcome) -> str:
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    assert "Traceback" not in out.stderr
    return lines[0]


def test_changed_host_key_exits_4_with_one_line(sshd: Sshd, tmp_path: Path, cli: Cli) -> None:
    wrong = tmp_path / "known_hosts"
    algo, key = (sshd.root / "client_key.pub").read_text().split()[:2]  # some other key, not the host's
    wrong.write_text(f"[127.0.0.1]:{sshd.port} {algo} {key}\n")
    args = [a if a != str(sshd.known_hosts) else str(wrong) for a in sshd.ssh_args()]
    proc = cli("wait", "127.0.0.1", *args, "--log", "/x.log", "--timeout", "20", timeout=60)
    line = _one_clear_line(Outcome(proc.returncode, proc.stdout, proc.stderr))
    assert proc.returncode == 4
    assert "HOST KEY CHANGED" in line


def test_unknown_host_exits_4_with_the_fingerprint(sshd: Sshd, tmp_path: Path, cli: Cli) -> None:
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    args = [a if a != str(sshd.known_hosts) else str(empty) for a in sshd.ssh_args()]
    proc = cli("wait", "127.0.0.1", *args, "--log", "/x.log", "--timeout", "20", timeout=60)
    line = _one_clear_line(Outcome(proc.returncode, proc.stdout, proc.stderr))
    assert proc.returncode == 4
    assert "ED25519 key fingerprint is SHA256:" in line
    assert f"echo '[127.0.0.1]:{sshd.port} ssh-ed25519 " in line and line.endswith(f" >> {empty}")


def test_wrong_key_exits_4(sshd: Sshd, cli: Cli) -> None:
    args = [a if a != str(sshd.identity) else str(sshd.wrong_identity) for a in sshd.ssh_args()]
    proc = cli("wait", "127.0.0.1", *args, "--log", "/x.log", "--timeout", "20", timeout=60)
    line = _one_clear_line(Outcome(proc.returncode, proc.stdout, proc.stderr))
    assert proc.returncode == 4 and "authentication refused" in line


def test_closed_ssh_port_exits_4(cli: Cli) -> None:
    proc = cli("wait", "127.0.0.1", "--ssh-port", str(free_port()), "--timeout", "20", timeout=60)
    line = _one_clear_line(Outcome(proc.returncode, proc.stdout, proc.stderr))
    assert proc.returncode == 4 and "connection refused" in line


def test_sshd_outage_mid_startup_is_ridden_out(fresh_sshd: Sshd, tmp_path: Path, sim: Sims, cli: Cli) -> None:
    proc, out_lines, err_lines = watch_then_start(sim, cli, fresh_sshd, tmp_path, speed=60.0)
    # Connected and reading the log (a JSON line past `starting`), still loading:
    out_lines.wait_for(lambda line: json.loads(line)["phase"] != "starting")
    assert proc.poll() is None, err_lines.text(5)
    fresh_sshd.kill()  # the link dies while the server is still loading
    err_lines.wait_for(lambda line: "link reconnecting" in line)  # the watcher saw the outage …
    fresh_sshd.start()  # … and the link comes back
    proc.wait(timeout=60)
    stdout, stderr = out_lines.text(10), err_lines.text(10)
    out = Outcome(proc.returncode, stdout, stderr)
    assert out.code == 0, stderr
    assert out.last_json()["phase"] == "ready"
    assert "link reconnecting" in stderr  # the outage was seen, and ridden out


def test_unresolvable_host_exits_4(cli: Cli) -> None:
    proc = cli("wait", "no-such-host.invalid", "--ssh-config", "/dev/null", "--timeout", "20", timeout=60)
    line = _one_clear_line(Outcome(proc.returncode, proc.stdout, proc.stderr))
    assert proc.returncode == 4 and "cannot resolve host name" in line
