"""`export --listen` against requests over its limits, from a real `curl` and raw sockets: a 200 KB header is 431,
a 200 KB request line 400, a client that trickles its head is cut at the head's deadline, and none of it holds a
scrape; stderr has no traceback and one line at most for all the refusals (tui/commands/export_http.py)."""

from __future__ import annotations

import signal
import socket
import subprocess
from pathlib import Path

from tests.helpers.processes import Cli, PipeLines
from tests.helpers.sshd import free_port


def _curl(*args: str) -> str:
    """curl's HTTP status code for the request ("000" when it got no answer)."""
    done = subprocess.run(
        ["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "30", *args],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    return done.stdout.strip()


def _raw(port: int, data: bytes) -> bytes:
    """Send `data`, then read the answer until the server closes."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        try:
            sock.sendall(data)
        except (BrokenPipeError, ConnectionResetError):  # it answered and closed before taking it all
            pass
        out = b""
        while chunk := sock.recv(65536):
            out += chunk
    return out


def test_requests_over_the_limits_are_refused_in_one_line_and_never_hold_a_scrape(cli: Cli, tmp_path: Path) -> None:
    port = free_port()
    exporter = cli.popen("export", "--listen", f"127.0.0.1:{port}", "--no-history", f"local:{free_port()}")
    assert exporter.stderr is not None
    err = PipeLines(exporter.stderr)
    err.wait_for(lambda line: "serving http://" in line, timeout=60)
    url = f"http://127.0.0.1:{port}/metrics"
    assert _curl(url) == "200"

    headers = tmp_path / "headers"
    headers.write_text(f"X-Big: {'a' * 200_000}\n")
    assert _curl("-H", f"@{headers}", url) == "431"  # one 200 KB header line
    many = "".join(f"X-Many-{i}: {'b' * 1000}\n" for i in range(200))
    headers.write_text(many)
    assert _curl("-H", f"@{headers}", url) == "431"  # 200 KB in lines each under the line limit

    answer = _raw(port, b"GET /" + b"c" * 200_000 + b" HTTP/1.1\r\nHost: x\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 400 "), answer[:80]

    with socket.create_connection(("127.0.0.1", port), timeout=60) as slow:
        slow.sendall(b"GET /metrics HTTP/1.1\r\n")  # and then a header a byte at a time, never ending
        assert _curl(url) == "200"  # the scrape is served while the slow client is held
        closed = False
        try:
            for _ in range(600):
                slow.sendall(b"x")
                slow.settimeout(0.1)
                try:
                    closed = slow.recv(1) == b""
                except TimeoutError:
                    continue
                if closed:
                    break
        except (BrokenPipeError, ConnectionResetError):
            closed = True
        assert closed, "a client trickling its head was never cut off"

    exporter.send_signal(signal.SIGTERM)
    assert exporter.wait(30) == 0
    text = err.text(5)
    assert "Traceback" not in text, text
    refused = [line for line in text.splitlines() if "refused a request" in line]
    assert len(refused) == 1 and "431" in refused[0], text  # three refusals, one line
