"""`kill -USR1` makes a running sglang-tui print every thread's and task's stack on stderr, and go on
(tui/commands/stack_dump.py): how the suite sees where a command that outlived its bound waits."""

from __future__ import annotations

import signal

from tests.helpers.ports import free_port
from tests.helpers.processes import Cli, PipeLines


def test_usr1_prints_where_each_task_waits_and_the_wait_goes_on(cli: Cli) -> None:
    proc = cli.popen("wait", "local", "--port", str(free_port()), "--timeout", "120", "--missing-log-grace", "120")
    err = PipeLines(proc.stderr)  # type: ignore[arg-type]
    err.wait_for(lambda line: "nothing listens on port" in line)  # running: the handler is in place
    proc.send_signal(signal.SIGUSR1)
    err.wait_for(lambda line: line.startswith("-- Task-"))
    text = err.text()
    assert "sglang-tui: stacks (SIGUSR1)" in text and "Current thread" in text, text
    assert "tui/sources/waiting.py" in text, text  # the wait loop's own task, where it awaits
    assert proc.poll() is None  # it goes on waiting
    proc.terminate()
    proc.wait(30)
