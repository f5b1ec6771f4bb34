"""Only the tool's own words reach the terminal: a dependency's warnings are kept out, unless asked for (issue 29).

The in-process tests raise warnings attributed to a dependency's module exactly as Python attributes them (the
module of the frame that called `warnings.warn`), inside `catch_warnings` so that pytest's own filters are restored.
The e2e test runs the real command line: whatever today's asyncssh and cryptography print at import, stderr holds
the tool's one line and nothing else.
"""

from __future__ import annotations

import os
import sys
import warnings

import pytest

from tests.helpers.processes import Cli
from tui.commands.dependency_warnings import keep_dependency_warnings_out, warnings_wanted


def _raised(module: str, category: type[Warning]) -> list[warnings.WarningMessage]:
    """What a warning attributed to `module` leaves after the tool's filters are installed."""
    with warnings.catch_warnings(record=True) as seen:
        warnings.resetwarnings()
        warnings.simplefilter("always")
        keep_dependency_warnings_out()
        warnings.warn_explicit("a dependency's own business", category, "x.py", 1, module=module)
    return seen


class CryptographyDeprecationWarning(UserWarning):
    """The shape of cryptography's class (a UserWarning subclass), named so: the real one is not imported here."""


@pytest.mark.parametrize(
    "module",
    ["asyncssh", "asyncssh.crypto.misc", "cryptography.utils", "textual.app", "httpx._client", "httpcore"],
)
@pytest.mark.parametrize("category", [DeprecationWarning, CryptographyDeprecationWarning, FutureWarning])
def test_a_dependencys_warning_is_kept_out(
    module: str, category: type[Warning], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SGLANG_TUI_DEBUG", raising=False)
    monkeypatch.setattr(sys, "warnoptions", [])
    assert _raised(module, category) == []


@pytest.mark.parametrize("module", ["tui.commands.wait", "__main__", "asyncsshx", "my_httpx_plugin"])
def test_the_tools_own_and_other_warnings_still_show(module: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SGLANG_TUI_DEBUG", raising=False)
    monkeypatch.setattr(sys, "warnoptions", [])
    seen = _raised(module, DeprecationWarning)
    assert [str(w.message) for w in seen] == ["a dependency's own business"]


@pytest.mark.parametrize(("debug", "warnoptions"), [("1", []), ("yes", []), ("", ["default"]), ("0", ["error"])])
def test_debug_or_python_switches_show_them(
    debug: str, warnoptions: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SGLANG_TUI_DEBUG", debug)
    monkeypatch.setattr(sys, "warnoptions", warnoptions)
    assert warnings_wanted(os.environ)
    assert len(_raised("asyncssh.crypto.misc", CryptographyDeprecationWarning)) == 1


@pytest.mark.parametrize("debug", ["", "0"])
def test_debug_off_means_off(debug: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SGLANG_TUI_DEBUG", debug)
    monkeypatch.setattr(sys, "warnoptions", [])
    assert not warnings_wanted(os.environ)


def test_an_ssh_error_is_one_line_whatever_the_dependencies_print(cli: Cli) -> None:
    """The real command line with today's installed versions: asyncssh is imported on the way to the error."""
    result = cli(
        "wait",
        "nosuchhost.invalid",
        "--port",
        "30000",
        timeout=60,
        env={"SGLANG_TUI_DEBUG": None, "PYTHONWARNINGS": None},
    )
    assert result.returncode == 4, result.stderr
    assert result.stderr.splitlines() == [result.stderr.strip()], result.stderr
    assert "cannot connect to nosuchhost.invalid" in result.stderr
    assert "Warning" not in result.stderr
