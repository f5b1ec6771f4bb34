"""A small real process tree shaped like an SGLang server, for the control tests (not the simulator).

`python tests/helpers/proctree.py --port P --gpu-state DIR [--tp N] [--orphan] [--ignore-term]`:
the main process listens on 127.0.0.1:P and starts one child per rank titled `sglang::scheduler_TP<k>`
(argv[0], so /proc/PID/cmdline shows it) that dies with its parent (PR_SET_PDEATHSIG, as SGLang's
schedulers do) and publishes simulated GPU memory in the simulator's format. `--orphan` adds a rank that
double-forks into a process group of its own, re-parented to PID 1, and keeps its memory: still in the
launch's session, as an SGLang scheduler whose parent died is (SGLang never calls setsid). `--daemon` adds a
process that leaves the session (setsid, re-parented to PID 1) and holds nothing, as tmux's server does when
the launch starts one: it carries the run marker too, and is not the server's; its pid goes to STATE/daemon.pid.
`bystander` mode runs one same-titled process that belongs to nobody's server.
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import socket
import sys
import time

GIB = 2**30
CHILD = "import sys; sys.path.insert(0, {root!r}); from tests.helpers.proctree import rank_main; rank_main()"
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def write_json(path: str, data: dict) -> None:
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(data, f)
    os.replace(tmp, path)


def write_devices(directory: str, count: int) -> None:
    os.makedirs(directory, exist_ok=True)
    gpus = [{"index": i, "uuid": f"GPU-fake-{i}", "name": "Fake H200", "total": 140 * GIB} for i in range(count)]
    write_json(os.path.join(directory, "devices.json"), {"gpus": gpus})


def spawn_rank(title: str, gpu: int, state: str, *, orphan: bool = False, ignore_term: bool = False) -> int:
    """Start one titled rank process; returns its pid (for an orphan: the short-lived intermediate)."""
    pid = os.fork()
    if pid:
        return pid
    env = dict(
        os.environ,
        FAKE_TITLE=title,
        FAKE_GPU=str(gpu),
        FAKE_STATE=state,
        FAKE_ORPHAN="1" if orphan else "",
        FAKE_IGNORE_TERM="1" if ignore_term else "",
    )
    if orphan:
        os.setpgid(0, 0)  # a group of its own, in the launch's session: only the session (or its pid) finds it
        if os.fork():
            os._exit(0)  # the grandchild is re-parented to PID 1
    os.execve(sys.executable, [title, "-c", CHILD.format(root=ROOT)], env)
    raise SystemExit(1)


def spawn_daemon(state: str) -> None:
    """A process that daemonises out of the launch's session (tmux's server does): re-parented, then setsid."""
    pid = os.fork()
    if pid:
        os.waitpid(pid, 0)  # the intermediate exits at once
        return
    if os.fork():
        os._exit(0)
    os.setsid()  # after the fork, as daemon(3) does: it leads its new session
    with open(os.path.join(state, "daemon.pid"), "w", encoding="utf-8") as f:
        f.write(f"{os.getpid()}\n")
    os.execv("/bin/sleep", ["sleep", "600"])


def rank_main() -> None:
    if not os.environ.get("FAKE_ORPHAN"):
        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG, like sglang's schedulers
    if os.environ.get("FAKE_IGNORE_TERM"):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    state = os.environ.get("FAKE_STATE")
    if state:
        gpu = int(os.environ["FAKE_GPU"])
        write_json(
            os.path.join(state, f"proc-{os.getpid()}.json"),
            {"pid": os.getpid(), "gpu": gpu, "used": (10 + gpu) * GIB, "name": os.environ.get("FAKE_TITLE", "")},
        )
    print(f"rank {os.environ.get('FAKE_TITLE')} pid {os.getpid()} up", flush=True)
    while True:
        time.sleep(1)


def main(argv: list[str]) -> None:
    import argparse

    parser = argparse.ArgumentParser()
    parser.add_argument("mode", nargs="?", default="server", choices=("server", "bystander"))
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--gpu-state", default="")
    parser.add_argument("--tp", type=int, default=2)
    parser.add_argument("--orphan", action="store_true")
    parser.add_argument("--ignore-term", action="store_true")
    parser.add_argument("--daemon", action="store_true")
    args = parser.parse_args(argv)
    if args.gpu_state:
        write_devices(args.gpu_state, max(args.tp + (1 if args.orphan else 0), 1))
    if args.mode == "bystander":
        os.environ.update(FAKE_TITLE="sglang::scheduler_TP0", FAKE_GPU="0", FAKE_STATE=args.gpu_state)
        os.execv(sys.executable, ["sglang::scheduler_TP0", "-c", CHILD.format(root=ROOT)])
    if args.ignore_term:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a server stuck in a drain: only KILL ends it
    else:
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # main exits on TERM; ranks follow by PDEATHSIG
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", args.port))
    listener.listen()
    for k in range(args.tp):
        spawn_rank(f"sglang::scheduler_TP{k}", k, args.gpu_state, ignore_term=args.ignore_term)
    if args.orphan:
        os.waitpid(spawn_rank(f"sglang::scheduler_TP{args.tp}", args.tp, args.gpu_state, orphan=True), 0)
    if args.daemon:
        spawn_daemon(args.gpu_state)
    print(f"server up on port {listener.getsockname()[1]}", flush=True)
    while True:
        time.sleep(1)


if __name__ == "__main__":
    main(sys.argv[1:])
