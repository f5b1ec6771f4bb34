"""The one registry of user actions: it generates the key bindings, the help screen and the README key table."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from textual.binding import Binding
from textual.keys import _character_to_key  # Textual's own name for a one-character key (what a binding matches)

_KEY_NAMES = {"question_mark": "?", "slash": "/"}

QUIT_WORDS = "Quit (the server keeps running; asks first while a bench runs)"
DEMO_QUIT_WORDS = "Quit (the demo stops its simulated server; asks first while a bench runs)"


@dataclass(frozen=True)
class Action:
    """One user action: binding id, key(s), what it does, and whether it changes the server."""

    id: str  # binding id, e.g. "kill-server" (users may remap keys by id)
    key: str  # Textual key spec; several keys separated by commas ("f,end")
    action: str  # the Textual action name (method `action_<name>` on the app)
    description: str
    short: str = ""  # the footer's label (defaults to the description)
    dangerous: bool = False
    show: bool = True  # shown in the footer
    builtin: bool = False  # bound by Textual itself (listed, not re-bound)
    asks: bool = False  # opens a confirm dialog first without being dangerous (kept with --read-only)

    @property
    def asks_first(self) -> bool:
        return self.dangerous or self.asks

    @property
    def display_key(self) -> str:
        """The keys as a person types them, e.g. `f` / `end`."""
        return " / ".join(f"`{_KEY_NAMES.get(k, k)}`" for k in self.key.split(","))


ACTIONS: tuple[Action, ...] = (
    Action("quit", "q,ctrl+q,ctrl+c", "quit", QUIT_WORDS, "quit"),
    Action("help", "question_mark,f1", "help", "Show the keys and what they do", "help"),
    Action("command-palette", "ctrl+p", "command_palette", "Command palette", show=False, builtin=True),
    Action("follow", "f,end,G", "follow", "Follow the log (jump to the newest line)", "follow"),
    Action("log-down", "j", "log_scroll(1)", "Scroll the log down a line (stops following)", show=False),
    Action("log-up", "k", "log_scroll(-1)", "Scroll the log up a line (stops following)", show=False),
    Action("log-top", "g", "log_top", "Jump to the oldest line kept (stops following)", show=False),
    Action("search", "slash", "search", "Search the log (a regex; esc clears)", "search"),
    Action("search-next", "n", "search_next", "Next match", show=False),
    Action("search-previous", "N", "search_previous", "Previous match", show=False),
    Action(
        "search-filter", "F", "search_filter", "Show only the lines the search matches (again: all lines)", show=False
    ),
    Action("next-problem", "e", "next_problem", "Jump to the next error or warning line", "error", show=False),
    Action("previous-problem", "E", "previous_problem", "Jump to the previous error or warning line", show=False),
    Action(
        "severity-filter",
        "s",
        "severity_filter",
        "Show only errors and warnings, then only errors, then all lines (cycles)",
        "severity",
        show=False,
    ),
    Action("rank-filter", "t", "rank_filter", "Show only one rank's log lines (cycles)", "rank"),
    Action("wrap", "w", "wrap", "Wrap long log lines", "wrap"),
    Action(
        "hide-probes",
        "h",
        "hide_probes",
        "Hide or show sglang-tui's own probe lines (dimmed: /health access and its prefill)",
        "probes",
        show=False,
    ),
    Action(
        "copy",
        "c",
        "copy",
        "Copy the selected log line (or the error line): to the terminal's clipboard (OSC 52) and a file",
        "copy",
    ),
    Action(
        "copy-report",
        "C",
        "copy_report",
        "Copy a Markdown report (verdict, root cause, timeline, GPUs): to the terminal's clipboard and a file",
        show=False,
    ),
    Action(
        "save-log",
        "ctrl+s",
        "save_log",
        "Save the log seen so far to a file under $XDG_STATE_HOME/sglang-tui/logs (the notice names it)",
        show=False,
    ),
    Action("pause", "p", "pause", "Pause or resume the display (data keeps coming)", "pause"),
    Action(
        "process-tree",
        "P",
        "process_tree",
        "Show the server's process tree: PID, state, CPU, RSS, GPU memory (esc closes)",
        "procs",
        show=False,
    ),
    Action(
        "dump",
        "d",
        "dump",
        "Dump every rank's Python stack (py-spy on the host) and name the odd ones; saved to a file",
        "dump",
    ),
    Action("pane-log", "1", "pane('log')", "Focus the log pane; again: maximize it, again: restore", "log", show=False),
    Action(
        "pane-shards",
        "2",
        "pane('shards')",
        "Focus the weights / CUDA graphs / ranks pane; again: maximize, again: restore",
        "shards",
        show=False,
    ),
    Action(
        "pane-gpus", "3", "pane('gpus')", "Focus the GPUs pane; again: maximize, again: restore", "GPUs", show=False
    ),
    Action(
        "pane-health",
        "4",
        "pane('health')",
        "Focus the health / decode pane; again: maximize, again: restore",
        "health",
        show=False,
    ),
    Action(
        "bench",
        "b",
        "bench",
        "Benchmark the ready server: TTFT, tok/s, accept len (asks first; escape stops it)",
        "bench",
        asks=True,
    ),
    Action("bench-stop", "escape", "stop_bench", "Stop a running bench (no request is left running)", show=False),
    Action("restart-server", "r", "restart_server", "Restart the server (asks first)", "restart", dangerous=True),
    Action(
        "terminate-server",
        "T",
        "terminate_server",
        "Terminate the server: SIGTERM its process group (asks first)",
        "terminate",
        dangerous=True,
    ),
    Action(
        "kill-server", "K", "kill_server", "Kill the server: SIGKILL its processes (asks first)", "kill", dangerous=True
    ),
)

DANGEROUS_ACTIONS: frozenset[str] = frozenset(a.action for a in ACTIONS if a.dangerous)

#: The ControlResult/ServerControl name of each dangerous action.
CONTROL_VERBS: dict[str, str] = {
    "restart_server": "restart",
    "terminate_server": "terminate",
    "kill_server": "kill",
}


def by_id(action_id: str) -> Action | None:
    """The registry entry with this id (None for an unknown id)."""
    return next((a for a in ACTIONS if a.id == action_id), None)


def bindings() -> list[Binding]:
    """Textual bindings for every action that the app binds itself."""
    return [Binding(a.key, a.action, a.short or a.description, show=a.show, id=a.id) for a in ACTIONS if not a.builtin]


def visible_actions(read_only: bool, keymap: Mapping[str, str] | None = None) -> tuple[Action, ...]:
    """The actions available in this mode (`--read-only` drops the dangerous ones), with the keys the settings'
    [keys] remap them to (what the help and the key bar show is what to type)."""
    return tuple(remapped(a, keymap) for a in ACTIONS if not (read_only and a.dangerous))


def remapped(a: Action, keymap: Mapping[str, str] | None) -> Action:
    """`a` with its key from `keymap` (action id -> Textual key spec) when it is remapped there."""
    spec = (keymap or {}).get(a.id)
    return replace(a, key=spec) if spec else a


def key_name(key: str) -> str:
    """A key as Textual matches it: `?` and `question_mark` are one key, `ctrl+K` is `ctrl+k`."""
    key = key.strip()
    if len(key) == 1:
        return _character_to_key(key)
    *mods, last = key.split("+")
    return "+".join([*(m.lower() for m in mods), last if len(last) == 1 else last.lower()])


def key_clash(keymap: Mapping[str, str]) -> tuple[str, str, str] | None:
    """The first key two actions would share once `keymap` (action id -> keys) is applied, as (key, the action
    that has it, the action that would take it too; a remapped one when either is), or None."""
    owner: dict[str, str] = {}
    for a in sorted(ACTIONS, key=lambda a: a.id in keymap):  # the remapped ones last: they are the ones named second
        for key in remapped(a, keymap).key.split(","):
            name = key_name(key)
            if name in owner and owner[name] != a.id:
                return key.strip(), owner[name], a.id
            owner[name] = a.id
    return None


def key_table_markdown(read_only: bool = False) -> str:
    """The key table as markdown (README and help screen)."""
    rows = ["| Key | Action | Id | Asks first |", "|---|---|---|---|"]
    for a in visible_actions(read_only):
        rows.append(f"| {a.display_key} | {a.description} | `{a.id}` | {'yes' if a.asks_first else ''} |")
    return "\n".join(rows) + "\n"


if __name__ == "__main__":
    print(key_table_markdown(), end="")
