"""The inventory's own settings per server: its SSH port, user, key, known_hosts and remote Python (a real loopback
sshd reached with none of them on the command line), its launch command (what makes `r` work on the board), and
hints that name the key meant (`ssh-port` is the SSH port, never the HTTP `port`)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from tests.helpers.processes import Cli, Sims
from tests.helpers.sshd import Sshd, sshd_available
from tui.commands.inventory import key_hint, parse
from tui.commands.options import ServerOptions
from tui.core.config import Ssh


def test_each_server_names_its_own_ssh_and_launch() -> None:
    entries = parse({"server": [
        {"name": "a", "target": "gpu1:30000", "ssh_port": 2222, "user": "ops", "identity": "~/k",
         "known_hosts": "/etc/kh", "remote_python": "/opt/py", "launch": "python -m sglang.launch_server",
         "log": "/var/log/a.log"},
        {"name": "b", "target": "gpu2:30000"},
    ]})  # fmt: skip
    a, b = (e.server for e in entries)
    assert a.ssh_port == 2222 and a.user == "ops" and a.known_hosts == "/etc/kh" and a.remote_python == "/opt/py"
    assert a.identity is not None and not a.identity.startswith("~")  # expanded as ssh expands it
    given = Ssh(port=22, user="me", config="/tmp/c")
    assert a.ssh(given) == Ssh(port=2222, user="ops", identity=a.identity, known_hosts="/etc/kh", config="/tmp/c")
    assert b == ServerOptions() and b.ssh(given) == given  # nothing of its own: the command line's


@pytest.mark.parametrize(
    ("key", "meant"),
    [("ssh-port", "ssh_port"), ("sshport", "ssh_port"), ("ssh_prot", "ssh_port"), ("prot", "port"),
     ("usr", "user"), ("identity_file", "identity"), ("knownhosts", "known_hosts")],
)  # fmt: skip
def test_a_misspelt_key_gets_the_key_meant(key: str, meant: str) -> None:
    assert key_hint(key) == f" (did you mean {meant!r}?)"


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ('[[server]]\ntarget = "gpu1:30000"\nssh-port = 22\n', "unknown key 'ssh-port' (did you mean 'ssh_port'?)"),
        ('[[server]]\ntarget = "gpu1:30000"\nssh_port = 0\n', "ssh_port 0 is not a TCP port"),
        ('[[server]]\ntarget = "gpu1:30000"\nuser = 7\n', "user 7 is not text"),
        ('[[server]]\ntarget = "slurm:42"\nlaunch = "x"\n', "launch is for a server sglang-tui may restart"),
    ],
)
def test_a_bad_server_setting_is_one_line(cli: Cli, tmp_path: Path, text: str, words: str) -> None:
    path = tmp_path / "fleet.toml"
    path.write_text(text)
    done = cli("fleet", "--once", "--inventory", str(path))
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and words in lines[0], done.stderr


@pytest.mark.skipif(not sshd_available(), reason="OpenSSH sshd is not installed")
def test_a_server_reached_over_its_own_ssh_settings(sshd: Sshd, sim: Sims, cli: Cli, tmp_path: Path) -> None:
    server = sim(speed=100.0, shards=8, speculative="none")
    inventory = tmp_path / "fleet.toml"
    inventory.write_text(
        f'[[server]]\nname = "own"\ntarget = "{sshd.host}:{server.port}:{server.log}"\nssh_port = {sshd.port}\n'
        f'user = "{sshd.user}"\nidentity = "{sshd.identity}"\nknown_hosts = "{sshd.known_hosts}"\n'
        f'remote_python = "{sys.executable}"\n'
    )
    empty = tmp_path / "ssh_config"
    empty.write_text("")  # nothing from ~/.ssh/config: every SSH setting is the inventory's
    for _ in range(300):  # the simulator says it is up (its own log), then one look must find it ready
        if "The server is fired up" in server.log.read_text(errors="replace"):
            break
        time.sleep(0.5)
    done = cli("fleet", "--once", "--inventory", str(inventory), "--ssh-config", str(empty), "--no-history",
               "--sim-gpus", str(server.gpu_state), timeout=200)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    rows = done.stdout.splitlines()
    assert rows[1].split()[:3] == ["own", sshd.host, "ready"] and " 200 " in rows[1], done.stdout


async def test_a_launch_command_in_the_inventory_makes_restart_work(tmp_path: Path) -> None:
    """The row's control gets the server's own launch command (and cwd): the board offers `r` on it, and only on
    it (the other row has none: terminate and kill alone)."""
    from tui.commands.fleet_board import controls
    from tui.commands.fleet_watch import Fleet
    from tui.commands.options import FleetOptions
    from tui.commands.targets import ServerTarget
    from tui.sources.hostpool import HostPool

    log = str(tmp_path / "a.log")
    opts = FleetOptions(remote_python=sys.executable, servers=(("a", ServerOptions(launch="sleep 60", cwd="/")),))
    fleet = Fleet(opts, HostPool(remote_python=sys.executable))
    try:
        await fleet.open([(ServerTarget("a", "local", 39001, log), "a", ""),
                          (ServerTarget("b", "local", 39002, str(tmp_path / "b.log")), "b", "")])  # fmt: skip
        a, b = fleet.rows
        assert a.control is not None and a.control.relaunch == "sleep 60" and a.control.cwd == "/"
        assert controls(a) == {"restart", "terminate", "kill"} and controls(b) == {"terminate", "kill"}
    finally:
        await fleet.close()
