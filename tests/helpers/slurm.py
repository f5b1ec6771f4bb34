"""A real two-node Slurm cluster on this one machine, for the tests (not a mock): Debian's slurm-wlm and munge.

Everything is private to one state directory: its own munged (own key and socket), its own slurm.conf reached
through SLURM_CONF (never /etc/slurm), free ports for slurmctld and each `slurmd -N` node. The node names
(NODES) resolve to 127.0.0.1 through /etc/hosts, as a real cluster's names resolve; `ensure_hosts()` adds
that line once. Daemons are stopped by their pid files, never by name. `SlurmCluster.start()` returns once
`sinfo` says every node is idle.

Recipe: ../shared/reference/slurm.md (tested on this kind of machine).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.helpers.pids import alive
from tests.helpers.ports import accepts
from tests.helpers.sshd import free_port

NODES = ("sgtn1", "sgtn2")  # unlikely names, so that they collide with nothing on the machine
HOSTS_FILE = Path("/etc/hosts")
HOSTS_LINE = "127.0.0.1 " + " ".join(NODES) + "  # sglang-tui tests (tests/helpers/slurm.py)"
DAEMONS = ("munged", "slurmctld", "slurmd")
CLIENTS = ("sbatch", "srun", "scontrol", "squeue", "scancel", "sinfo", "munge")


def slurm_missing() -> str | None:
    """Why a cluster cannot run here (None when it can): a missing program, or not root (slurmd needs it)."""
    for name in (*DAEMONS, *CLIENTS):
        if shutil.which(name) is None and not Path("/usr/sbin", name).exists():
            return f"{name} is not installed (.ci/run installs slurm-wlm and munge)"
    if os.geteuid() != 0:
        return "slurmd runs as root: the Slurm tests need root"
    return None


def ensure_hosts(path: Path = HOSTS_FILE) -> None:
    """The node names resolve to 127.0.0.1 (one line in /etc/hosts, added once)."""
    try:
        names = {w for line in path.read_text().splitlines() for w in line.split("#", 1)[0].split()[1:]}
    except OSError:
        names = set()
    if set(NODES) <= names:
        return
    with path.open("a", encoding="utf-8") as f:
        f.write(HOSTS_LINE + "\n")


def _sbin(name: str) -> str:
    return shutil.which(name) or str(Path("/usr/sbin", name))


@dataclass
class SlurmCluster:
    """slurmctld and one slurmd per node name, all of this one machine, with their own munged."""

    root: Path
    ctld_port: int = field(default_factory=free_port)
    node_ports: tuple[int, ...] = field(default_factory=lambda: tuple(free_port() for _ in NODES))
    started_in_s: float | None = None  # how long start() took (bench/ reads it; never asserted)
    deaths: list[str] = field(default_factory=list)  # what heal() found dead, with the logs then

    def __post_init__(self) -> None:
        # A name of its own: every process of its jobs carries SLURM_CLUSTER_NAME=NAME (kill_leftovers)
        self.name = f"sgltui{uuid.uuid4().hex[:8]}"
        self.conf = self.root / "slurm.conf"
        # munged wants every directory above its socket searchable by all (pytest's tmp dirs are 0700):
        # the socket lives in a directory of its own under the system's temp dir, removed by stop()
        self.socket_dir = Path(tempfile.mkdtemp(prefix="sgltui-munge-"))
        self.socket_dir.chmod(0o755)
        self.socket = self.socket_dir / "munge.socket"
        self.key = self.root / "munge" / "munge.key"

    @property
    def env(self) -> dict[str, str]:
        """What a Slurm client needs to reach this cluster (merged into os.environ by the fixture)."""
        return {"SLURM_CONF": str(self.conf)}

    def _write(self) -> None:
        root = self.root
        root.mkdir(parents=True, exist_ok=True)
        for sub, mode in (("munge", 0o700), ("state", 0o700), ("log", 0o755), *((f"spool-{n}", 0o755) for n in NODES)):
            (root / sub).mkdir(exist_ok=True)
            (root / sub).chmod(mode)
        if not self.key.exists():
            self.key.write_bytes(os.urandom(1024))
            self.key.chmod(0o400)
        host = socket.gethostname().split(".")[0]
        nodes = "".join(
            f"NodeName={name} NodeHostname={host} NodeAddr=127.0.0.1 Port={port} CPUs=1 RealMemory=2000\n"
            for name, port in zip(NODES, self.node_ports, strict=True)
        )
        self.conf.write_text(
            f"ClusterName={self.name}\nSlurmctldHost={host}(127.0.0.1)\nSlurmctldPort={self.ctld_port}\n"
            "SlurmUser=root\nSlurmdUser=root\nAuthType=auth/munge\nCredType=cred/munge\n"
            f"AuthInfo=socket={self.socket}\n"
            f"StateSaveLocation={root}/state\nSlurmdSpoolDir={root}/spool-%n\n"
            f"SlurmctldPidFile={root}/slurmctld.pid\nSlurmdPidFile={root}/slurmd-%n.pid\n"
            f"SlurmctldLogFile={root}/log/slurmctld.log\nSlurmdLogFile={root}/log/slurmd-%n.log\n"
            "ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\n"
            # jobs share the two 1-CPU nodes (a test runs two at once), and memory is no consumable
            "SelectType=select/cons_tres\nSelectTypeParameters=CR_Core\n"
            "MpiDefault=none\nReturnToService=2\nJobAcctGatherType=jobacct_gather/none\n"
            "AccountingStorageType=accounting_storage/none\nSchedulerType=sched/backfill\n"
            # fast turnaround for the tests: poll often, give a job's processes 5 s between TERM and KILL
            "SchedulerParameters=sched_interval=1\nKillWait=5\nMessageTimeout=20\n"
            f"{nodes}"
            f"PartitionName=sgltui Nodes={','.join(NODES)} Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:8\n"
        )

    def run(self, *argv: str, timeout: float = 30.0, check: bool = True) -> subprocess.CompletedProcess[str]:
        """A Slurm client command against this cluster (sbatch, squeue, scontrol, …)."""
        return subprocess.run(
            list(argv), env={**os.environ, **self.env}, capture_output=True, text=True, timeout=timeout, check=check
        )

    def _daemon(self, *argv: str) -> None:
        done = subprocess.run(list(argv), env={**os.environ, **self.env}, capture_output=True, text=True, timeout=30)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr.strip()}\n{self.logs()}")

    def start(self, timeout: float = 60.0) -> SlurmCluster:
        began = time.monotonic()
        ensure_hosts()
        self._write()
        self._munged()
        self._daemon(_sbin("slurmctld"))
        for name in NODES:
            self._daemon(_sbin("slurmd"), "-N", name)
        self._wait_idle(timeout)
        self.started_in_s = time.monotonic() - began
        return self

    def _munged(self) -> None:
        self._daemon(
            _sbin("munged"), f"--socket={self.socket}", f"--key-file={self.key}",
            f"--pid-file={self.root}/munge/munged.pid", f"--log-file={self.root}/log/munged.log",
            f"--seed-file={self.root}/munge/munged.seed",
        )  # fmt: skip

    def _wait_idle(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while True:
            states = self.run("sinfo", "-h", "-N", "-o", "%N %t", check=False).stdout.split()
            if states and all(state == "idle" for state in states[1::2]) and len(states) == 2 * len(NODES):
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"the nodes never became idle: {states}\n{self.logs()}")
            time.sleep(0.05)

    # ------------------------------------------------------------------------------------------------ health

    def _daemons(self) -> list[tuple[str, Path, int | None]]:
        """(name, pid file, the port it answers on) for each daemon of the cluster."""
        return [
            ("munged", self.root / "munge" / "munged.pid", None),
            ("slurmctld", self.root / "slurmctld.pid", None),  # the tests' every client call asks it
            *(
                (f"slurmd -N {n}", self.root / f"slurmd-{n}.pid", port)
                for n, port in zip(NODES, self.node_ports, strict=True)
            ),
        ]

    def dead_daemons(self) -> list[str]:
        """The daemons that no longer run or no longer take a connection on their port: a slurmd gone in one
        test takes its node from every later test (it cannot answer an srun: "Communication connection failure")."""
        dead = []
        for name, pidfile, port in self._daemons():
            pid = _read_pid(pidfile)
            if pid is None or not alive(pid) or (port is not None and not accepts(port, timeout=5.0)):
                dead.append(name)
        return dead

    def heal(self, timeout: float = 60.0) -> list[str]:
        """Start again each daemon that died (its log's last lines kept in `deaths` as the evidence), then wait
        until every node is idle. What was started."""
        dead = self.dead_daemons()
        if not dead:
            return []
        self.deaths.append(f"dead: {', '.join(dead)}\n{self.logs()}\n{_kernel_tail()}")
        for name, pidfile, _port in self._daemons():
            if name in dead:
                pid = _read_pid(pidfile)
                if pid is not None:
                    _stop_pid(pid, grace=2.0)  # alive but deaf: a hung daemon goes too
                pidfile.unlink(missing_ok=True)
                if name == "munged":
                    self._munged()
                else:
                    self._daemon(_sbin(name.split()[0]), *name.split()[1:])
        self._wait_idle(timeout)
        return dead

    def logs(self) -> str:
        out = []
        for log in sorted((self.root / "log").glob("*.log")):
            out.append(f"--- {log.name}\n" + "\n".join(log.read_text(errors="replace").splitlines()[-15:]))
        return "\n".join(out)

    # ------------------------------------------------------------------------------------------------ jobs

    def sbatch(self, script: str, *options: str, cwd: Path, env: Mapping[str, str] | None = None) -> str:
        """Submit SCRIPT (its text) from CWD; the job id."""
        path = cwd / f"job-{time.monotonic_ns()}.sh"
        path.write_text(script)
        path.chmod(0o755)
        done = subprocess.run(
            ["sbatch", "--parsable", *options, str(path)], cwd=cwd, env={**os.environ, **self.env, **(env or {})},
            capture_output=True, text=True, timeout=30,
        )  # fmt: skip
        if done.returncode != 0:
            raise RuntimeError(f"sbatch failed: {done.stderr.strip()}")
        return done.stdout.strip().split(";")[0]

    def state(self, job: str) -> str:
        """The job's state in squeue (RUNNING, PENDING, COMPLETING, …), "" once it is gone."""
        return self.run("squeue", "-h", "-j", job, "-o", "%T", check=False).stdout.strip()

    def wait_running(self, job: str, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while (state := self.state(job)) != "RUNNING":
            if time.monotonic() > deadline or state in ("", "FAILED", "COMPLETED", "CANCELLED"):
                raise RuntimeError(f"job {job} is {state or 'gone'}, not running\n{self.logs()}")
            time.sleep(0.05)

    def wait_gone(self, job: str, timeout: float = 60.0) -> bool:
        deadline = time.monotonic() + timeout
        while self.state(job):
            if time.monotonic() > deadline:
                return False
            time.sleep(0.1)
        return True

    def cancel_all(self, timeout: float = 60.0) -> None:
        """Cancel every job of this cluster and wait until they are gone (so no step outlives the cluster)."""
        jobs = self.run("squeue", "-h", "-o", "%i", check=False).stdout.split()
        if jobs:
            self.run("scancel", "--full", *jobs, check=False)
        for job in jobs:
            self.wait_gone(job, timeout)
        self.kill_leftovers()

    def kill_leftovers(self) -> list[int]:
        """SIGKILL what this cluster's jobs left running outside Slurm's reach (processes that left the job
        step's tracking, as SGLang issue #23627's schedulers do: scancel misses them). Only this cluster's:
        SLURM_CLUSTER_NAME in their environment. Their pids."""
        needle = f"SLURM_CLUSTER_NAME={self.name}".encode()
        killed = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                if needle not in (entry / "environ").read_bytes().split(b"\0"):
                    continue
                os.kill(int(entry.name), signal.SIGKILL)
            except (OSError, ProcessLookupError):
                continue
            killed.append(int(entry.name))
        return killed

    # ------------------------------------------------------------------------------------------------ stop

    def _pid_files(self) -> list[Path]:
        return [
            *(self.root / f"slurmd-{n}.pid" for n in NODES),
            self.root / "slurmctld.pid",
            self.root / "munge" / "munged.pid",
        ]

    def stop(self) -> None:
        """Cancel the jobs, then TERM each daemon by its pid file (KILL if it lingers). Idempotent."""
        if (self.root / "slurmctld.pid").exists():
            try:
                self.cancel_all()
            except (OSError, subprocess.SubprocessError):
                pass
        for pidfile in self._pid_files():
            pid = _read_pid(pidfile)
            if pid is None:
                continue
            _stop_pid(pid)
            pidfile.unlink(missing_ok=True)
        shutil.rmtree(self.socket_dir, ignore_errors=True)


def _read_pid(path: Path) -> int | None:
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def _kernel_tail() -> str:
    """The kernel's last lines (an OOM kill or a segfault of a daemon is said there), when they can be read."""
    try:
        done = subprocess.run(["dmesg", "-T"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return "(dmesg: not readable here)"
    lines = [
        line for line in done.stdout.splitlines() if "slurm" in line or "oom" in line.lower() or "segfault" in line
    ]
    return "--- dmesg (slurm, oom, segfault)\n" + "\n".join(lines[-10:]) if lines else "(dmesg: nothing on slurm)"


_SESSION: list[SlurmCluster] = []  # the session's cluster once started (the rerun condition asks it)


def cluster_daemon_died() -> bool:
    """The rerun condition of a Slurm test (tests/helpers/lanes.py): it failed while a daemon of the cluster was
    dead, so what it watched was the cluster's loss, not sglang-tui's; the next setup heals the cluster."""
    return any(cluster.dead_daemons() for cluster in _SESSION)


def heal_session_cluster() -> None:
    """Before each Slurm test: a daemon that died in an earlier one is started again (said on stderr, and in the
    report of the test that ran when it died)."""
    for cluster in _SESSION:
        started = cluster.heal()
        if started:
            print(f"slurm test cluster: {', '.join(started)} had died and was started again:\n{cluster.deaths[-1]}",
                  file=sys.stderr)  # fmt: skip


def _stop_pid(pid: int, grace: float = 10.0) -> None:
    for sig, wait_s in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + wait_s
        while alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        if not alive(pid):
            return


@pytest.fixture
def cluster(slurm_cluster: SlurmCluster) -> Iterator[SlurmCluster]:
    """The session's cluster; whatever job a test leaves (a failed assertion) is cancelled after it."""
    yield slurm_cluster
    slurm_cluster.cancel_all()


@pytest.fixture(scope="session")
def slurm_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlurmCluster]:
    """One real 2-node Slurm cluster for the session (its tests share one xdist group: tests/helpers/lanes.py);
    SLURM_CONF points at it for everything the tests start, and is put back after."""
    missing = slurm_missing()
    if missing is not None:
        pytest.skip(missing)
    cluster = SlurmCluster(tmp_path_factory.mktemp("slurm"))
    old = os.environ.get("SLURM_CONF")
    try:
        cluster.start()
    except BaseException:
        cluster.stop()
        raise
    os.environ.update(cluster.env)
    _SESSION.append(cluster)
    yield cluster
    _SESSION.remove(cluster)
    cluster.stop()
    if old is None:
        os.environ.pop("SLURM_CONF", None)
    else:
        os.environ["SLURM_CONF"] = old


# ------------------------------------------------------------------------------------- a simulated SGLang job


@dataclass
class SimJob:
    """A running job whose nodes each run one node of a simulated multi-node SGLang launch."""

    job: str
    port: int
    root: Path  # the job's WorkDir: its logs and each node's simulated GPUs (gpus-nodeR)
    nnodes: int = 2

    def gpu_dirs(self) -> list[Path]:
        return [self.root / f"gpus-node{i}" for i in range(self.nnodes)]

    def sim_gpus(self) -> str:
        """`--sim-gpus` for the tool: each node's simulated GPU state, node 0 first."""
        return ",".join(str(d) for d in self.gpu_dirs())

    def log(self, node: int) -> Path:
        return self.root / f"sgl_{self.job}_node{node}.out"


NODE_LOG = "%x_%j_node%n.out"  # what the job's srun writes when per_node_logs (SGLang's recipe, fixed)


def sim_job(
    cluster: SlurmCluster,
    root: Path,
    *,
    faults: Mapping[int, str] | None = None,
    per_node_logs: bool = True,
    shards: int = 8,
    speed: float = 100.0,
    env: Mapping[str, str] | None = None,
    hold: bool = False,
) -> SimJob:
    """`sbatch -N2` a script whose one `srun -N2 -n2` task per node runs `python -m tui simulate --nnodes 2
    --node-rank $SLURM_NODEID --dist-init-addr NODE0:PORT --tp 16` (SGLang's multi-node recipe), logging to
    stdout: per node (`srun -o %x_%j_node%n.out`) or, without per_node_logs, all into the batch script's one
    output file. `faults`: node index -> --fault KIND. Returns once the job runs (`hold`: at once, the job held
    in the queue until `scontrol release`)."""
    import sys

    root.mkdir(parents=True, exist_ok=True)
    port, dist = free_port(), free_port()
    cases = " ".join(f'{i}) F="--fault {kind}" ;;' for i, kind in (faults or {}).items())
    pick = f'case "$SLURM_NODEID" in {cases} *) F="" ;; esac; ' if cases else 'F=""; '
    repo = Path(__file__).resolve().parent.parent.parent
    sim = (
        f"exec env PYTHONPATH={repo} {sys.executable} -m tui simulate --log /dev/stdout --port {port} --tp 16 "
        f"--nnodes 2 --node-rank $SLURM_NODEID --dist-init-addr {NODES[0]}:{dist} "
        f"--gpu-state {root}/gpus-node$SLURM_NODEID --shards {shards} --speed {speed:g} --speculative none $F"
    )
    output = f'-o "{root}/{NODE_LOG}" ' if per_node_logs else ""
    script = f"#!/bin/sh\nsrun -N2 -n2 {output}sh -c '{pick}{sim}'\n"
    held = ("--hold",) if hold else ()
    job = cluster.sbatch(script, "-N2", "-J", "sgl", "--oversubscribe", *held, cwd=root, env=env)
    if not hold:
        cluster.wait_running(job)
    return SimJob(job, port, root)


OWN_LOG = "sim_node%n.log"  # the simulators' own log files (own_log_job): no line of slurmstepd's lands in them


def own_log_job(cluster: SlurmCluster, root: Path, *, fault: str | None = None) -> SimJob:
    """Two simulated nodes (tp 16) writing their own log files (SGLang's `--log-file` style): a cancel shows in no
    log, only in the job's state. `fault`: the simulator's (hang-weights keeps them loading)."""
    repo = Path(__file__).resolve().parent.parent.parent
    port, dist = free_port(), free_port()
    sim = (
        f"exec env PYTHONPATH={repo} {sys.executable} -m tui simulate --log {root}/sim_node$SLURM_NODEID.log "
        f"--port {port} --tp 16 --nnodes 2 --node-rank $SLURM_NODEID --dist-init-addr {NODES[0]}:{dist} "
        f"--gpu-state {root}/gpus-node$SLURM_NODEID --shards 8 --speed 100 --speculative none"
        + (f" --fault {fault}" if fault else "")
    )
    job = cluster.sbatch(f"#!/bin/sh\nsrun -N2 -n2 sh -c '{sim}'\n", "-N2", "-J", "sgl", "--oversubscribe", cwd=root)
    cluster.wait_running(job)
    return SimJob(job, port, root)
