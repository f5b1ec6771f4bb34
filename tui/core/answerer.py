"""Whose /health 200 is it: this server's, something else's on its port, or not known yet.

A 200 counts only when something vouches that this server gave it: the log of this launch (fired up, uvicorn
up, or a log that prints no INFO milestone at all; where a process watch can see, once it found the log's
server alive), the port's listener being one of the server's processes (the process watch: of the log's latest
launch, when several write it), or the identity probe (`/model_info`, SGLang's answer, naming the log's model
when the log names one; with a log watched, only once that log shows this launch: an SGLang answering before
then is a server from before). A listener outside the server's processes (an earlier launch of the same log
included), an identity answer that is not SGLang's, another model, or a log still loading (this server's HTTP
is not up yet) make it something else's. A known forwarder on the port (docker-proxy, socat, `ssh -L`;
tui.core.forwarders), or a listener known as one by what it does (relays_here: it answers with the log's model
and the log shows our own probe), is neither: what it relays is decided by the identity probe (SGLang's answer) and the
log, and the verdict says "behind docker-proxy (pid N)".
"""

from __future__ import annotations

from tui.core.events import HealthResult
from tui.core.fold_window import launch_in_view
from tui.core.names import phase_words
from tui.core.state import Phase, Readiness

IDENTITY_ENDPOINTS = ("/model_info", "/get_model_info")
OURS, FOREIGN, UNKNOWN = "ours", "foreign", "unknown"
# The log's latest main milestone that shows this launch's HTTP is up (or its schedulers are done).
LOG_UP_KINDS = frozenset(
    {"uvicorn_started", "app_startup_complete", "uvicorn_running", "warmup_request", "fired_up", "max_tokens",
     "startup_timings", "http_access", "health_access", "request_log", "eplb_begin", "eplb_end", "retract"}
)  # fmt: skip
LOG_FIRST_READ_S = 3.0  # how long an empty watched log may just be unread yet
AUTH_STATUSES = (401, 403)  # --api-key guards /model_info (never /health): SGLang's, but it cannot say whose
LOADING_PHASES = (Phase.INIT, Phase.LOADING_WEIGHTS, Phase.KV_CACHE, Phase.CUDA_GRAPH)


def identity(s: Readiness) -> HealthResult | None:
    """The latest identity probe result."""
    return next((r for r in reversed(s.health) if r.endpoint in IDENTITY_ENDPOINTS), None)


def port_words(s: Readiness) -> str:
    """ "port 30000" (the probed port, else the listener's, else the log's), or "the port"."""
    port = s.health_port
    if port is None and s.port_owner is not None:
        port = s.port_owner.port
    if port is None:
        port = s.server.port
    return f"port {port}" if port is not None else "the port"


def answerer(s: Readiness) -> tuple[str, str]:
    """(OURS | FOREIGN | UNKNOWN, why): who gave the /health 200 (asked only while health_ready)."""
    who, why = _answerer(s)
    relay = behind(s)
    return (who, f"{why}, {relay}") if relay and who == OURS else (who, why)


def behind(s: Readiness) -> str:
    """ "behind docker-proxy (pid 812)" when a known forwarder holds the port, "behind PID 812 (relay)" when a
    listener is known as one by what it does (relays_here), else ""."""
    owner = s.port_owner
    if owner is not None and owner.pid is not None and relays_here(s):
        return f"behind PID {owner.pid} (relay)"
    if owner is None or not owner.forwarder:
        return ""
    return f"behind {owner.forwarder}" + (f" (pid {owner.pid})" if owner.pid is not None else "")


def relays_here(s: Readiness) -> bool:
    """A forwarder known by behaviour, whatever its name: a listener that is not one of the server's processes
    (nor an earlier launch of the log), whose identity answer is SGLang's naming the log's model, and whose
    requests this server's log shows (our own `?from=sglang-tui` probe, read live). A foreign server answering
    another model, or one whose log never shows the probe, stays something else."""
    owner = s.port_owner
    if owner is None or owner.ours is not False or owner.pid is None or owner.earlier or owner.forwarder:
        return False
    ident = identity(s)
    model = s.server.model
    if ident is None or ident.outcome != "ok" or not ident.model_path or not model:
        return False
    return same_model(ident.model_path, model) and s.probe_logged_at is not None


def _answerer(s: Readiness) -> tuple[str, str]:
    owner = s.port_owner
    if owner is not None and owner.ours is False and owner.pid is not None and not relays_here(s):
        command = f" ({printable(owner.command)})" if owner.command else ""
        if owner.earlier:
            return FOREIGN, f"PID {owner.pid}{command} listens there: an earlier launch in the same log, not its latest"
        return FOREIGN, f"PID {owner.pid}{command} listens there, not one of the server's processes"
    ident = identity(s)
    if ident is not None:
        if ident.outcome == "garbage":
            detail = printable(ident.detail) or "no model_path"
            return FOREIGN, f"its {ident.endpoint} answer is not SGLang's ({detail})"
        if ident.outcome == "http_error" and ident.status not in AUTH_STATUSES:
            return FOREIGN, f"it answers {ident.endpoint} with HTTP {ident.status}: not an SGLang server"
        model = s.server.model
        if ident.outcome == "ok" and ident.model_path and model and not same_model(ident.model_path, model):
            return FOREIGN, f"it serves {printable(ident.model_path)}; the log launches {s.server.model}"
    if owner is not None and owner.ours is True:
        return OURS, "the listener is one of the server's processes"
    relayed = owner is not None and (bool(owner.forwarder) or relays_here(s))
    if owner is not None and relayed and not _names_sglang(ident):
        # what a forwarder relays is told by the identity probe and the log, never by the listener
        asked = f"{ident.endpoint}: {ident.outcome}" if ident is not None else "no identity answer yet"
        return UNKNOWN, f"{owner.forwarder} (pid {owner.pid}) relays the port; asking what answers behind it ({asked})"
    m = s.latest_milestone
    serving = s.decode is not None and not launch_in_view(s)  # a window of the log that shows it decoding
    log_up = s.log_ready or (m is not None and m.kind in LOG_UP_KINDS) or serving
    vouching = log_up or (m is None and (s.shards is not None or s.capture is not None))
    if (
        vouching
        and owner is not None
        and owner.ours is None
        and owner.pid is not None
        and not relayed
        and _writer_watched(s)
        and not _listener_writes_the_followed_log(s, owner.pid)
    ):
        command = f" ({printable(owner.command)})" if owner.command else ""
        return FOREIGN, f"PID {owner.pid}{command} listens there, and no process writes the log (a finished run's log?)"
    if vouching and finding_the_writer(s):
        return UNKNOWN, "finding the server that writes the log first (a finished run's log vouches for nothing)"
    if vouching and log_silent_unseen(s):
        return UNKNOWN, (
            "the log has shown nothing since /health said 200, and the server's processes cannot be "
            "seen: a finished run's log vouches for nothing"
        )
    if log_up and serving and not s.log_ready and (m is None or m.kind not in LOG_UP_KINDS):
        return OURS, "the log shows this server decoding (no launch in view: attached mid-run)"
    if log_up:
        return OURS, "the log shows this launch's HTTP up"
    if m is None and (s.shards is not None or s.capture is not None):
        return OURS, "the log shows this launch (no INFO lines: --log-level warning)"
    if s.phase in LOADING_PHASES and not rank_lines_only(s):
        return FOREIGN, f"/health says 200 while the log shows {phase_words(s.phase)}, before this server's HTTP is up"
    if ident is not None and ident.outcome == "ok" and s.log_watched and _log_not_read_yet(s):
        return UNKNOWN, "reading the log first"
    if ident is not None and ident.outcome == "ok" and s.log_watched:
        # `launch … > LOG & wait`: while the new launch imports torch, the previous server still answers
        names = printable(ident.model_path or "a model")
        shown = "has not shown this launch's HTTP up" if s.launched else "shows no launch"
        return FOREIGN, f"{ident.endpoint} names {names}, but the log {shown} yet (a server from before?)"
    if ident is not None and ident.outcome == "ok":
        return OURS, f"{ident.endpoint} names {printable(ident.model_path or 'a model')}"
    if ident is not None and ident.status in AUTH_STATUSES:
        guarded = f"{ident.endpoint} needs the API key (HTTP {ident.status})"
        return UNKNOWN, f"{guarded}, and the log does not show this launch yet"
    if ident is not None:
        return UNKNOWN, f"{ident.endpoint}: {ident.outcome}; the log does not show this launch yet"
    return UNKNOWN, "the log does not show this launch yet"


def _listener_writes_the_followed_log(s: Readiness, listener: int) -> bool:
    """The log was moved or deleted under its writer and is followed through that writer's fd: no process writes
    the path any more (the watch finds none), but the listener, or a process the watch counts with it, writes
    the file followed."""
    followed = s.log_file
    if followed is None or followed.status not in ("rotated_following", "deleted_following") or followed.pid is None:
        return False
    return followed.pid == listener or followed.pid in s.process_pids


def rank_lines_only(s: Readiness) -> bool:
    """The phase is init only because a window of the log shows ranks' lines of no startup kind: that says the
    ranks run, not that HTTP is not up yet (a serving server's rotated log reads so)."""
    m = s.mid_run
    return m is not None and m.kind == "rank" and s.phase is m.phase and s.latest_milestone is None


def _names_sglang(ident: HealthResult | None) -> bool:
    """The identity probe answered as SGLang does (a model_path, or the API key's 401/403 on /model_info)."""
    if ident is None:
        return False
    return ident.outcome == "ok" or (ident.outcome == "http_error" and ident.status in AUTH_STATUSES)


def finding_the_writer(s: Readiness) -> bool:
    """A process watch that can see runs and has not found the log's server alive (yet): the log alone does not
    vouch for a 200 then. Not found within the grace is dead (readiness fails it); what it cannot see, the log
    and the identity probe decide."""
    return _writer_watched(s) and s.process_alive is not True


def log_silent_unseen(s: Readiness) -> bool:
    """Where the server's processes cannot be seen (another uid), the log vouches for a 200 only once it grew
    after that 200 (a live SGLang logs the probe's request; a finished run's log stays as it was). The watch's
    first bytes are what the log held already, even when they arrive after the 200: they are not growth."""
    if s.process_watched is not True or s.log_watched is not True or s.process_visible:
        return False
    if s.health_ok_since is None or s.log_grew_at is None:
        return True
    return s.log_grew_at <= max(s.health_ok_since, s.log_read_at or s.health_ok_since)


def _writer_watched(s: Readiness) -> bool:
    """A process watch that can see looks for the writer of a watched log."""
    return s.process_watched is True and s.log_watched is True and s.process_visible


def _log_not_read_yet(s: Readiness) -> bool:
    """The first moments of a watch, before the tail delivered a byte (a large log is searched for its last
    launch first): an empty log is not yet known to be empty."""
    if s.launched or s.log_offset > 0 or s.first_seen_at is None:
        return False
    return s.updated_at - s.first_seen_at < LOG_FIRST_READ_S


def printable(text: str, limit: int = 160) -> str:
    """Text from the host (a command line, an HTTP body) made safe for a terminal: no control characters."""
    clean = "".join(c if c.isprintable() else "?" for c in text[: limit + 1])
    return clean if len(clean) <= limit else clean[:limit] + "…"


def same_model(a: str, b: str) -> bool:
    return a.rstrip("/") == b.rstrip("/")
