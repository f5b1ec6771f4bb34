"""Issue 26 item 16: the deployment TOML, read strictly. A misspelt key fell back to its default silently (`prot`:
port 30000), `port = true` passed as a port, a string bootstrap_port was dropped, two node 0s were taken; each is
now one line naming the key, exit 2, before any host is reached. And a member whose processes cannot be seen
(another uid's) ends `stop` with the code single-host `stop` gives: 5, never 1 with "try --force"."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.crossuid import CANNOT_SEE, SYSTEM_PYTHON
from tests.helpers.processes import Cli
from tests.helpers.sim import ROOT, start_sim, wait_for_log
from tests.helpers.sshd import Sshd, free_port
from tui.commands.deployment_file import parse

if sys.version_info >= (3, 11):
    import tomllib
else:  # the backport, as tui/commands/deployment_file.py reads it there
    import tomli as tomllib

GOOD = '[[member]]\nname = "prefill"\nrole = "prefill"\nhost = "gpu-a"\nport = 30000\nbootstrap_port = 8998\n'

BAD = {
    "misspelt-port": (
        '[[member]]\nname = "a"\nrole = "server"\nhost = "gpu-a"\nprot = 30001\n',
        "member a: unknown key 'prot' (did you mean 'port'?); keys: name, role, host, port, log, bootstrap_port, "
        "node_rank",
    ),
    "port-true": (
        '[[member]]\nname = "a"\nhost = "gpu-a"\nport = true\n',
        "member a: port True is not a TCP port (1-65535)",
    ),
    "string-bootstrap-port": (
        '[[member]]\nname = "p"\nrole = "prefill"\nhost = "gpu-a"\nbootstrap_port = "8998"\n',
        "member p: bootstrap_port '8998' is not a TCP port (1-65535)",
    ),
    "two-node-0s": (
        '[[member]]\nname = "n0"\nrole = "node"\nhost = "a"\nnode_rank = 0\n'
        '[[member]]\nname = "n1"\nrole = "node"\nhost = "b"\nnode_rank = 0\n',
        "member n1: node_rank 0 is n0's too; give each node its own",
    ),
    "bootstrap-port-on-decode": (
        '[[member]]\nname = "d"\nrole = "decode"\nhost = "gpu-a"\nbootstrap_port = 8998\n',
        "member d: bootstrap_port is for prefill members only (this one is decode)",
    ),
    "misspelt-table": ('[[memebr]]\nname = "a"\nhost = "gpu-a"\n', "unknown top-level key 'memebr' (did you mean"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_a_bad_deployment_file_is_one_line_naming_the_key_and_exit_2(tmp_path: Path, cli: Cli, case: str) -> None:
    text, expected = BAD[case]
    path = tmp_path / "deployment.toml"
    path.write_text(text)
    run = cli("wait", "--deployment", path, "--timeout", "30", timeout=60)
    assert run.returncode == 2, (run.returncode, run.stderr)
    assert run.stdout == "" and len(run.stderr.splitlines()) == 1, run.stderr
    assert run.stderr.startswith(f"sglang-tui wait: --deployment {path}: {expected}"), run.stderr


def test_stop_reads_the_file_the_same_way(tmp_path: Path, cli: Cli) -> None:
    path = tmp_path / "deployment.toml"
    path.write_text(BAD["port-true"][0])
    run = cli("stop", "--deployment", path, timeout=60)
    assert run.returncode == 2 and run.stderr == f"sglang-tui stop: --deployment {path}: {BAD['port-true'][1]}\n"


def test_a_good_file_keeps_its_values() -> None:
    [spec] = parse(tomllib.loads(GOOD), "F")
    assert (spec.name, spec.role, spec.host, spec.port, spec.bootstrap_port) == (
        "prefill",
        "prefill",
        "gpu-a",
        30000,
        8998,
    )
    nodes = parse(tomllib.loads('[[member]]\nrole = "node"\nhost = "a"\n[[member]]\nrole = "node"\nhost = "b"\n'))
    assert [s.node_rank for s in nodes] == [0, 1]


def test_stop_of_a_member_that_cannot_be_seen_exits_5(shared_dir: Path, user_sshd: Sshd) -> None:
    """Two members through a sshd that logs in another user: root's simulator on one (its processes cannot be
    read), nothing on the other. Nothing was stopped, and the server may run: 5, as `stop HOST` says."""
    sim = start_sim(shared_dir, speed=20, tp=2, shards=8)
    try:
        wait_for_log(sim, b"server_args")
        path = shared_dir / "deployment.toml"
        path.write_text(
            f'[[member]]\nname = "a"\nhost = "127.0.0.1"\nport = {sim.port}\nlog = "{sim.log}"\n'
            f'[[member]]\nname = "b"\nhost = "127.0.0.1"\nport = {free_port()}\n'
        )
        run = subprocess.run(
            [sys.executable, "-m", "tui", "stop", "--deployment", str(path), *user_sshd.ssh_args(),
             "--remote-python", SYSTEM_PYTHON, "--sim-gpus", f"{sim.gpu_state},{sim.gpu_state}"],
            capture_output=True, text=True, cwd=ROOT, timeout=120,
        )  # fmt: skip
        assert run.returncode == 5, (run.returncode, run.stdout, run.stderr)
        assert f"sglang-tui stop: a (127.0.0.1 port {sim.port}): {CANNOT_SEE}: nothing stopped" in run.stderr
        assert "try again with --force" not in run.stderr and run.stdout == ""
        assert sim.alive()
    finally:
        sim.stop()
