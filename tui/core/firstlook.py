"""Whether a state rests on a look: the log read up to where it was when the tail first looked at it (or the
file's trouble said) and the port looked at once. Before that a state is the watcher's guess ("waiting for the
first log line" over a log that holds a whole launch), and `wait` prints it neither as a line nor as a JSON object:
its first object is what the first look saw."""

from __future__ import annotations

from tui.core.state import Readiness


def log_looked(s: Readiness) -> bool:
    """No log to read, its trouble said (missing, a directory, …), or the bytes the tail's first look found read
    (the look's history: a launch ready for hours is ready in the first state, never replayed from "starting")."""
    if s.log_watched is not True or s.log_file is not None:
        return True
    return s.clock is not None and not s.reading_history


def port_looked(s: Readiness) -> bool:
    """/health itself answered once, or refused (another endpoint's answer is not its; not probed: the process watch
    looked at the port, if it runs)."""
    if s.health_probed is False:
        return s.port_owner is not None or not s.process_watched
    return any(r.endpoint == "/health" for r in s.health)


def first_look_done(s: Readiness) -> bool:
    """The log and the port have each been looked at once (or are not watched), or the link failed (what the look
    saw)."""
    return s.connection == "failed" or (log_looked(s) and port_looked(s))
