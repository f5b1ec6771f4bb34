"""`sglang-tui fleet --once` and `--json` over real SSH: four simulated servers behind one loopback sshd that allows
only two sessions per connection (so the fleet's one mux agent per host is what makes it work), one of them
failing; the rows, the exit code of the worst, and one SSH connection for the four. Bad targets and inventories
get one line and exit 2."""

from __future__ import annotations

import json
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.processes import Cli, PipeLines, Sims
from tests.helpers.sim import SimServer, wait_ready
from tests.helpers.sshd import Sshd, sshd_available

pytestmark = pytest.mark.skipif(not sshd_available(), reason="OpenSSH sshd is not installed")


@pytest.fixture
def tight_sshd(tmp_path: Path) -> Iterator[Sshd]:
    """A private sshd with MaxSessions 2: four servers' log tails, process watches and GPU probes (three or more
    channels each) could not share one connection without the fleet's agent."""
    server = Sshd(tmp_path / "sshd")
    server.config.write_text(server.config.read_text().replace("MaxSessions 20", "MaxSessions 2"))
    yield server.start()
    server.stop()


def _ssh(sshd: Sshd, sims: list[SimServer]) -> list[str]:
    return ["--ssh-config", str(sshd.ssh_config), "--remote-python", sys.executable, "--no-history",
            "--sim-gpus", ",".join(str(s.gpu_state) for s in sims)]  # fmt: skip


def _latest(lines: list[str]) -> dict[str, dict[str, object]]:
    """Each server's last JSON object so far, by name."""
    out: dict[str, dict[str, object]] = {}
    for line in lines:
        found = json.loads(line)
        out[str(found["name"])] = found
    return out


def test_four_servers_on_one_host_one_failing(tight_sshd: Sshd, sim: Sims, cli: Cli) -> None:
    good = [sim(speed=100.0, shards=8, speculative="none") for _ in range(3)]
    bad = sim(speed=100.0, shards=8, speculative="none", fault="oom-load")
    servers = [*good, bad]
    targets = [f"testhost:{s.port}:{s.log}" for s in servers]
    names = dict(zip(targets, ("good0", "good1", "good2", "bad"), strict=True))

    # --json until the deciding states: three ready, one failed (each server's objects as it moved)
    stream = cli.popen("fleet", "--json", *targets, *_ssh(tight_sshd, servers))
    assert stream.stdout is not None
    lines = PipeLines(stream.stdout)

    def decided(_: str) -> bool:
        latest = _latest(list(lines.lines))
        return len(latest) == 4 and [latest[t]["phase"] for t in targets] == ["ready"] * 3 + ["failed"]

    lines.wait_for(decided, timeout=150)
    stream.send_signal(signal.SIGTERM)
    assert stream.wait(30) == 0
    latest = _latest(lines.lines)
    failed = latest[targets[3]]["error"]
    assert isinstance(failed, dict) and failed["kind"] == "oom", failed
    assert all(latest[t]["tp_size"] == 8 for t in targets[:3])
    phases = [json.loads(line)["phase"] for line in lines.lines if json.loads(line)["name"] == targets[0]]
    assert phases[-1] == "ready" and len(phases) >= 2  # it was seen moving, one object per change
    assert tight_sshd.log.read_text().count("Accepted publickey") == 1  # one connection for four servers

    # --once: the table, the worst row's code (1: a server failed)
    inventory = Path(str(bad.log) + ".toml")
    inventory.write_text("".join(
        f'[[server]]\nname = "{names[t]}"\ntarget = "{t}"\ngroup = "{"canary" if names[t] == "bad" else "prod"}"\n'
        for t in targets
    ))  # fmt: skip
    once = cli("fleet", "--once", "--inventory", str(inventory), *_ssh(tight_sshd, servers), timeout=120)
    assert once.returncode == 1, once.stdout + once.stderr
    rows = once.stdout.splitlines()
    assert rows[0].split()[:3] == ["NAME", "WHERE", "PHASE"]
    by_name = {row.split()[0]: row for row in rows[1:]}
    assert sorted(by_name) == ["bad", "good0", "good1", "good2"]
    for name in ("good0", "good1", "good2"):
        assert by_name[name].split()[1:3] == ["testhost", "ready"], by_name[name]
        assert " 200 " in by_name[name] and "8× " in by_name[name]  # /health and the GPUs its processes hold
    assert by_name["bad"].split()[1:3] == ["testhost", "FAILED"] and "out of memory" in by_name["bad"]

    # the same look as JSON: one object per server, the code the same
    once_json = cli("fleet", "--once", "--json", "--inventory", str(inventory), *_ssh(tight_sshd, servers))
    assert once_json.returncode == 1, once_json.stderr
    objects = [json.loads(line) for line in once_json.stdout.splitlines()]
    assert [(o["name"], o["phase"]) for o in objects] == [
        ("good0", "ready"), ("good1", "ready"), ("good2", "ready"), ("bad", "failed")
    ]  # fmt: skip


def test_all_ready_is_zero(sshd: Sshd, sim: Sims, cli: Cli) -> None:
    server = sim(speed=100.0, shards=8, speculative="none")
    target = f"testhost:{server.port}:{server.log}"
    stream = cli.popen("fleet", "--json", target, *_ssh(sshd, [server]))
    assert stream.stdout is not None
    lines = PipeLines(stream.stdout)
    lines.wait_for(lambda line: json.loads(line)["phase"] == "ready", timeout=150)
    stream.send_signal(signal.SIGTERM)
    assert stream.wait(30) == 0
    ready = cli("fleet", "--once", target, *_ssh(sshd, [server]))
    assert ready.returncode == 0, ready.stdout + ready.stderr
    assert ready.stdout.splitlines()[1].split()[:3] == [target, "testhost", "ready"]


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ('[[server]]\nname = "a"\ntarget = "gpu1:30000"\nprot = 8000\n', "server a: unknown key 'prot' (did you mean"),
        ('[[server]]\nname = "a"\n', "server a has no target"),
        ('[[server]]\ntarget = "gpu1"\nport = "x"\n', "server gpu1: port 'x' is not a TCP port"),
        ('[[server]]\ntarget = "gpu1:1"\n[[server]]\ntarget = "gpu1:1"\n', "two servers are named gpu1:1"),
        ('[[servers]]\ntarget = "gpu1"\n[other]\n', "unknown top-level key 'other'"),
        ("[[server]\n", "not valid TOML"),
        ('[[server]]\ntarget = "gpu1:30000"\nport = 8000\n', "port is given twice"),
    ],
)
def test_a_bad_inventory_is_one_line_naming_the_key(cli: Cli, tmp_path: Path, text: str, words: str) -> None:
    path = tmp_path / "fleet.toml"
    path.write_text(text)
    done = cli("fleet", "--once", "--inventory", str(path))
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and words in lines[0] and "Traceback" not in done.stderr, done.stderr


def test_bad_targets_are_one_line(cli: Cli, tmp_path: Path) -> None:
    for args, words in (
        (("fleet", "--once", "gpu1:30000", "gpu1:30000"), "the server gpu1:30000 is given twice"),
        (("fleet", "--once", "gpu1:http"), "after gpu1: comes a port"),
        (("fleet", "--once"), "fleet: give TARGETs"),
        (("fleet", "--once", "--inventory", str(tmp_path / "missing.toml")), "cannot read it"),
    ):
        done = cli(*args)
        assert done.returncode == 2 and words in done.stderr and "Traceback" not in done.stderr, (args, done.stderr)


def test_a_bare_host_is_every_server_found_running_there(sshd: Sshd, sim: Sims, cli: Cli) -> None:
    servers = [sim(speed=100.0, shards=8, speculative="none") for _ in range(2)]
    deadline = time.monotonic() + 150
    while not all(s.log.exists() and b"fired up" in s.log.read_bytes() for s in servers):
        assert time.monotonic() < deadline, "the simulators never said fired up"
        time.sleep(0.2)
    # other servers of this machine's user may be found too (a shared machine): ours are among the rows
    stream = cli.popen("fleet", "--json", "testhost", "--ssh-config", str(sshd.ssh_config),
                       "--remote-python", sys.executable, "--no-history")  # fmt: skip
    assert stream.stdout is not None
    lines = PipeLines(stream.stdout)
    ours = [f"testhost:{s.port}" for s in servers]

    def ready(_: str) -> bool:
        latest = _latest(list(lines.lines))
        return all(latest.get(name, {}).get("phase") == "ready" for name in ours)

    lines.wait_for(ready, timeout=150)
    stream.send_signal(signal.SIGTERM)
    assert stream.wait(30) == 0
    latest = _latest(lines.lines)
    assert all(latest[name]["tp_size"] == 8 for name in ours), [latest[n] for n in ours]


def test_once_keeps_its_timeout_when_a_host_never_answers(sim: Sims, cli: Cli, fresh_sshd: Sshd) -> None:
    """`fleet --once --timeout` counts from its start: a host whose sshd hangs (SIGSTOP: the TCP connection is
    accepted, no banner ever comes) is a row that cannot connect once the timeout is spent, and the server beside it
    keeps its own verdict (m21: a `--once` whose opening never ended ran past its --timeout). The timeout is the
    whole run (the frozen host never answers): under the connection's own 15 s bound, so that the cut is --once's,
    and long enough for the ready server beside it to be read on a loaded machine (m35: 3 s were spent before its
    first look had come back)."""
    server = wait_ready(sim(speed=200.0, shards=4, speculative="none"))
    fresh_sshd.signal_tree(signal.SIGSTOP)
    try:
        done = cli("fleet", "--once", "--json", "testhost", f"local:{server.port}:{server.log}",
                   "--ssh-config", str(fresh_sshd.ssh_config), "--timeout", "10", "--no-history", timeout=90)  # fmt: skip
    finally:
        fresh_sshd.signal_tree(signal.SIGCONT)
    rows = _latest([line for line in done.stdout.splitlines() if line.startswith("{")])
    assert done.returncode == 4, done.stdout + done.stderr
    assert rows["testhost"]["reason"] == "cannot connect: not reached within --timeout 10 s", rows["testhost"]
    assert rows[f"local:{server.port}:{server.log}"]["phase"] == "ready", rows


def test_a_fleet_ends_on_sigterm_while_its_host_hangs(sim: Sims, cli: Cli, fresh_sshd: Sshd) -> None:
    """SIGTERM ends `fleet --json` (exit 0) even when the host of its rows hangs (its sshd and sessions stopped:
    every close there waits for an answer that never comes): the close is bounded, every row at once (m20: a fleet
    that had not ended 30 s after SIGTERM)."""
    servers = [wait_ready(sim(speed=200.0, shards=4, speculative="none")) for _ in range(3)]
    names = [f"testhost:{s.port}:{s.log}" for s in servers]
    stream = cli.popen("fleet", "--json", *names, "--ssh-config", str(fresh_sshd.ssh_config),
                       "--remote-python", sys.executable, "--no-history")  # fmt: skip
    assert stream.stdout is not None
    lines = PipeLines(stream.stdout)
    lines.wait_for(lambda _: all(_latest(list(lines.lines)).get(n, {}).get("phase") == "ready" for n in names), 150)
    fresh_sshd.signal_tree(signal.SIGSTOP)
    try:
        stream.send_signal(signal.SIGTERM)
        code = stream.wait(60)
    finally:
        fresh_sshd.signal_tree(signal.SIGCONT)
    assert code == 0, lines.text(1)
