"""Issue 26 item 12: text from the host or the user never reaches the terminal as raw escapes. A log file's name, a
symlink's target, a typed path or host name echoed back, a discovered server's log: OSC 0 retitles the
terminal, OSC 52 writes its clipboard. Every command's output passes through tui.core.termtext.terminal_safe
(commands/safe_output.py); the TUI's panes, titles and toasts through the same function."""

from __future__ import annotations

import re
from pathlib import Path

from rich.text import Text
from textual.notifications import Notify

from tests.helpers.processes import Cli, Sims
from tests.helpers.sshd import free_port
from tests.helpers.ui_fakes import FakeBatchSource, FakeClock, Step, make_app, play
from tui.core.events import LogFile
from tui.core.exitcodes import EXIT_NOTHING
from tui.core.termtext import terminal_safe
from tui.ui.panes.header import HeaderPane
from tui.ui.text import safe_text

TITLE = "\x1b]0;PWNED\x07"  # OSC 0: retitle the terminal
CLIPBOARD = "\x1b]52;c;cHduZWQ=\x07"  # OSC 52: write "pwned" to the clipboard
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # what must never be printed (tab and newline may)


def raw_in(text: str) -> list[str]:
    return RAW.findall(text)


def test_terminal_safe_marks_every_character_a_terminal_obeys_and_keeps_the_length() -> None:
    evil = f"a{TITLE}b\rc\x9b2Jd\u202eexe.txt\udcffe\tf\ng"
    safe = terminal_safe(evil)
    assert safe == "a?]0;PWNED?b?c?2Jd?exe.txt?e\tf\ng" and len(safe) == len(evil)
    assert terminal_safe("plain — text · ok") == "plain — text · ok"
    styled = Text("ok ")
    styled.append("bad\x1b]52;c;cHduZWQ=\x1b\\ \x9b2J", style="bold")  # Rich itself drops only BEL, BS, CR, …
    safe_styled = safe_text(styled)
    assert safe_styled.plain == "ok bad?]52;c;cHduZWQ=?\\ ?2J" and safe_styled.spans == styled.spans


def test_a_typed_host_name_is_echoed_back_without_its_escapes(cli: Cli) -> None:
    run = cli("wait", f"gpu{TITLE}node.invalid", "--port", "30000", "--timeout", "20", timeout=60)
    assert run.returncode == 4, run.stderr
    assert raw_in(run.stderr) == [] and "gpu?]0;PWNED?node.invalid" in run.stderr


def test_a_typed_log_path_and_a_symlinks_target_are_shown_without_their_escapes(
    tmp_path: Path, sim: Sims, cli: Cli
) -> None:
    where = tmp_path / f"logs{CLIPBOARD}"
    server = sim(path=where, speed=500.0, tp=2, shards=8)
    link = tmp_path / "server.log"
    link.symlink_to(server.log)
    run = cli("wait", "local", "--log", link, "--port", str(server.port), "--timeout", "60", timeout=90)
    assert run.returncode == 0, run.stderr
    assert raw_in(run.stderr) == [] and raw_in(run.stdout) == []
    assert f"is a symlink to {tmp_path}/logs?]52;c;cHduZWQ=?/sim.log" in run.stderr
    # ended by the missing log's own grace, once a look saw it missing (a --timeout of 2 s ran out before the first
    # look came back on a loaded machine: m41)
    missing = cli("wait", "local", "--log", f"{tmp_path}/no{TITLE}such.log", "--port", str(free_port()),
                  "--missing-log-grace", "1", "--timeout", "60", timeout=90)  # fmt: skip
    assert missing.returncode == EXIT_NOTHING, missing.stderr
    assert raw_in(missing.stderr) == [] and f"log file missing: {tmp_path}/no?]0;PWNED?such.log" in missing.stderr


def test_the_discovered_servers_log_is_listed_without_its_escapes(tmp_path: Path, sim: Sims, cli: Cli) -> None:
    """`wait local` with no --port and no --log finds the servers by their titles and names each one's log."""
    server = sim(path=tmp_path / f"d{TITLE}", speed=500.0, tp=2, shards=8)
    run = cli("wait", "local", "--timeout", "60", timeout=90)
    shown = f"log {tmp_path}/d?]0;PWNED?/sim.log"
    assert raw_in(run.stderr) == [] and shown in run.stderr, run.stderr
    # the one server found is followed to ready; with others running on this host, it is a choice (exit 2)
    assert run.returncode == (0 if "found an SGLang server: " in run.stderr else 2), run.stderr
    assert server.alive()


async def test_the_tui_header_and_toasts_get_no_raw_escape() -> None:
    """Textual passes ESC through to the terminal: the panes and the toasts get the marked text."""
    clock, source = FakeClock(), FakeBatchSource()
    app = make_app(source, clock=clock)
    evil = LogFile("missing", f"/var/log/x{TITLE}.log", symlink=f"/tmp/{CLIPBOARD}")
    seen: list[object] = []
    async with app.run_test(size=(160, 48), message_hook=seen.append) as pilot:
        await play(pilot, source, clock, [Step(clock.t + 1, [evil])])
        header = app.query_one(HeaderPane).shown
        assert "/var/log/x?]0;PWNED" in header and "/tmp/?]52;c;cHduZWQ=" in header and raw_in(header) == [], header
        app.notify(f"saved to /tmp/{TITLE} [bold]", title=f"t{CLIPBOARD}")
        await pilot.pause()
    [note] = [m.notification for m in seen if isinstance(m, Notify)]
    assert note.message == "saved to /tmp/?]0;PWNED? [bold]" and note.title == "t?]52;c;cHduZWQ=?"
    assert note.markup is False  # host text is never read as Textual markup either
