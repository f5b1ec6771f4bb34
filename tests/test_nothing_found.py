"""What is missing, said at once (issue 23, item 7): the words (core/explain.nothing_found), the header's word,
`wait`'s exit-6 rule after --missing-log-grace, and argparse's one-line errors. Pure: no process is started."""

from __future__ import annotations

import pytest

from tui.cli import main
from tui.commands.wait import Reporter
from tui.core.events import HealthResult, LogActivity, LogFile, PortOwner, ServerProcess
from tui.core.exitcodes import EXIT_NOTHING
from tui.core.explain import nothing_found
from tui.core.firstlook import first_look_done
from tui.core.readiness import reduce
from tui.core.state import Readiness
from tui.core.wording import ended_line, verdict_line
from tui.sources.waiting import nothing_found_verdict
from tui.ui.labels import phase_label

REFUSED = HealthResult("/health", "refused", detail="connection refused")


def watching(*, log: bool) -> Readiness:
    """The first state `wait`/the TUI build: /health probed on port 1, the processes watched, a log or none."""
    return Readiness.of(
        health_probed=True, health_port=1, log_watched=log, process_watched=True, connection="connected"
    )


def test_no_log_and_nothing_listening_is_said_as_such() -> None:
    s = reduce(watching(log=False), REFUSED, 1.0)
    assert verdict_line(s) == "nothing listens on port 1 and no log was given"
    assert phase_label(s) == "NOTHING LISTENS"


def test_a_missing_log_is_the_headline_and_names_the_port_too() -> None:
    s = reduce(watching(log=True), LogFile("missing", "/srv/typo.log"), 1.0)
    assert verdict_line(s) == "log file missing: /srv/typo.log" and phase_label(s) == "LOG MISSING"
    s = reduce(s, REFUSED, 2.0)
    assert verdict_line(s) == "log file missing: /srv/typo.log; nothing listens on port 1"


def test_anything_of_the_server_ends_it() -> None:
    missing = reduce(reduce(watching(log=True), LogFile("missing", "/l"), 1.0), REFUSED, 1.0)
    assert nothing_found(missing)
    # the file appears (`launch … > log &`)
    assert not nothing_found(reduce(missing, LogActivity(6, b"hello\n"), 2.0))
    # a process alive or /health's 200 while the log stays missing: the missing log is still the verdict (a typo
    # in --log never waits forever on a server whose log it cannot see), named first (issue 30)
    alive = nothing_found(reduce(missing, ServerProcess(alive=True, pids=(7,)), 2.0))
    assert alive == "log file missing: /l; nothing listens on port 1"  # /health was refused: it does not listen
    answers = nothing_found(reduce(missing, HealthResult("/health", "ok", status=200), 2.0))
    assert answers == "log file missing: /l (a server answers on port 1: is the path right?)"
    # something listens on the port, no log: not "nothing" (the verdict is the answerer's)
    listening = reduce(watching(log=False), HealthResult("/health", "starting", status=503), 1.0)
    assert not nothing_found(listening) and phase_label(listening) == "STARTING"


def test_no_health_rests_on_the_process_watchs_port_owner() -> None:
    s = Readiness.of(health_probed=False, log_watched=False, process_watched=True)
    assert not nothing_found(s) and not first_look_done(s)  # the watch has not looked at the port yet
    s = reduce(s, PortOwner(port=1), 1.0)
    assert nothing_found(s) == "nothing listens on port 1 and no log was given" and first_look_done(s)


def test_wait_gives_up_with_exit_6_only_after_the_grace() -> None:
    s = reduce(watching(log=True), LogFile("missing", "/l"), 1.0)
    assert nothing_found_verdict(s, since=1.0, now=30.9, grace=30.0) is None
    found = nothing_found_verdict(s, since=1.0, now=31.0, grace=30.0)
    assert found is not None and found.code == EXIT_NOTHING == 6
    assert ended_line(found, s) == "nothing found: log file missing: /l (for 30s, --missing-log-grace)"
    assert nothing_found_verdict(s, since=None, now=31.0, grace=30.0) is None  # not missing since any time
    assert nothing_found_verdict(s, since=1.0, now=99.0, grace=None) is None  # no rule (the TUI)


class Lines:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def write(self, text: str) -> None:
        self.lines += [line for line in text.splitlines() if line]

    def flush(self) -> None:
        pass


def test_the_first_progress_line_names_what_the_first_look_found() -> None:
    err = Lines()
    reporter = Reporter(False, err=err, grace=30.0)  # type: ignore[arg-type]
    s = watching(log=True)
    reporter.update(s, 0.1)
    assert err.lines == []  # not "waiting for the first log line" a moment before "log file missing"
    s = reduce(reduce(s, LogFile("missing", "/srv/typo.log"), 0.2), REFUSED, 0.3)
    reporter.update(s, 0.3)
    assert err.lines == [
        "[  0.3s] starting · log file missing: /srv/typo.log; nothing listens on port 1 · exit 6 after 30s if "
        "nothing turns up (--missing-log-grace)"
    ]


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (["wait", "local", "--port", "x"], "sglang-tui wait: --port: not a port number: 'x' (try sglang-tui wait --help)"),
        (["wait", "local", "--frob"], "sglang-tui wait: unrecognized arguments: --frob (try sglang-tui wait --help)"),
        (["wait", "local", "--timeout", "soon"], "sglang-tui wait: --timeout: not a number: 'soon' (try sglang-tui wait --help)"),
        (
            ["wait", "local", "--missing-log-grace", "-1"],
            "sglang-tui wait: --missing-log-grace: not 0 or more seconds: '-1' (try sglang-tui wait --help)",
        ),
        (["stop", "local", "--port"], "sglang-tui stop: --port: expected one argument (try sglang-tui stop --help)"),
        (["wait"], "sglang-tui wait: give a HOST (or several, node 0 first), or --deployment FILE (try sglang-tui wait --help)"),
    ],
)  # fmt: skip
def test_a_bad_command_line_is_one_line_with_no_usage_block(
    argv: list[str], line: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))  # no settings file of the user's
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    out, err = capsys.readouterr()
    assert exit_.value.code == 2 and out == "" and err == line + "\n"
