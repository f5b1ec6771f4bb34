"""The mux agent: ONE process on a host that runs every command of the tool there, each as `sh -c CMD` in its
own session, their stdin, stdout, stderr and exit multiplexed over the agent's own stdin and stdout.

It is a program of its own (stdlib only, Python 3.7+ as the GPU probe), sent on stdin to the host's Python and read by
tui/sources/muxhost.py. It exists for the Slurm engine: every command on a compute node runs inside the job's
allocation through `srun --overlap`, and one srun (one job step) per node serving the log tail, the GPU probe,
the process watch and the short commands costs the cluster far less than one step per command.

Protocol, one ASCII line per message (the transport may be line-buffered: srun's is), payloads base64:
    to the agent    O ID B64(JSON {"cmd": CMD, "stdin": BOOL})   start a command (stdin: keep a pipe open)
                    I ID B64(DATA)   data for its stdin           E ID   close its stdin
                    K ID             stop it (TERM its group, KILL 1 s later)
                    Q                stop everything and exit (so does EOF on the agent's stdin)
    from the agent  H PID VERSION    the agent is up              o ID B64 / e ID B64   its stdout / stderr
                    x ID RC          it ended (after its last output; RC negative: killed by that signal)
                    ! ID B64(TEXT)   it could not be started
"""

from __future__ import annotations

import base64
import json
import os
import selectors
import signal
import subprocess
import sys
import time
from typing import IO, cast

VERSION = "1"
CHUNK = 16384
KILL_AFTER_S = 1.0


class Chan:
    def __init__(self, cid: str, proc: subprocess.Popen[bytes]) -> None:
        self.cid = cid
        self.proc = proc
        self.streams = 2  # stdout and stderr not yet at EOF
        self.pending = b""  # stdin bytes not yet written
        self.eof = False  # close stdin once pending is written
        self.kill_at: float | None = None  # when to SIGKILL its group (after a K)


def send(line: str) -> None:
    data = line.encode("ascii") + b"\n"
    while data:
        try:
            n = os.write(1, data)
        except InterruptedError:
            continue
        data = data[n:]


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


class Agent:
    def __init__(self) -> None:
        self.sel = selectors.DefaultSelector()
        self.chans: dict[str, Chan] = {}
        self.inbuf = b""
        self.quit = False
        os.set_blocking(0, False)
        self.sel.register(0, selectors.EVENT_READ, ("in", None))
        # A command's exit wakes the loop at once (its pipes may close before it can be reaped): SIGCHLD
        # writes to this pipe, which the loop watches.
        self.wake_r, wake_w = os.pipe()
        os.set_blocking(self.wake_r, False)
        os.set_blocking(wake_w, False)
        signal.set_wakeup_fd(wake_w)
        signal.signal(signal.SIGCHLD, lambda signum, frame: None)
        self.sel.register(self.wake_r, selectors.EVENT_READ, ("sig", None))

    # ---------------------------------------------------------------------------------------- commands
    def open(self, cid: str, spec: str) -> None:
        try:
            args = json.loads(base64.b64decode(spec).decode("utf-8"))
            proc = subprocess.Popen(
                ["sh", "-c", args["cmd"]],
                stdin=subprocess.PIPE if args.get("stdin") else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                close_fds=True,
            )
        except Exception as exc:  # a bad request or no sh: say so, keep serving the others
            send(f"! {cid} {b64(str(exc).encode('utf-8', 'replace'))}")
            return
        chan = Chan(cid, proc)
        self.chans[cid] = chan
        for stream, kind in ((proc.stdout, "o"), (proc.stderr, "e")):
            assert stream is not None  # both are pipes
            os.set_blocking(stream.fileno(), False)
            self.sel.register(stream, selectors.EVENT_READ, (kind, chan))
        if proc.stdin is not None:
            os.set_blocking(proc.stdin.fileno(), False)

    def feed(self, chan: Chan, data: bytes, eof: bool = False) -> None:
        if chan.proc.stdin is None:
            return
        chan.pending += data
        chan.eof = chan.eof or eof
        self.flush_stdin(chan)

    def flush_stdin(self, chan: Chan) -> None:
        stdin = chan.proc.stdin
        if stdin is None or stdin.closed:
            return
        while chan.pending:
            try:
                n = os.write(stdin.fileno(), chan.pending[:CHUNK])
            except BlockingIOError:
                break
            except OSError:  # it closed its stdin or exited: what it did not read is dropped
                chan.pending = b""
                break
            chan.pending = chan.pending[n:]
        self._watch_stdin(chan)
        if not chan.pending and chan.eof:
            self._close_stdin(chan)

    def _watch_stdin(self, chan: Chan) -> None:
        stdin = chan.proc.stdin
        if stdin is None:
            return
        registered = self._registered(stdin)
        if chan.pending and not registered:
            self.sel.register(stdin, selectors.EVENT_WRITE, ("w", chan))
        elif not chan.pending and registered:
            self.sel.unregister(stdin)

    def _registered(self, fileobj: IO[bytes]) -> bool:
        try:
            self.sel.get_key(fileobj)
        except (KeyError, ValueError):
            return False
        return True

    def _close_stdin(self, chan: Chan) -> None:
        stdin = chan.proc.stdin
        if stdin is None or stdin.closed:
            return
        if self._registered(stdin):
            self.sel.unregister(stdin)
        try:
            stdin.close()
        except OSError:
            pass

    def signal(self, chan: Chan, sig: int) -> None:
        try:
            os.killpg(chan.proc.pid, sig)
        except OSError:
            pass

    def stop(self, chan: Chan) -> None:
        chan.pending = b""
        self._close_stdin(chan)
        if chan.kill_at is None and chan.proc.poll() is None:
            self.signal(chan, signal.SIGTERM)
            chan.kill_at = time.monotonic() + KILL_AFTER_S

    # -------------------------------------------------------------------------------------------- loop
    def handle(self, line: str) -> None:
        words = line.split(" ")
        kind = words[0]
        if kind == "Q":
            self.quit = True
            return
        if len(words) < 2:
            return
        cid = words[1]
        if kind == "O" and len(words) == 3:
            self.open(cid, words[2])
            return
        chan = self.chans.get(cid)
        if chan is None:
            return
        if kind == "I" and len(words) == 3:
            self.feed(chan, base64.b64decode(words[2]))
        elif kind == "E":
            self.feed(chan, b"", eof=True)
        elif kind == "K":
            self.stop(chan)

    def read_input(self) -> None:
        try:
            data = os.read(0, 65536)
        except BlockingIOError:
            return
        if not data:
            self.quit = True
            return
        self.inbuf += data
        *lines, self.inbuf = self.inbuf.split(b"\n")
        for line in lines:
            if line:
                self.handle(line.decode("ascii", "replace").strip())

    def read_output(self, stream: IO[bytes], kind: str, chan: Chan) -> None:
        try:
            data = os.read(stream.fileno(), CHUNK)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if data:
            send(f"{kind} {chan.cid} {b64(data)}")
            return
        self.sel.unregister(stream)
        stream.close()
        chan.streams -= 1

    def reap(self) -> None:
        now = time.monotonic()
        for cid, chan in list(self.chans.items()):
            if chan.kill_at is not None and now >= chan.kill_at:
                self.signal(chan, signal.SIGKILL)
                chan.kill_at = now + 3600.0
            if chan.streams == 0 and chan.proc.poll() is not None:
                self._close_stdin(chan)
                send(f"x {cid} {chan.proc.returncode}")
                del self.chans[cid]

    def run(self) -> None:
        while not self.quit:
            busy = any(c.kill_at is not None for c in self.chans.values())
            for key, _ in self.sel.select(0.05 if busy else 1.0):
                kind, chan = key.data
                if kind == "in":
                    self.read_input()
                elif kind == "sig":
                    try:
                        os.read(self.wake_r, 512)
                    except BlockingIOError:
                        pass
                elif kind == "w":
                    self.flush_stdin(chan)
                else:
                    self.read_output(cast(IO[bytes], key.fileobj), kind, chan)
            self.reap()
        self.shutdown()

    def shutdown(self) -> None:
        for chan in self.chans.values():
            self.stop(chan)
        deadline = time.monotonic() + KILL_AFTER_S
        while any(c.proc.poll() is None for c in self.chans.values()) and time.monotonic() < deadline:
            time.sleep(0.02)
        for chan in self.chans.values():
            self.signal(chan, signal.SIGKILL)


def main() -> None:
    agent = Agent()

    def on_signal(signum: int, frame: object) -> None:
        agent.quit = True

    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(sig, on_signal)
    send(f"H {os.getpid()} {VERSION}")
    try:
        agent.run()
    except BrokenPipeError:
        agent.shutdown()


if __name__ == "__main__":
    main()
    sys.exit(0)
