"""Issue 26 item 8: a server started with `--launch 'tmux new-session -d …'`, in a real tmux server of the test's
own. The launch hands its run marker to the tmux server it starts and, through tmux's environment, to every
window's job; `stop` must end the server and nothing else: the tmux server, the user's job in another window
and a `stop` run from a tmux window (its own environment carries the marker) all live on."""

from __future__ import annotations

import shlex
import sys
import time
from pathlib import Path

from tests.helpers.pids import alive
from tests.helpers.processes import Cli, Tmux
from tests.helpers.sim import ROOT
from tests.helpers.sshd import free_port
from tui.commands.simulate import command_line
from tui.sources.control_cmds import MARKER_VAR


def marker_of(pid: int) -> str | None:
    for item in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0"):
        if item.startswith(f"{MARKER_VAR}=".encode()):
            return item.split(b"=", 1)[1].decode()
    return None


def sim_pids(where: Path) -> set[int]:
    """The live processes of this test's simulator: its main process (`python -m tui simulate`, its directory on
    the command line; not the tmux server, whose command line holds the same words) and its `sglang::` children."""
    mains, procs = set(), {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        argv = cmdline.split(b"\0")
        if argv[1:4] == [b"-m", b"tui", b"simulate"] and str(where).encode() in cmdline:
            mains.add(int(entry.name))
        procs[int(entry.name)] = (ppid, cmdline)
    return {p for p in mains if alive(p)} | {
        p for p, (ppid, cmdline) in procs.items() if ppid in mains and cmdline.startswith(b"sglang::") and alive(p)
    }


def until(predicate, limit: float = 60.0, what: str = "") -> None:
    deadline = time.monotonic() + limit
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {limit:g} s: {what}")
        time.sleep(0.05)


class TmuxLaunch:
    """`wait --launch 'tmux … new-session -d SIM'` to ready, then a user's job in a second window."""

    def __init__(self, tmp_path: Path, tmux: Tmux, cli: Cli) -> None:
        self.dir, self.tmux, self.cli = tmp_path, tmux, cli
        self.port, self.log, self.gpus = free_port(), tmp_path / "server.log", tmp_path / "gpus"
        sim = command_line(self.log, self.port, self.gpus, "--speed", "500", "--tp", "2", "--shards", "8")
        launch = shlex.join([*tmux.argv("new-session", "-d", "-s", "srv"), sim])
        ready = cli("wait", "local", "--log", self.log, "--port", str(self.port), "--sim-gpus", self.gpus,
                    "--launch", launch, "--cwd", ROOT, "--remote-python", sys.executable, "--timeout", "60",
                    timeout=90)  # fmt: skip
        assert ready.returncode == 0, ready.stderr
        self.run_id = tmux("show-environment", "-g", MARKER_VAR).stdout.strip().split("=", 1)[1]
        self.server = int(tmux("display-message", "-p", "#{pid}").stdout)
        job = tmp_path / "job.pid"
        tmux("new-window", "-d", "-t", "srv", f"echo $$ > {shlex.quote(str(job))}; exec sleep 600")
        until(lambda: job.exists() and job.read_text().strip().isdigit(), what="the user's job started")
        self.job = int(job.read_text())
        self.sim = sim_pids(tmp_path)
        # What made the old sweep take them: the launch's marker, in sessions of their own.
        assert marker_of(self.server) == self.run_id and marker_of(self.job) == self.run_id
        assert len(self.sim) == 4 and self.job not in self.sim and self.server not in self.sim

    def stop_args(self) -> list[str]:
        return ["stop", "local", "--port", str(self.port), "--log", str(self.log), "--sim-gpus", str(self.gpus),
                "--remote-python", sys.executable]  # fmt: skip

    def spared(self) -> None:
        assert sim_pids(self.dir) == set() and not any(alive(p) for p in self.sim)
        assert alive(self.server) and alive(self.job)
        windows = self.tmux("list-windows", "-a", "-F", "#{pane_pid}").stdout.split()
        assert str(self.job) in windows


def test_stop_ends_the_server_and_spares_tmux_and_the_other_window(tmp_path: Path, tmux: Tmux, cli: Cli) -> None:
    scene = TmuxLaunch(tmp_path, tmux, cli)
    run = cli(*scene.stop_args(), timeout=90)
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith(f"stopped the server on local port {scene.port}: exited on TERM"), run.stdout
    scene.spared()


def test_a_stop_whose_environment_carries_the_marker_does_its_job_and_survives(
    tmp_path: Path, tmux: Tmux, cli: Cli
) -> None:
    """`stop` typed in a tmux window: tmux gave that window the launch's marker (it once TERMed itself: exit -15,
    nothing printed)."""
    scene = TmuxLaunch(tmp_path, tmux, cli)
    out, rc, env = tmp_path / "stop.out", tmp_path / "stop.rc", tmp_path / "stop.env"
    stop = shlex.join([sys.executable, "-m", "tui", *scene.stop_args()])
    script = (
        f"env | grep ^{MARKER_VAR}= > {shlex.quote(str(env))}; "
        f"{stop} > {shlex.quote(str(out))} 2>&1; echo $? > {shlex.quote(str(rc))}.tmp && "
        f"mv {shlex.quote(str(rc))}.tmp {shlex.quote(str(rc))}"
    )
    window = int(tmux("new-window", "-d", "-P", "-F", "#{pane_pid}", "-t", "srv", "-c", str(ROOT), script).stdout)
    until(lambda: rc.exists() or not alive(window), 90.0, "the stop in the tmux window finished")
    assert env.read_text().strip() == f"{MARKER_VAR}={scene.run_id}"
    assert rc.exists(), f"the window's shell was killed; the stop printed: {out.read_text()!r}"
    assert rc.read_text().strip() == "0", out.read_text()
    assert out.read_text().startswith(f"stopped the server on local port {scene.port}: exited on TERM")
    scene.spared()
