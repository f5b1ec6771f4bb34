"""LocalHost and SshHost against real processes and a real OpenSSH sshd on loopback."""

from __future__ import annotations

import asyncio
import os
import subprocess
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.helpers.processes import Spawner
from tests.helpers.sshd import Sshd, free_port, ssh_host
from tui.core.events import ConnectionState
from tui.sources.host import Host, HostAuthError, HostUnreachable
from tui.sources.local import LocalHost
from tui.sources.ssh import SshHost

TEN_MB = 10 * 1024 * 1024


@pytest.fixture(params=["local", "ssh"])
async def host(request: pytest.FixtureRequest, spawn: Spawner) -> AsyncIterator[Host]:
    if request.param == "local":
        h: Host = LocalHost()
    else:
        h = ssh_host(request.getfixturevalue("sshd"))
    await h.connect()
    yield h
    await h.close()


async def test_run_returns_bytes_status_and_stderr(host: Host) -> None:
    result = await host.run("printf 'a\\377\\376b'; printf 'oops\\n' >&2; exit 7")
    assert result.returncode == 7
    assert result.stdout == b"a\xff\xfeb"
    assert result.stderr == b"oops\n"


async def test_remote_shell_is_sh_and_input_reaches_stdin(host: Host) -> None:
    result = await host.run('read x; echo "got $x"; echo ${0##*/}', input=b"hello\n")
    assert result.stdout.split(b"\n")[:2] == [b"got hello", b"sh"]


async def test_stream_invalid_utf8_and_a_10mb_line(host: Host) -> None:
    proc = await host.start(f"printf '\\377\\300start\\n'; head -c {TEN_MB} /dev/zero | tr '\\0' x; echo; echo end")
    data = b"".join([chunk async for chunk in proc.chunks()])
    assert await proc.wait() == 0
    await proc.close()
    lines = data.split(b"\n")
    assert lines[0] == b"\xff\xc0start"
    assert lines[1] == b"x" * TEN_MB
    assert lines[2] == b"end"
    # The link survived the invalid bytes: the next command still runs.
    assert (await host.run("echo still-here")).stdout == b"still-here\n"


async def test_start_sends_input_then_eof(host: Host) -> None:
    proc = await host.start("wc -c", input=b"x" * 1000)
    out = b"".join([chunk async for chunk in proc.chunks()])
    assert out.strip() == b"1000"
    await proc.close()


async def test_run_timeout_raises(host: Host) -> None:
    with pytest.raises(TimeoutError):
        await host.run("sleep 5", timeout=0.3)


async def test_closing_a_process_leaves_nothing_running(host: Host, tmp_path: Path) -> None:
    marker = f"h4-marker-{uuid.uuid4().hex}"
    # The shape LogTail uses: a command that watches its stdin and exits when the channel goes.
    proc = await host.start(
        f"exec 3<&0; sleep 300 & t=$!; {{ cat <&3 >/dev/null; kill $t; }} & exec 3<&-; wait $t # {marker}"
    )
    await asyncio.sleep(0.3)
    await proc.close()
    for _ in range(50):
        ps = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True).stdout
        if not ps.strip():
            break
        await asyncio.sleep(0.1)
    assert ps.strip() == "", f"left running: {ps}"


async def test_http_base_url_reaches_a_port_on_the_host(host: Host) -> None:
    server = await asyncio.start_server(_answer_http, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        base = await host.http_base_url(port)
        assert base.startswith("http://127.0.0.1:")
        local_port = base.rpartition(":")[2]
        reader, writer = await asyncio.open_connection("127.0.0.1", int(local_port))
        writer.write(b"GET / HTTP/1.0\r\n\r\n")
        reply = await reader.read()
        writer.close()
        assert reply.startswith(b"HTTP/1.0 200 OK")
    finally:
        server.close()


async def _answer_http(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    await reader.readuntil(b"\r\n\r\n")
    writer.write(b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok")
    await writer.drain()
    writer.close()


async def test_ssh_config_alias_is_honoured(sshd: Sshd) -> None:
    h = SshHost("testhost", ssh_config=str(sshd.ssh_config), agent=False)
    await h.connect()
    try:
        assert (await h.run("echo via-alias")).stdout == b"via-alias\n"
    finally:
        await h.close()


async def test_channels_are_budgeted(sshd: Sshd) -> None:
    h = ssh_host(sshd, max_sessions=3)
    await h.connect()
    try:
        procs = [await h.start("cat") for _ in range(3)]
        with pytest.raises(HostUnreachable, match="channels busy"):
            await h.run("echo no-slot", timeout=0.5)
        await procs[0].close()
        assert (await h.run("echo slot-free", timeout=10)).stdout == b"slot-free\n"
        for proc in procs[1:]:
            await proc.close()
    finally:
        await h.close()


# ------------------------------------------------------------------------------------------ refusals


async def _refused(h: SshHost) -> tuple[str, list[ConnectionState]]:
    states: list[ConnectionState] = []
    h.on_connection(states.append)
    with pytest.raises(HostAuthError) as err:
        await h.connect()
    # Never retried: a second connect() fails at once with the same error, and no reconnect starts.
    with pytest.raises(HostAuthError):
        await h.connect()
    await asyncio.sleep(0.8)
    assert [s.state for s in states] == ["connecting", "failed"]
    message = str(err.value)
    assert "\n" not in message
    return message, states


async def test_changed_host_key_is_refused_loudly(sshd: Sshd, tmp_path: Path) -> None:
    other = tmp_path / "other_key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True)
    algo, key = (tmp_path / "other_key.pub").read_text().split()[:2]
    known = tmp_path / "known_hosts"
    known.write_text(f"[127.0.0.1]:{sshd.port} {algo} {key}\n")
    message, _ = await _refused(ssh_host(sshd, known_hosts=str(known)))
    assert "HOST KEY CHANGED" in message
    assert "SHA256:" in message
    assert f"ssh-keygen -R '[127.0.0.1]:{sshd.port}'" in message


async def test_unknown_host_shows_fingerprint_and_the_command_to_trust_it(sshd: Sshd, tmp_path: Path) -> None:
    known = tmp_path / "empty_known_hosts"
    known.write_text("")
    message, _ = await _refused(ssh_host(sshd, known_hosts=str(known)))
    expected_fp = subprocess.run(
        ["ssh-keygen", "-l", "-E", "sha256", "-f", str(sshd.host_key) + ".pub"], capture_output=True, text=True
    ).stdout.split()[1]
    assert f"unknown host key for 127.0.0.1:{sshd.port}: ED25519 key fingerprint is {expected_fp}." in message
    # Following the advice works: the pasted command adds that key, and it lets us in.
    command = message.split("trust it with: ", 1)[1]
    subprocess.run(["sh", "-c", command], check=True)
    assert known.read_text().split() == [
        f"[127.0.0.1]:{sshd.port}",
        *(sshd.host_key.with_suffix(".pub").read_text().split()[:2]),
    ]
    h = ssh_host(sshd, known_hosts=str(known))
    await h.connect()
    await h.close()


async def test_wrong_key_is_refused_without_retry(sshd: Sshd) -> None:
    message, _ = await _refused(ssh_host(sshd, identity=str(sshd.wrong_identity)))
    assert "authentication refused" in message


async def test_closed_port_is_one_clear_line() -> None:
    h = SshHost("127.0.0.1", port=free_port(), agent=False)
    with pytest.raises(HostUnreachable) as err:
        await h.connect()
    assert "connection refused" in str(err.value)
    assert "--ssh-port" in str(err.value)


async def test_unresolvable_name_is_one_clear_line() -> None:
    h = SshHost("no-such-host.invalid", agent=False)
    with pytest.raises(HostUnreachable, match="cannot resolve host name"):
        await h.connect()


# ---------------------------------------------------------------------------------------- reconnect


async def test_reconnects_after_sshd_dies_and_returns(fresh_sshd: Sshd) -> None:
    h = ssh_host(fresh_sshd, keepalive=(1.0, 2), backoff=(0.2, 1.0))
    states: list[str] = []
    h.on_connection(lambda s: states.append(s.state))
    server = await asyncio.start_server(_answer_http, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        await h.connect()
        await h.http_base_url(port)
        fresh_sshd.kill()
        with pytest.raises(HostUnreachable):
            await h.run("echo during-outage", timeout=0.5)
        fresh_sshd.start()
        result = await h.run("echo after-outage", timeout=20)
        assert result.stdout == b"after-outage\n"
        assert "reconnecting" in states and states[-1] == "connected"
        # The port forward is rebuilt on the new connection and carries HTTP again.
        base = await h.http_base_url(port)
        reader, writer = await asyncio.open_connection("127.0.0.1", int(base.rpartition(":")[2]))
        writer.write(b"GET / HTTP/1.0\r\n\r\n")
        assert (await reader.read()).startswith(b"HTTP/1.0 200 OK")
        writer.close()
    finally:
        server.close()
        await h.close()


async def test_metacharacter_path_is_a_path(host: Host, tmp_path: Path) -> None:
    import shlex

    tag = uuid.uuid4().hex[:8]
    weird_dir = tmp_path / f"a $(touch pwned-{tag}) 'b\" ;c"
    weird_dir.mkdir()
    path = weird_dir / f"log `touch pwned2-{tag}` $HOME.log"
    path.write_bytes(b"content\n")
    result = await host.run(f"cat -- {shlex.quote(str(path))}")
    assert result.stdout == b"content\n"
    for where in (Path.home(), Path.cwd(), Path("/")):
        assert not (where / f"pwned-{tag}").exists()
        assert not (where / f"pwned2-{tag}").exists()
    assert os.path.exists(path)
