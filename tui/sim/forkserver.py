"""SGLang's early forkserver (`SGLANG_EARLY_FORKSERVER=1`, sglang#40201, #40596; reference §12), simulated.

The schedulers and the detokenizer are started by a forkserver process, not by the launcher: their OS parent is
the forkserver. `private`: the forkserver is the launcher's child (in its group and session) and ends when the
launcher does. `daemon`: it is detached (its own session, re-parented away from the launcher), serves every launch
that finds its record (`SGLANG_FORKSERVER_FILE`; here by default beside the simulated GPUs, never a fixed path)
and outlives them; a record that names a daemon that cannot be used gives SGLang's
`[early_forkserver] daemon at PATH unusable (WHY); starting a private one`.

What a forked child has, and why (the process watch depends on it):
- the launcher's stdout and stderr: the launcher sends its fds 1 and 2 with each request (SCM_RIGHTS, as SGLang
  passes fds to its forkserver), and the child gets them as its own 1 and 2. So a rank holds the server's log open
  for writing wherever its parent is: the evidence the watch finds it by.
- the forkserver's environment, not the launcher's: a fork keeps the environment its parent was started with, and
  /proc/PID/environ shows that. A private forkserver was started by the launcher, so its children carry the
  launch's run marker (SGLANG_TUI_RUN); a daemon carries the marker of the launch that started it, so the ranks it
  forks for a later launch carry an EARLIER launch's marker. The marker is no evidence of whose a forked rank is.
- no parent-death link to the launcher (its parent is the forkserver): each child checks every second that its
  launching process (pid and start time) lives, and once it is gone prints
  `[early_forkserver] pid N: launching process M is gone; exiting` on its stderr (the log) and exits.
"""

from __future__ import annotations

import fcntl
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from tui.sim.procs import PACKAGE_ROOT, spawn_titled_python, write_all

RECORD_ENV = "SGLANG_FORKSERVER_FILE"
RECORD_NAME = "sglang_forkserver.json"
TITLE = "sglang::forkserver"
CHECK_EVERY_S = 1.0  # how often a forked child looks for its launching process (real seconds, as SGLang's)
RECORD_WAIT_S = 10.0
MAX_FDS = 8


def record_path(gpu_state: str | None) -> str:
    """Where the daemon's record is: $SGLANG_FORKSERVER_FILE, else beside the simulated GPUs, else SGLang's own
    default (/tmp/sglang_forkserver.json)."""
    given = os.environ.get(RECORD_ENV)
    if given:
        return given
    return os.path.join(gpu_state, RECORD_NAME) if gpu_state else os.path.join("/tmp", RECORD_NAME)


def start_ticks(pid: int) -> int | None:
    """The process's start time (clock ticks since boot), None when it is gone or a zombie."""
    try:
        rest = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return None if rest[0] in ("Z", "X") else int(rest[19])


# ------------------------------------------------------------------------------------------ the launcher's side


class ForkedChild:
    """A process the forkserver started for this launcher: its pid, and its exit status as the forkserver reports
    it on the request's connection (the launcher is not its parent, so it cannot wait for it)."""

    def __init__(self, conn: socket.socket, pid: int) -> None:
        self.conn = conn
        self.pid = pid
        self.code: int | None = None
        self.buf = b""
        conn.setblocking(False)

    def poll(self) -> int | None:
        if self.code is None:
            try:
                data = self.conn.recv(256)
            except BlockingIOError:
                return None
            except OSError:
                data = b""
            self.buf += data
            if b"\n" in self.buf or not data:
                word = self.buf.split()[-1:] if self.buf.startswith(b"exit") else [b"-9"]
                self.code = int(word[0]) if word and word[0].lstrip(b"-").isdigit() else -9
                self.conn.close()
        return self.code

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:
            os.kill(self.pid, sig)


def request(address: str, title: str, entry: str, payload: dict[str, object], fds: dict[str, int]) -> ForkedChild:
    """Ask the forkserver at `address` to start `tui.sim.<entry>.child_main(payload)` titled `title`, with this
    process's stdout and stderr as its own and each of `fds` passed under the payload key naming it."""
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(address)
    body = json.dumps({"title": title, "entry": entry, "payload": payload, "keys": list(fds)}).encode() + b"\n"
    socket.send_fds(conn, [body], [1, 2, *fds.values()])
    answer = b""
    while not answer.endswith(b"\n"):
        chunk = conn.recv(64)
        if not chunk:
            raise OSError("the forkserver closed the request")
        answer += chunk
    return ForkedChild(conn, int(answer.split()[1]))


def _abstract_address() -> str:
    return f"\0sglang-sim-forkserver-{os.getpid()}-{secrets.token_hex(4)}"


def _listener(address: str) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(address)
    sock.listen(64)
    return sock


def _server_code(listen_fd: int, alive_fd: int | None, record: str | None) -> str:
    return (
        f"import sys; sys.path.insert(0, {PACKAGE_ROOT!r})\n"
        f"from tui.sim.forkserver import serve_main\n"
        f"serve_main({listen_fd}, {alive_fd!r}, {record!r})\n"
    )


def start_private() -> str:
    """A forkserver that is this launcher's child (its group, its session): it ends when the launcher does (EOF on
    the pipe it holds), as Python's multiprocessing forkserver does. Returns its address."""
    address = _abstract_address()
    sock = _listener(address)
    alive_r, alive_w = os.pipe()
    spawn_titled_python(TITLE, _server_code(sock.fileno(), alive_r, None), pass_fds=(sock.fileno(), alive_r))
    os.close(alive_r)
    os.set_inheritable(alive_w, False)
    _keep.append(alive_w)  # held for this process's life: its EOF tells the forkserver the launcher is gone
    sock.close()
    return address


_keep: list[int] = []


def use_daemon(record: str, say: Callable[[str], None]) -> str:
    """The daemon forkserver's address: the one the record names when it can be used; none recorded, a new
    detached daemon; one recorded that cannot be used, a private forkserver instead (SGLang's fallback)."""
    Path(record).parent.mkdir(parents=True, exist_ok=True)
    with open(record + ".lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two launches at once start one daemon
        if not os.path.exists(record):
            return _start_daemon(record)
        address, why = _usable(record)
        if address is not None:
            return address
    say(f"[early_forkserver] daemon at {record} unusable ({why}); starting a private one\n")
    return start_private()


def _usable(record: str) -> tuple[str | None, str]:
    try:
        data = json.loads(Path(record).read_text())
        pid, start, address = int(data["pid"]), int(data["start"]), "\0" + str(data["socket"]).removeprefix("@")
    except (OSError, ValueError, KeyError, TypeError) as err:
        return None, f"unreadable record: {err}"
    if start_ticks(pid) != start:
        return None, f"pid {pid} is gone"
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(address)
    except OSError as err:
        return None, f"cannot connect: {err.strerror or err}"
    finally:
        probe.close()
    return address, ""


def _start_daemon(record: str) -> str:
    """Start the daemon detached: an intermediate child starts it in a session of its own and exits, so the daemon
    is re-parented away from the launcher (no walk down from the launcher reaches it) and outlives it. The
    intermediate writes the record (pid, start time, socket) before it exits."""
    address = _abstract_address()
    sock = _listener(address)
    child = os.fork()
    if child == 0:
        try:
            with open(record + ".log", "ab") as out:  # the daemon's own output: never a launch's log
                proc = spawn_titled_python(
                    TITLE, _server_code(sock.fileno(), None, record), pass_fds=(sock.fileno(),), new_session=True,
                    stdout=out, stderr=out,
                )  # fmt: skip
            start = None
            for _ in range(200):
                start = start_ticks(proc.pid)
                if start is not None:
                    break
                time.sleep(0.01)
            body = {"pid": proc.pid, "start": start, "socket": "@" + address[1:], "log": record + ".log"}
            tmp = f"{record}.{os.getpid()}.tmp"
            Path(tmp).write_text(json.dumps(body) + "\n")
            os.replace(tmp, record)
        finally:
            os._exit(0)
    os.waitpid(child, 0)
    sock.close()
    return address


# ------------------------------------------------------------------------------------------ the forkserver


def serve_main(listen_fd: int, alive_fd: int | None, record: str | None) -> None:
    """The forkserver: one request per connection; answers `pid N`, then `exit CODE` when that child ends."""
    from tui.sim.procs import mark_child

    mark_child(TITLE, os.getppid(), die_with_parent=False)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C at the launch's terminal is the launcher's
    if alive_fd is not None:
        threading.Thread(target=_exit_at_eof, args=(alive_fd,), daemon=True).start()
    listener = socket.socket(fileno=listen_fd)
    print(f"forkserver pid {os.getpid()} serving (record {record})", flush=True)
    while True:
        conn, _ = listener.accept()
        try:
            _serve_one(conn)
        except (OSError, ValueError, KeyError) as err:
            print(f"forkserver: bad request: {err}", flush=True)
            conn.close()


def _exit_at_eof(fd: int) -> None:
    while os.read(fd, 64):
        pass
    os._exit(0)


def _serve_one(conn: socket.socket) -> None:
    msg, fds, _flags, _addr = socket.recv_fds(conn, 65536, MAX_FDS)
    req = json.loads(msg)
    out, err, *passed = fds
    payload = dict(req["payload"])
    for key, fd in zip(req["keys"], passed, strict=True):
        payload[key] = fd
    payload["forked"] = True
    code = (
        f"import sys; sys.path.insert(0, {PACKAGE_ROOT!r})\n"
        f"from tui.sim.{req['entry']} import child_main\n"
        f"child_main({json.dumps(payload)!r})\n"
    )
    # env None: the forkserver's own environment, as a fork would have it
    proc = spawn_titled_python(str(req["title"]), code, pass_fds=tuple(passed), stdout=out, stderr=err)
    for fd in fds:
        os.close(fd)
    print(f"forkserver: launch from pid {payload.get('parent')}: {req['title']} pid {proc.pid}", flush=True)
    conn.sendall(f"pid {proc.pid}\n".encode())
    threading.Thread(target=_report_exit, args=(conn, proc), daemon=True).start()


def _report_exit(conn: socket.socket, proc: subprocess.Popen[bytes]) -> None:
    code = proc.wait()
    try:
        conn.sendall(f"exit {code}\n".encode())
    except OSError:
        pass  # the launcher is gone
    conn.close()


# ------------------------------------------------------------------------------------------ a forked child


def exit_with_launcher(launcher: int, cleanup: list[Callable[[], None]]) -> None:
    """In a forked child: once the launching process is gone, say so on stderr (the log), run `cleanup` (release
    the simulated GPU memory), and exit, as SGLang's forked workers do about a second after their launcher."""
    start = start_ticks(launcher)

    def watch() -> None:
        while start is not None and start_ticks(launcher) == start:
            time.sleep(CHECK_EVERY_S)
        write_all(2, f"[early_forkserver] pid {os.getpid()}: launching process {launcher} is gone; exiting\n")
        for step in cleanup:
            step()
        sys.stderr.flush()
        os._exit(0)

    threading.Thread(target=watch, daemon=True).start()
