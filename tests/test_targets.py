"""TARGET as `probe` and `export` read it (tui.commands.targets): one server, named wherever a HOST goes. Pure."""

from __future__ import annotations

import pytest

from tui.commands.targets import ServerTarget, parse_target


@pytest.mark.parametrize(
    ("text", "port", "log", "want"),
    [
        ("local", None, None, ServerTarget("local", "local", 30000, None)),
        ("local", 8000, "/l.log", ServerTarget("local", "local", 8000, "/l.log")),
        ("gpu1:30001", None, "/l.log", ServerTarget("gpu1:30001", "gpu1", 30001, "/l.log")),
        (
            "me@gpu1:30001:/var/log/s.log",
            9,
            None,
            ServerTarget("me@gpu1:30001:/var/log/s.log", "me@gpu1", 30001, "/var/log/s.log"),
        ),
        ("gpu1:/var/log/s.log", 8000, None, ServerTarget("gpu1:/var/log/s.log", "gpu1", 8000, "/var/log/s.log")),
        ("[::1]:8000", None, None, ServerTarget("[::1]:8000", "::1", 8000, None)),
        ("[fe80::1]:8000:/a b.log", None, None, ServerTarget("[fe80::1]:8000:/a b.log", "fe80::1", 8000, "/a b.log")),
    ],
)
def test_each_form(text: str, port: int | None, log: str | None, want: ServerTarget) -> None:
    assert parse_target(text, port=port, log=log) == want


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("gpu1:abc", "after gpu1: comes a port or an absolute log path"),
        ("gpu1:8000:rel.log", "must be an absolute path"),
        ("gpu1:70000", "port 70000 is not a TCP port"),
        (":8000", "no host before the colon"),
        ("[::1", "an unclosed ["),
        ("slurm:1234", "Slurm jobs are not a target of this command yet"),
        ("login/slurm:1234", "Slurm jobs are not a target of this command yet"),
        ("", "give HOST, HOST:PORT or HOST:PORT:LOG"),
    ],
)
def test_bad_targets_say_what_is_wrong_in_one_line(text: str, words: str) -> None:
    with pytest.raises(ValueError) as err:
        parse_target(text)
    assert words in str(err.value) and "\n" not in str(err.value)
