"""The one table of exit codes (DESIGN.md), for every command: what each code means, and which codes each
command gives and why. Every command returns these constants; each `--help` epilog and README's table are
generated from (or checked against) this table, so none of them can drift from the code."""

from __future__ import annotations

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_BAD_ARGS = 2
EXIT_STALLED = 3
EXIT_CONNECT = 4
EXIT_CANNOT_SEE = 5
EXIT_NOTHING = 6
EXIT_TIMEOUT = 7
EXIT_INTERRUPTED = 130  # Ctrl-C: the shell's 128 + SIGINT, outside the table (every command, by cli.main)

MEANING: dict[int, str] = {
    EXIT_OK: "done / ready",
    EXIT_FAILED: "failed",
    EXIT_BAD_ARGS: "bad arguments",
    EXIT_STALLED: "stalled",
    EXIT_CONNECT: "cannot connect or authenticate",
    EXIT_CANNOT_SEE: "cannot see the server's processes",
    EXIT_NOTHING: "nothing found",
    EXIT_TIMEOUT: "timed out",
}

_ARGS = "a bad command line or option value (one line says which)"
_CONNECT = "the host cannot be reached, or refuses the key or the user"
_SLURM_NONE = "slurm:JOBID: no such running job, or no SGLang process in it"

#: The codes each command gives, and what each means there (every code a command returns is listed here).
USES: dict[str, dict[int, str]] = {
    "watch": {
        EXIT_OK: "quit (q)",
        EXIT_BAD_ARGS: f"{_ARGS}; several servers found and none chosen",
        EXIT_CONNECT: _CONNECT,
        EXIT_NOTHING: _SLURM_NONE,
    },
    "wait": {
        EXIT_OK: "ready (or serving)",
        EXIT_FAILED: "failed, or stopped (by sglang-tui or by a signal from outside); --launch could not start it",
        EXIT_BAD_ARGS: f"{_ARGS}; a directory as --log; several servers found and no --port; a bad deployment file",
        EXIT_STALLED: "no progress on any signal for longer than the phase allows, the process alive",
        EXIT_CONNECT: _CONNECT,
        EXIT_NOTHING: "the log still missing (or, with no --log, nothing listening on --port) after --missing-log-grace;"
        f" {_SLURM_NONE}",
        EXIT_TIMEOUT: "--timeout passed before a verdict (also while connecting)",
    },
    "stop": {
        EXIT_OK: "stopped: every process of the server is gone and its GPU memory came back",
        EXIT_FAILED: "not stopped: a process is still alive, or GPU memory is still held or not confirmed",
        EXIT_BAD_ARGS: f"{_ARGS}; --port and --log (or config.toml's log) name two different servers (nothing stopped)",
        EXIT_CONNECT: _CONNECT,
        EXIT_CANNOT_SEE: "the server's processes are another user's (nothing stopped; run as that user or root)",
        EXIT_NOTHING: f"no server on --port / --log (nothing stopped); {_SLURM_NONE}",
    },
    "dump": {
        EXIT_OK: "dumped and saved",
        EXIT_FAILED: "could not dump (py-spy missing, ptrace refused), or a process exited during the dump (named)",
        EXIT_BAD_ARGS: _ARGS,
        EXIT_CONNECT: _CONNECT,
        EXIT_CANNOT_SEE: "the server's processes are another user's (run as that user or root)",
        EXIT_NOTHING: "no server process on --port / --log",
    },
    "bench": {
        EXIT_OK: "ran: at least one request succeeded",
        EXIT_FAILED: "the server is not ready, or every request failed",
        EXIT_BAD_ARGS: f"{_ARGS}; a bad --prompts file",
        EXIT_CONNECT: _CONNECT,
        EXIT_TIMEOUT: "the time cap (--timeout) stopped every request before one succeeded",
    },
    "replay": {
        EXIT_OK: "replayed",
        EXIT_BAD_ARGS: f"{_ARGS}; a log that cannot be read; --record that cannot be recorded",
    },
    "history": {
        EXIT_OK: "shown",
        EXIT_BAD_ARGS: f"{_ARGS}; --no-history; a history file that cannot be read",
        EXIT_NOTHING: "no history file yet, no launch recorded (for HOST), or no launch A / B to --compare",
    },
    "probe": {
        EXIT_OK: "--ready: ready (this server's /health 200); --alive: progressing or ready",
        EXIT_FAILED: "failed, or stopped (by sglang-tui or by a signal from outside)",
        EXIT_BAD_ARGS: f"{_ARGS}; a directory as --log; a memo directory that is not private",
        EXIT_STALLED: "no progress on any signal for longer than the phase allows, the process alive",
        EXIT_CONNECT: _CONNECT,
        EXIT_TIMEOUT: "--ready: not ready yet (still starting, or /health not answering now: a wait with no time left)",
    },
    "export": {
        EXIT_OK: "stopped by SIGINT or SIGTERM",
        EXIT_BAD_ARGS: f"{_ARGS}; --textfile that is not a directory; a TARGET given twice",
    },
    "fleet": {
        EXIT_OK: "--once: every server ready; the board quit (q); --json stopped by SIGINT or SIGTERM",
        EXIT_FAILED: "--once: a server failed (the worst row's code: a failure over every other)",
        EXIT_BAD_ARGS: f"{_ARGS}; a bad TARGET or --inventory (one line naming the key); a directory as a log",
        EXIT_STALLED: "--once: a server stalled",
        EXIT_CONNECT: f"--once: a server's host: {_CONNECT}",
        EXIT_NOTHING: "--once: a HOST with no SGLang server running, or a Slurm job that is not running",
        EXIT_TIMEOUT: "--once: a server still starting when --timeout passed (not ready yet)",
    },
    "demo": {
        EXIT_OK: "quit (q)",
        EXIT_FAILED: "the simulated server could not start",
        EXIT_BAD_ARGS: _ARGS,
    },
}

#: `simulate` is the watched server, not the tool: it exits as SGLang's own server does (uvicorn's 3 when the
#: port is taken), and only its command line is checked by the table's 2.
SERVER_CODES: dict[int, str] = {
    0: "the simulated server ended (SIGTERM, a stop)",
    1: "a fault ended it (as SGLang's own exit)",
    EXIT_BAD_ARGS: f"bad arguments: {_ARGS}; a log that cannot be written",
    3: "the port is in use (uvicorn's own exit 3, as SGLang's)",
}


#: Commands that run until a signal and end on it with 0 (Ctrl-C is how they stop, not an interruption).
ENDS_ON_SIGNAL = frozenset({"export"})


def codes(command: str) -> dict[int, str]:
    """The codes `command` gives, each with what it means there."""
    return USES[command]


def epilog(command: str) -> str:
    """The `--help` epilog of `command`: its codes, each with the table's meaning and the command's own words."""
    if command == "simulate":
        rows = [f"  {code}  {words}" for code, words in sorted(SERVER_CODES.items())]
        return "exit codes (the simulated server's, as SGLang's own; not sglang-tui's table):\n" + "\n".join(rows)
    rows = [f"  {code}  {MEANING[code]}: {words}" for code, words in sorted(USES[command].items())]
    if command not in ENDS_ON_SIGNAL:
        rows.append(f"  {EXIT_INTERRUPTED}  interrupted (Ctrl-C)")
    return "exit codes (one table for every command: sglang-tui --help):\n" + "\n".join(rows)


def table_epilog() -> str:
    """The main `--help` epilog: the table itself."""
    return "exit codes, one table for every command:\n" + "\n".join(
        f"  {code}  {words}" for code, words in sorted(MEANING.items())
    )
