"""First contact through an ssh config alias on a port other than 22 (issue 23, item 2), over a real sshd.

The refusal names the host and port the alias resolves to and the key's fingerprint as `ssh` prints it, and its
command, pasted into a shell, adds exactly that key to the known_hosts file the connection reads: the second run
connects. Strict host keys throughout: the first run never connects.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.helpers.processes import Cli, Sims
from tests.helpers.sshd import Sshd
from tui.sources.host import HostAuthError
from tui.sources.ssh import SshHost


def _fingerprint(sshd: Sshd) -> str:
    out = subprocess.run(
        ["ssh-keygen", "-l", "-E", "sha256", "-f", f"{sshd.host_key}.pub"], capture_output=True, text=True, check=True
    )
    return out.stdout.split()[1]


def _host_key_line(sshd: Sshd) -> list[str]:
    algorithm, blob = Path(f"{sshd.host_key}.pub").read_text().split()[:2]
    return [f"[127.0.0.1]:{sshd.port}", algorithm, blob]


def _alias(sshd: Sshd, extra: str = "") -> str:
    return (
        f"Host gpu1\n  HostName 127.0.0.1\n  Port {sshd.port}\n  User {sshd.user}\n"
        f"  IdentityFile {sshd.identity}\n{extra}"
    )


def _refusal(cli: Cli, sims: Sims, *args: str, env: dict[str, str | None]) -> tuple[str, list[str]]:
    """The first run's one line (exit 4), and the wait arguments that a second run repeats."""
    server = sims(tp=2, shards=8, speed=500.0)
    argv = ["wait", "gpu1", *args, "--log", str(server.log), "--port", str(server.port), "--timeout", "60"]
    first = cli(*argv, env=env)
    lines = first.stderr.strip().splitlines()
    assert first.returncode == 4 and len(lines) == 1, first.stderr
    return lines[0], argv


def test_alias_in_home_ssh_config_names_its_port_and_the_pasted_command_lets_the_next_run_in(
    sshd: Sshd, tmp_path: Path, cli: Cli, sim: Sims
) -> None:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "config").write_text(_alias(sshd))
    env: dict[str, str | None] = {"HOME": str(home), "SSH_AUTH_SOCK": None}
    line, argv = _refusal(cli, sim, env=env)
    known = home / ".ssh" / "known_hosts"
    assert f"unknown host key for gpu1 (127.0.0.1:{sshd.port}): ED25519 key fingerprint is {_fingerprint(sshd)}" in line
    assert "ssh-keyscan" not in line and "127.0.0.1:22)" not in line and "-p 22 " not in line
    assert not known.exists()  # refused, and nothing written on our own
    subprocess.run(["sh", "-c", line.split("trust it with: ", 1)[1]], check=True, env={"HOME": str(home)})
    assert known.read_text().split() == _host_key_line(sshd)
    second = cli(*argv, env=env)
    assert second.returncode == 0, second.stderr


def test_a_user_known_hosts_file_that_does_not_exist_is_named_and_made_by_the_command(
    sshd: Sshd, tmp_path: Path, cli: Cli, sim: Sims
) -> None:
    known = tmp_path / "not-yet" / "known_hosts"
    config = tmp_path / "ssh_config"
    config.write_text(_alias(sshd, f"  UserKnownHostsFile {known}\n"))
    env: dict[str, str | None] = {"SSH_AUTH_SOCK": None}
    line, argv = _refusal(cli, sim, "--ssh-config", str(config), env=env)
    assert "No such file" not in line
    assert f"{_fingerprint(sshd)}; {known} does not exist yet." in line
    subprocess.run(["sh", "-c", line.split("trust it with: ", 1)[1]], check=True)
    assert known.read_text().split() == _host_key_line(sshd)
    second = cli(*argv, env=env)
    assert second.returncode == 0, second.stderr
    # The line is OpenSSH's own format: ssh itself, strict, takes it too.
    ssh = ["ssh", "-F", str(config), "-o", "StrictHostKeyChecking=yes", "-o", "BatchMode=yes", "gpu1", "true"]
    assert subprocess.run(ssh, capture_output=True, text=True, timeout=30).returncode == 0


async def test_user_known_hosts_file_none_still_refuses_an_unknown_key(
    sshd: Sshd, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # asyncssh reads `UserKnownHostsFile none` as "check no key at all"; the tool never accepts a key silently.
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / ".ssh").mkdir()
    (tmp_path / ".ssh" / "known_hosts").write_text("")  # present: only the `none` itself is in question
    config = tmp_path / "ssh_config"
    config.write_text(_alias(sshd, "  UserKnownHostsFile none\n"))
    host = SshHost("gpu1", ssh_config=str(config), agent=False)
    with pytest.raises(HostAuthError, match=r"^unknown host key for gpu1 \(127\.0\.0\.1:\d+\): ED25519 key"):
        await host.connect()
    await host.close()
