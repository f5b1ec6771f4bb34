"""Which of restart, terminate and kill can work now, and the words for each: the footer shows only those that can,
a key whose action cannot work says why in one line instead of opening a dialog, and the dialog says what will
really happen (restart on a stopped server starts it; nothing is offered to stop a server that is gone)."""

from __future__ import annotations

from dataclasses import dataclass

from tui.core.remedy import Remedy, remedy
from tui.core.state import Readiness
from tui.ui.panes.keybar import key_for

VERBS = ("restart", "terminate", "kill")
ACTION_IDS = {"restart": "restart-server", "terminate": "terminate-server", "kill": "kill-server"}


@dataclass(frozen=True)
class Offer:
    """What decides the dangerous keys: the mode, the control channel, the launch command, the process watch."""

    read_only: bool
    has_control: bool
    relaunch: str | None  # the command restart starts the server with (--launch); None: it cannot start one
    process_alive: bool | None  # None: the process watch has not said yet (the stop then finds it when run)
    process_visible: bool = True

    @classmethod
    def of(cls, state: Readiness, *, read_only: bool, has_control: bool, relaunch: str | None) -> Offer:
        return cls(read_only, has_control, relaunch, state.process_alive, state.process_visible)

    @property
    def stopped(self) -> bool:
        """No process of the server runs (the process watch saw them all gone)."""
        return self.process_alive is False and self.process_visible


def refusal(verb: str, offer: Offer) -> str | None:
    """None when `verb` can work now; else one line that says why not, and what would."""
    if offer.read_only:
        return "read-only: restart, terminate and kill are off"
    if not offer.has_control:
        return "no control channel for this server"
    if verb == "restart":
        if offer.relaunch is None:
            return (
                "restart needs --launch CMD (the command that starts the server): without it sglang-tui can stop "
                f"the server ({key_for('terminate-server')}, {key_for('kill-server')}) but not start it again"
            )
        return None
    if not offer.process_visible:
        return f"nothing to {verb} from here: the server's processes are another user's (watch as that user or root)"
    if offer.stopped:
        again = f" ({key_for('restart-server')} starts it again)" if offer.relaunch else ""
        return f"nothing to {verb}: no server process is running{again}"
    return None


def offered(offer: Offer) -> dict[str, str]:
    """The footer's dangerous entries now: action id -> its word ("start" for restart when nothing runs)."""
    return {ACTION_IDS[verb]: word(verb, offer) for verb in VERBS if refusal(verb, offer) is None}


def word(verb: str, offer: Offer) -> str:
    return "start" if verb == "restart" and offer.stopped else verb


def title(verb: str, offer: Offer) -> str:
    """The dialog's question."""
    if verb == "restart":
        return "Start the server?" if offer.stopped else "Restart the server?"
    if verb == "terminate":
        return "Terminate the server (SIGTERM to its process group)?"
    return "Kill the server (SIGKILL to all its processes)?"


def remedy_change(state: Readiness, offer: Offer) -> Remedy | None:
    """The failure's remedy when a restart can start the server with its edit of --launch CMD (tui/core/remedy.py),
    else None (no remedy, nothing it changes, or no --launch to edit)."""
    if offer.relaunch is None:
        return None
    found = remedy(state)
    if found is None or found.command is None or found.command == offer.relaunch:
        return None
    return found


def change_lines(change: Remedy) -> list[str]:
    """The dialog's lines for a restart with a remedy: what changes, from where, and the exact new command."""
    lines = [f"why:     {change.text}"]
    lines += [f"change:  {c.flag} {c.value}" + (f" (was {c.was})" if c.was is not None else "") for c in change.changes]
    lines.append(
        f"from:    {'SGLang, in the log' if change.source == 'log' else 'the known-causes table'}: {change.ref}"
    )
    lines.append(f"command: {change.command}")
    return lines


def change_comment(change: Remedy) -> str:
    """The difference between --launch CMD and the remedy's command, as sh comments (`c` in the dialog)."""
    lines = [
        "# restart with this change (" + ("SGLang's own suggestion" if change.source == "log" else "known cause") + ")"
    ]
    lines += [f"#   {c.flag}: {c.was if c.was is not None else '(not given)'} -> {c.value}" for c in change.changes]
    return "\n".join(lines)


def will(verb: str, offer: Offer, change: Remedy | None = None) -> str:
    """What the action will do, in one line (the dialog's `will:`); the exact commands are one key away."""
    if verb == "restart":
        launch = change.command if change is not None and change.command else offer.relaunch
        start = f"start it with {'the changed command' if change is not None else '--launch'}: {short_command(launch or '')}"
        if offer.stopped:
            return f"{start} (none runs now: nothing to stop first)"
        return f"SIGTERM to its process group, wait for every process to go (SIGKILL what stays), then {start}"
    if verb == "terminate":
        return "SIGTERM to its process group; what outlives the grace period is killed and listed, GPU memory checked"
    return "SIGKILL to every process of the server at once (no clean shutdown); GPU memory is checked after"


SHORT_COMMAND = 80  # the launch command's words shown in the dialog's one line (c there shows it whole)


def short_command(command: str) -> str:
    """The command's first words up to SHORT_COMMAND characters, "…" for the rest (a venv's long path: its name)."""
    words = command.split()
    if words and "/" in words[0]:
        words[0] = words[0].rsplit("/", 1)[1]
    shown = ""
    for i, word in enumerate(words):
        if len(shown) + len(word) + 1 > SHORT_COMMAND:
            return shown + (" …" if i < len(words) else "")
        shown = f"{shown} {word}" if shown else word
    return shown
