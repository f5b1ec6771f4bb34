"""Issue 26 item 15: a server that listens only on IPv6 loopback (`--host ::1`) was "nothing accepts connections …
may have exited". LocalHost goes to [::1] when only IPv6 listens on the port; the SSH forward's destination
falls back to ::1 when 127.0.0.1 refuses. The simulator listens on ::1 alone; `wait` follows it to ready."""

from __future__ import annotations

import json
import socket
from pathlib import Path

from tests.helpers.processes import Cli, Sims
from tests.helpers.sim import SimServer
from tests.helpers.sshd import Sshd
from tui.sources.local import loopback_for


def ipv6_only(server: SimServer) -> SimServer:
    """The simulator listens on [::1]:PORT and 127.0.0.1:PORT refuses (what makes the case)."""
    log = server.log.read_bytes()
    assert f"Uvicorn running on http://[::1]:{server.port}".encode() in log
    try:
        socket.create_connection(("127.0.0.1", server.port), timeout=5).close()
    except ConnectionRefusedError:
        return server
    raise AssertionError(f"127.0.0.1:{server.port} accepts: the simulator is not IPv6-only")


def wait_ready(cli: Cli, server: SimServer, *target: str) -> list[dict[str, object]]:
    run = cli("wait", *target, "--port", str(server.port), "--log", str(server.log), "--timeout", "60", "--json",
              timeout=90)  # fmt: skip
    assert run.returncode == 0, run.stderr
    states = [json.loads(line) for line in run.stdout.splitlines() if line.strip()]
    assert states[-1]["phase"] == "ready" and "/health answers 200" in str(states[-1]["reason"])
    return states


def test_wait_reaches_ready_on_a_server_listening_only_on_ipv6_loopback(sim: Sims, cli: Cli) -> None:
    server = sim(speed=500.0, tp=2, shards=8, extra=("--host", "::1"))
    wait_ready(cli, server, "local")
    ipv6_only(server)


def test_wait_over_ssh_forwards_to_ipv6_loopback(sim: Sims, cli: Cli, sshd: Sshd) -> None:
    server = sim(speed=500.0, tp=2, shards=8, extra=("--host", "::1"))
    wait_ready(cli, server, "127.0.0.1", *sshd.ssh_args())
    ipv6_only(server)


def _tables(tmp_path: Path, tcp: list[str], tcp6: list[str]) -> str:
    head = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
    for name, rows in (("tcp", tcp), ("tcp6", tcp6)):
        (tmp_path / name).write_text(
            head + "".join(f"   0: {row} 00000000:0000 0A 0 0 0 0 0 0 0 0 1\n" for row in rows)
        )
    return str(tmp_path)


def test_loopback_for_reads_which_family_listens(tmp_path: Path) -> None:
    v6_loopback = "00000000000000000000000001000000:7530"  # [::1]:30000 as /proc/net/tcp6 writes it
    assert loopback_for(30000, _tables(tmp_path, [], [v6_loopback])) == "[::1]"
    assert loopback_for(30000, _tables(tmp_path, ["0100007F:7530"], [v6_loopback])) == "127.0.0.1"  # IPv4 first
    assert loopback_for(30000, _tables(tmp_path, [], ["00000000000000000000000001000000:7531"])) == "127.0.0.1"
    assert loopback_for(30000, str(tmp_path / "no-such-dir")) == "127.0.0.1"
