"""The reducer and the verdict's words for two source facts (issue 17): processes that cannot be seen, and
what the log path is (missing, empty, a directory, unreadable, a symlink, rotated or deleted and followed)."""

from __future__ import annotations

from tests.test_readiness_phases import feed, startup
from tui.core.events import HealthResult, LaunchStarted, LogActivity, LogFile, ServerProcess, Tick
from tui.core.explain import evidence
from tui.core.readiness import FIND_GRACE_S, reduce
from tui.core.state import Phase, Readiness
from tui.core.wording import verdict_line

UNSEEN = ServerProcess(alive=False, detail="cannot see", visible=False, owner_uid=0)
CANNOT_SEE = "cannot see the server's processes (owned by uid 0; watch as that user or root)"


def test_processes_that_cannot_be_seen_are_never_gone() -> None:
    s = feed(startup("load_begin"))
    for now in (36005.0, 36005.0 + FIND_GRACE_S + 60, 36005.0 + 600):
        s = reduce(s, UNSEEN, now)
        assert s.phase is Phase.LOADING_WEIGHTS and s.process_alive is None and s.error is None
    assert not s.process_visible and s.process_owner_uid == 0
    assert f"process: {CANNOT_SEE}" in evidence(s)


def test_ready_from_the_log_and_health_says_it_cannot_see() -> None:
    s = reduce(feed(startup("fired_up")), UNSEEN, 36021.0)
    s = reduce(s, HealthResult("/health", "ok", status=200), 36022.0)
    assert s.phase is Phase.READY
    assert verdict_line(s) == f"ready: the log says fired up and /health answers 200; {CANNOT_SEE}"


def test_seeing_them_again_clears_it() -> None:
    s = reduce(feed(startup("load_begin")), UNSEEN, 36005.0)
    s = reduce(s, ServerProcess(alive=True, pids=(7,)), 36006.0)
    assert s.process_visible and s.process_owner_uid is None and s.process_alive is True
    s = reduce(s, ServerProcess(alive=False), 36007.0)
    assert s.phase is Phase.FAILED  # seen, then gone: that is a death


def test_an_unknown_owner_is_said_as_another_user() -> None:
    s = reduce(Readiness(), ServerProcess(alive=False, visible=False), 1.0)
    expected = "process: cannot see the server's processes (owned by another user; watch as that user or root)"
    assert expected in evidence(s)


def test_a_missing_log_is_named_in_the_reason_until_bytes_arrive() -> None:
    s = reduce(Readiness(), LogFile("missing", "/srv/typo.log"), 1.0)
    assert verdict_line(s) == "log file missing: /srv/typo.log"  # what is missing, not "waiting for the first log line"
    s = reduce(s, LogActivity(6, b"hello\n"), 2.0)
    assert verdict_line(s) == "waiting for the first log line" and s.log_file == LogFile("ok", "/srv/typo.log")


def test_each_unreadable_log_has_its_words() -> None:
    words = {
        "empty": "log file empty: /l",
        "directory": "log path is a directory, not a file: /l",
        "permission_denied": "permission denied: /l",
    }
    for status, text in words.items():
        s = reduce(Readiness(), LogFile(status, "/l"), 1.0)
        said = (
            f"{text}; pass the log file inside it"
            if status == "directory"
            else f"waiting for the first log line: {text}"
        )
        assert verdict_line(s) == said and f"log: {text}" in evidence(s)


def test_unreadable_mid_load_is_named_after_the_progress_and_in_a_stall() -> None:
    s = reduce(feed(startup("weights")), LogFile("permission_denied", "/l"), 36010.0)
    assert s.phase is Phase.LOADING_WEIGHTS and verdict_line(s).endswith("; permission denied: /l"), verdict_line(s)
    s = reduce(s, Tick(), 36010.0 + 3600)
    assert (
        s.stall is not None
        and verdict_line(s).startswith("stalled in loading weights")
        and verdict_line(s).endswith("; permission denied: /l")
    )


def test_a_followed_log_is_said_while_loading_not_once_ready() -> None:
    s = reduce(feed(startup("weights")), LogFile("rotated_following", "/l", "/l.1", 42), 36010.0)
    assert verdict_line(s).endswith("; log rotated: the server still writes to /l.1; following it")
    s = feed(startup("fired_up")[len(startup("weights")) :], s)
    s = reduce(s, HealthResult("/health", "ok", status=200), 36030.0)
    assert s.phase is Phase.READY and "rotated" not in verdict_line(s)
    assert "log: log rotated: the server still writes to /l.1; following it" in evidence(s)
    d = reduce(Readiness(), LogFile("deleted_following", "/l", "/proc/42/fd/1", 42), 1.0)
    assert "log: log deleted; following the server's stdout (pid 42)" in evidence(d)


def test_a_symlinked_log_is_warned_with_its_target() -> None:
    s = reduce(Readiness(), LogFile("ok", "/srv/log", symlink="/etc/shadow"), 1.0)
    assert "log: log path /srv/log is a symlink to /etc/shadow" in evidence(s)
    assert verdict_line(s) == "waiting for the first log line"


def test_a_new_launch_keeps_what_describes_the_host_and_the_path() -> None:
    s = reduce(feed(startup("load_begin")), UNSEEN, 36005.0)
    s = reduce(s, LogFile("ok", "/srv/log", symlink="/data/run.log"), 36006.0)
    s = reduce(s, LaunchStarted(), 36007.0)
    assert s.phase is Phase.STARTING and not s.process_visible and s.process_owner_uid == 0
    assert "log: log path /srv/log is a symlink to /data/run.log" in evidence(s)


def test_an_old_log_read_after_the_first_200_is_not_growth_for_a_watcher_that_cannot_see() -> None:
    """Another uid, a finished run's log and a look-alike that answers 200 before the tail's first bytes arrive
    (the race the red-team's look-alike hit): those bytes are what the log held, not a line the probe caused.
    Only bytes after them vouch for the 200, as a live SGLang's access line for the probe does: ready then, not
    at the next /health (up to 30 s later)."""
    from tui.core.events import PortOwner

    s = Readiness().evolve(health_probed=True, health_port=1, log_watched=True, process_watched=True)
    s = reduce(s, HealthResult("/health", "ok", status=200), 100.0)
    s = reduce(s, HealthResult("/model_info", "ok", status=200, detail="m"), 100.0)
    s = reduce(s, LogActivity(5000, b"x" * 5000), 100.5)  # the old log, read after the 200
    s = feed(startup("fired_up"), s, now=100.5)
    s = reduce(s, UNSEEN, 101.0)
    s = reduce(s, PortOwner(1), 101.5)
    assert s.phase is Phase.WARMUP and "the log has shown nothing since /health said 200" in verdict_line(s), (
        verdict_line(s)
    )
    s = reduce(s, LogActivity(5100, b'"GET /health?from=sglang-tui HTTP/1.1" 200 OK\n'), 102.0)  # it grew
    assert s.phase is Phase.READY, verdict_line(s)


def test_a_listener_that_writes_the_followed_log_is_the_server_after_a_rotation() -> None:
    """`mv LOG LOG.1` before the watch found the log's writer: nothing writes LOG any more, so the listener is
    adopted by the port alone, unanchored. The tail follows LOG.1 through the fd of the process that writes it;
    when that is the listener (or one of its processes), the 200 is this server's. A listener that writes no
    followed log stays "no process writes the log" (the look-alike beside a finished run's log)."""
    from tui.core.events import PortOwner

    def watched(log_file: LogFile) -> Readiness:
        s = Readiness().evolve(health_probed=True, health_port=1, log_watched=True, process_watched=True)
        s = reduce(s, LogActivity(5000, b"x" * 5000), 100.0)
        s = feed(startup("fired_up"), s, now=100.0)
        s = reduce(s, log_file, 100.2)
        s = reduce(s, ServerProcess(alive=True, pids=(42,), detail="listener on port 1"), 100.4)
        s = reduce(s, PortOwner(1, 42, "python -m sglang.launch_server", None), 100.5)
        s = reduce(s, HealthResult("/health", "ok", status=200), 101.0)
        return reduce(s, HealthResult("/model_info", "ok", status=200, detail="m"), 101.0)

    assert watched(LogFile("rotated_following", "/l", "/l.1", 42)).phase is Phase.READY
    assert watched(LogFile("deleted_following", "/l", "/proc/42/fd/1", 42)).phase is Phase.READY
    lookalike = watched(LogFile("ok", "/l"))
    assert lookalike.phase is Phase.WARMUP and "no process writes the log" in verdict_line(lookalike), verdict_line(
        lookalike
    )
    other = watched(LogFile("rotated_following", "/l", "/l.1", 77))  # another process writes the followed file
    assert other.phase is Phase.WARMUP and "no process writes the log" in verdict_line(other), verdict_line(other)
