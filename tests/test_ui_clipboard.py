"""Issue 23 item 5: `c`/`C` send OSC 52 (wrapped for tmux's or screen's passthrough inside one) and save the text to a
file; the notice says both, never "copied" (no terminal says whether it obeyed)."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from tests.helpers.ui_fakes import FakeBatchSource, FakeClock, FakeControl, make_app, play, startup_failed_oom
from tui.ui import clipboard


def test_osc52_carries_the_text_as_base64_and_no_raw_byte_of_it() -> None:
    text = "line with \x1b]0;title\x07 and ünïcode"
    seq = clipboard.osc52(text)
    assert seq.startswith("\x1b]52;c;") and seq.endswith("\x07")
    assert base64.b64decode(seq[7:-1]).decode() == text and "\x1b]0" not in seq


def test_inside_tmux_the_sequence_also_goes_wrapped_for_passthrough() -> None:
    seq = clipboard.osc52("x")
    assert clipboard.sequences("x", {}) == [seq]
    plain, wrapped = clipboard.sequences("x", {"TMUX": "/tmp/tmux-0/default,1,0"})
    assert plain == seq and wrapped == "\x1bPtmux;\x1b" + seq + "\x1b\\"  # tmux(1): every ESC inside doubled
    assert clipboard.sequences("x", {"STY": "1.pts-0"})[1] == "\x1bP" + seq + "\x1b\\"
    assert clipboard.through({"TMUX": "t"}) == "tmux" and clipboard.through({}) == ""


@pytest.mark.parametrize("tmux", [False, True], ids=["terminal", "tmux"])
async def test_c_and_shift_c_say_what_was_sent_and_where_it_was_saved(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tmux: bool
) -> None:
    if tmux:
        monkeypatch.setenv("TMUX", "/tmp/tmux-0/default,1,0")
    else:
        monkeypatch.delenv("TMUX", raising=False)
    monkeypatch.delenv("STY", raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    source, clock = FakeBatchSource(), FakeClock()
    app = make_app(source, control=FakeControl(), clock=clock)
    async with app.run_test(size=(120, 40)) as pilot:
        await play(pilot, source, clock, startup_failed_oom())
        await pilot.press("c")
        path = tmp_path / "state" / "sglang-tui" / "copied-gpu-node-7.txt"
        assert app.last_copied == path and path.read_text() == app.clipboard == app.state.error.line
        via = "OSC 52, through tmux" if tmux else "OSC 52"
        assert app.notices[-1].startswith(
            f"sent the error line ({len(app.clipboard)} chars) to the terminal's clipboard ({via}); saved to {path}"
        )
        assert ("set-clipboard on" in app.notices[-1]) is tmux  # what tmux needs, said once
        await pilot.press("C")
        report = tmp_path / "state" / "sglang-tui" / "report-gpu-node-7.md"
        assert report.read_text() == app.clipboard and app.clipboard.startswith("## sglang-tui: gpu-node-7")
        assert "copied" not in app.notices[-1] and f"saved to {report}" in app.notices[-1]
        assert "set-clipboard" not in app.notices[-1]


async def test_a_copy_that_cannot_be_saved_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "state"
    blocker.write_text("a file where the directory would be")
    monkeypatch.setenv("XDG_STATE_HOME", str(blocker))
    source, clock = FakeBatchSource(), FakeClock()
    app = make_app(source, control=FakeControl(), clock=clock)
    async with app.run_test(size=(120, 40)) as pilot:
        await play(pilot, source, clock, startup_failed_oom())
        await pilot.press("c")
        assert (
            app.last_copied is None and "not saved to" in app.notices[-1] and "sent the error line" in app.notices[-1]
        )
