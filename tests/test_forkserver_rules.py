"""The rules behind SGLang's early forkserver (SGLANG_EARLY_FORKSERVER=1), pure: the verdict when the main process
is gone while its forked ranks still run, and which processes a search counts as the server's.
(End to end against the simulator: tests/test_forkserver_sim.py.)"""

from __future__ import annotations

from tui.core.events import ServerProcess
from tui.core.explain import MAIN_EXITED, RANK_EXITED
from tui.core.readiness import reduce
from tui.core.state import Phase, Readiness
from tui.sources.control_cmds import parse_find, pick_main
from tui.sources.local import LocalHost
from tui.sources.procwatch import ProcessWatch

WATCHED = Readiness.of(health_probed=True, health_port=30000, log_watched=True, process_watched=True)
RANKS = ((11, "sglang::scheduler_TP0"), (12, "sglang::scheduler_TP1"), (13, "sglang::detokenizer"))


def running() -> Readiness:
    return reduce(WATCHED.evolve(launched=True), ServerProcess(alive=True, pids=(10, 11, 12, 13), titled=RANKS), 1.0)


def test_the_main_process_gone_while_only_its_ranks_run_is_failed_by_the_main_not_a_rank() -> None:
    """The watch's next report may already miss a rank that left (they go about a second after the launcher): the
    line names the main process, and the ranks leaving after it change nothing."""
    s = reduce(running(), ServerProcess(alive=True, pids=(11, 13), titled=(RANKS[0], RANKS[2]), main_gone=10), 3.0)
    assert s.phase is Phase.FAILED and s.error is not None
    assert s.error.line.startswith(f"{MAIN_EXITED} (pid 10) exited; 2 of its SGLang processes")
    assert RANK_EXITED not in s.error.line
    gone = reduce(s, ServerProcess(alive=False, detail="server processes gone"), 5.0)
    assert gone.phase is Phase.FAILED and gone.error == s.error


def test_a_main_process_gone_while_an_untitled_process_of_the_server_runs_is_no_failure() -> None:
    """`sh -c 'python -m sglang.launch_server … &'`: the shell found first ends, the launcher it started runs on
    (no SGLang title): the server lives."""
    s = reduce(running(), ServerProcess(alive=True, pids=(14, 11, 12, 13), titled=RANKS, main_gone=10), 3.0)
    assert s.phase is not Phase.FAILED and s.error is None


def _find(*procs: tuple[int, int, int, int, str, int], writers: tuple[int, ...], port: tuple[int, ...] = ()) -> str:
    """find_command's output: `log PID POS`, `port PID`, then `S` and `C` per process (pid, ppid, pgid, sid, title,
    start)."""
    lines = [f"log {pid} 100" for pid in writers] + [f"port {pid}" for pid in port]
    for pid, ppid, pgid, sid, title, start in procs:
        lines += [f"S {pid} S {ppid} {pgid} {sid} {start}", f"C {pid} {title}"]
    return "\n".join(lines)


LAUNCHER = (100, 1, 100, 100, "python -m sglang.launch_server --port 30000", 5000)
DAEMON_RANK = (301, 300, 300, 300, "sglang::scheduler_TP0", 5100)  # forked by a daemon in its own session
EARLIER_RANK = (90, 1, 80, 80, "sglang::scheduler_TP0", 4000)  # a rank of an earlier launch, same log


def test_a_forked_rank_is_the_servers_and_an_earlier_ranks_writer_of_the_log_is_not() -> None:
    found = parse_find(_find(LAUNCHER, DAEMON_RANK, EARLIER_RANK, writers=(100, 301, 90)))
    main = pick_main(found)
    assert main is not None and main.pid == 100  # the earliest root, but never an SGLang-titled one
    target = ProcessWatch(LocalHost(), port=None, log_path="/x.log")._target_from(found)
    assert target is not None and set(target.known) == {100, 301} and target.main_start == 5000
