"""What the sources other than the log report: log bytes and the log file, HTTP probes, the process watch and the port owner, host activity, the connection, and a source's own crash."""

from __future__ import annotations

from dataclasses import replace

from tui.core import activity as host_activity
from tui.core import clocks, freshness
from tui.core.answerer import same_model
from tui.core.events import (
    ConnectionState,
    HealthResult,
    HostActivity,
    LogActivity,
    LogFile,
    LogLook,
    PortOwner,
    ProbeLogged,
    ServerInfoAnswer,
    ServerProcess,
    SourceFailed,
    Tick,
)
from tui.core.explain import PROCESS_EXITED, from_processes, main_exited_line, rank_exited_line
from tui.core.find_grace import not_found_yet
from tui.core.fold_launch import fresh_launch, stopped, stopped_by_us, stopped_from_outside
from tui.core.fold_phase import advance, fail, maybe_ready
from tui.core.fold_ranks import map_ranks
from tui.core.state import (
    ErrorInfo,
    Phase,
    Readiness,
)

HTTP_UP_ENDPOINTS = frozenset({"/v1/models", "/model_info", "/get_model_info", "/server_info", "/get_server_info"})


HTTP_ANSWERS = frozenset({"ok", "starting", "http_error"})


def on_log_activity(s: Readiness, ev: LogActivity, now: float) -> Readiness:
    if ev.offset == s.log_offset and not ev.data:
        return s
    if ev.data and s.log_file is not None and s.log_file.status in ("missing", "empty"):
        s = s.evolve(log_file=replace(s.log_file, status="ok"))  # bytes arrived: it is neither any more
    read = s.log_read_at if s.log_read_at is not None or not ev.data else now
    clock = s.clock
    if clock is not None and clock.history_at is not None and clocks.history_bytes(clock, ev.offset):
        # bytes written before the look (read at attach or after a reconnect): they grew the log at its mtime;
        # the progress their lines showed was folded from them already
        written = min(now, clock.history_at)
        grew = clocks.later(s.log_grew_at, written) if ev.data else s.log_grew_at
        s = s.evolve(log_offset=ev.offset, log_grew_at=grew, log_read_at=read)
        if s.last_progress_at is None or s.last_progress_at < written:
            s = s.evolve(
                last_progress_at=written,
                last_progress=s.last_progress or "log bytes",
                last_progress_logged=True,
                last_progress_log=None,
            )
    else:
        s = s.evolve(
            log_offset=ev.offset,
            last_progress_at=now,
            last_progress="log bytes",
            last_progress_logged=True,
            last_progress_log=None,
            log_grew_at=now if ev.data else s.log_grew_at,
            log_read_at=read,
        )
    if s.phase is Phase.FAILED and s.failed_log_offset is None:
        # the failure's line came in these bytes (its events are folded before them): it lies before this offset
        return retry_in_the_log(s.evolve(failed_log_offset=ev.offset), now)
    # the bytes may be what vouches for a /health 200 already in (another uid: the log grew after it): ready now,
    # not at the next /health, up to 30 s later (once a look's bytes are all read)
    return maybe_ready(s, None, None, now, logged=False) if s.health_ready else s


def on_log_look(s: Readiness, ev: LogLook, now: float) -> Readiness:
    """The tail's look at the file: the log's clock on ours, and whether the events that follow are history. A file
    with bytes was last written at its mtime: the log's last progress is no older, before a byte is read."""
    s = s.evolve(clock=clocks.learn(s.clock, ev), reading_history=not ev.live)
    if ev.live:  # the look's bytes are read: what waited on them (a /health 200) decides now
        s = maybe_ready(s, None, None, now, logged=False)
    written = s.clock.history_at if s.clock is not None else None
    if ev.end <= 0 or written is None or (s.last_progress_at is not None and s.last_progress_at >= written):
        return s
    return s.evolve(
        last_progress_at=min(now, written),
        last_progress=s.last_progress or "log bytes",
        last_progress_logged=True,
        last_progress_log=None,
    )


def on_log_file(s: Readiness, ev: LogFile, now: float) -> Readiness:
    """What the log path is: a fact for the verdict; it changes no phase."""
    return s.evolve(log_file=ev)


def on_health(s: Readiness, ev: HealthResult, now: float) -> Readiness:
    results = tuple(r for r in s.health if r.endpoint != ev.endpoint) + (ev,)
    checked = tuple(c for c in s.health_checked_at if c[0] != ev.endpoint) + ((ev.endpoint, now),)
    reachable = any(http_answer(r) for r in results)
    s = s.evolve(health=results, health_checked_at=checked, health_reachable=reachable)
    if ev.endpoint == "/health":
        since = (s.health_ok_since if s.health_ready else now) if ev.outcome == "ok" else None
        s = s.evolve(health_ready=ev.outcome == "ok", health_ok_since=since)
    if ev.outcome == "ok" and ev.endpoint in HTTP_UP_ENDPOINTS and s.phase is Phase.STARTING and not s.log_watched:
        # uvicorn is up: warmup at most, never ready (with a log watched, the log decides the phase: what
        # answers before it shows a launch may be a server from before)
        s = advance(s, Phase.WARMUP, None, None, now, logged=False)
    return maybe_ready(s, None, None, now, logged=False)


def on_server_info(s: Readiness, ev: ServerInfoAnswer, now: float) -> Readiness:
    """The one /server_info read: the version (what answers knows it best) and 0.5.23's startup_time figures.
    An answer naming another model is not this launch's (the identity probe decides whose the 200 is)."""
    s = s.evolve(server_info=ev.outcome)
    if ev.outcome != "ok":
        return s
    if ev.model_path and s.server.model and not same_model(ev.model_path, s.server.model):
        return s.evolve(server_info="foreign")
    server = replace(s.server, version=ev.version) if ev.version and ev.version != s.server.version else s.server
    return s.evolve(server=server, startup_time=ev.startup_time or s.startup_time)


def http_answer(r: HealthResult) -> bool:
    return r.outcome in HTTP_ANSWERS or (r.outcome == "garbage" and r.status is not None)


def on_activity(s: Readiness, ev: HostActivity, now: float) -> Readiness:
    """A sample of what the processes do beyond the log: anything that moved is progress (issue 13)."""
    activity = host_activity.fold(s.activity, ev, now, named=s.jit_named)
    if activity.moved:
        return s.evolve(
            activity=activity,
            last_progress_at=now,
            last_progress=activity.moved,
            last_progress_logged=False,
            last_progress_log=None,
        )
    return s.evolve(activity=activity)


def on_process(s: Readiness, ev: ServerProcess, now: float) -> Readiness:
    """No process of the server left: failed in any phase (not stalled, and not ready whatever the log said).
    One of its SGLang-titled processes gone while the rest lives (a scheduler rank died: 0.5.9 keeps serving
    /v1/models without it, but /health hangs): failed too. A failed launch whose log has a writer that has
    not written yet (`launch … >> LOG` after a crash): a new launch is coming, so the old failure is not the
    verdict.

    Only `alive is False` from a watch that can see the processes means dead; an unseen process is unknown.
    """
    s = freshness.on_process_report(s.evolve(process_checked_at=now))
    if not ev.visible:  # what cannot be seen is unknown, never gone: readiness rests on the log and /health
        return s.evolve(process_alive=None, process_pids=(), process_visible=False, process_owner_uid=ev.owner_uid)
    if ev.alive is None:  # a watch that cannot tell: unknown, never dead
        return s.evolve(process_alive=None, process_pids=ev.pids)
    if not s.process_visible:
        s = s.evolve(process_visible=True, process_owner_uid=None)
    if ev.activity is not None and ev.alive:
        s = on_activity(s, ev.activity, now)
    if not ev.alive and not_found_yet(s, now):
        return s.evolve(process_alive=None, process_pids=())  # unknown, not gone: it may just not be found yet
    lost = tuple((pid, title) for pid, title in s.process_titled if pid not in ev.pids) if ev.alive else ()
    orphaned = main_gone(ev)
    moved = ev.pids != s.process_pids
    s = s.evolve(
        process_alive=ev.alive,
        process_pids=ev.pids,
        process_titled=ev.titled,
        quiet_writers=ev.quiet_writers,
        quiet_log_size=ev.quiet_log_size,
    )
    if moved and ev.pids and s.gpus is not None and s.gpus.error is None and s.gpus.gpus:
        s = s.evolve(ranks=map_ranks(s, s.gpus))  # the server's own pids decide a same-titled bystander out now
    if ev.alive and ev.quiet_writers and s.phase is Phase.FAILED:
        return retry_in_the_log(s, now)
    if ev.alive and not ((lost or orphaned) and (s.launched or s.timeline)):
        return maybe_ready(s, None, None, now, logged=False)  # --no-health: the log's fired up waits for a live process
    if not (s.launched or s.timeline) or s.phase is Phase.FAILED:
        return s
    if stopped_by_us(s, now) and s.last_control is not None:
        return stopped(s, s.last_control.action, now)
    if s.shutdown is not None:  # the log said a signal stopped it, and we sent none
        return stopped_from_outside(s, s.shutdown.line, s.shutdown.at, None, now, logged=False)
    if orphaned and ev.main_gone is not None:  # before any rank's exit: they go because the launcher went
        line = main_exited_line(ev.main_gone, ev.titled)
    else:
        line = rank_exited_line(lost) if lost else PROCESS_EXITED
    return fail(s.evolve(error=ErrorInfo(kind="other", line=line, root_cause=False)), None, None, now, logged=False)


def main_gone(ev: ServerProcess) -> bool:
    """The server's main process is gone and only SGLang-titled processes of it live (no launcher, no HTTP): the
    server is gone even though they run. SGLANG_EARLY_FORKSERVER=1's ranks exit by themselves a second later, so
    their exits are not ranks that died; an `sh -c` that ended while the launcher it started runs is not this
    (the launcher bears no SGLang title)."""
    titled = {pid for pid, _ in ev.titled}
    return bool(ev.alive and ev.main_gone is not None and titled and titled >= set(ev.pids))


def retry_in_the_log(s: Readiness, now: float) -> Readiness:
    """A failure the log showed, while a live process of the server holds that log open and had written nothing
    to it when found, with every byte up to the failure's already there (`launch … >> LOG` after a crash): a
    retry that has not printed its first line yet (its server_args come later, as a new launch). The old
    failure is history: start afresh, the process facts kept."""
    error = s.error
    if (
        s.phase is not Phase.FAILED
        or error is None
        or error.stopped_by
        or from_processes(error)
        or s.process_alive is not True
        or not s.quiet_writers
        or s.quiet_log_size is None
        or s.failed_log_offset is None
        or s.failed_log_offset > s.quiet_log_size  # it may be the retry's own failure
    ):
        return s
    pids = ", ".join(map(str, s.quiet_writers))
    why = f"a new launch holds the log open (pid {pids}) and had not written to it yet"
    fresh = fresh_launch(s, None, None, now, why=why, counts=False, from_log=False)
    return fresh.evolve(proc=s.proc)


def on_port_owner(s: Readiness, ev: PortOwner, now: float) -> Readiness:
    """Who listens on the port: a listener outside the server's processes makes a /health 200 not ours. Once that
    listener is gone and nothing listens, the 200 it gave says nothing: ready waits for the next one. (A listener
    that is the server's in the next report may have given it: the report lags the port.)"""
    was = s.port_owner
    if s.health_ready and was is not None and was.ours is False and was.pid is not None and ev.pid is None:
        s = s.evolve(health_ready=False, health_ok_since=None)
    return maybe_ready(s.evolve(port_owner=ev), None, None, now, logged=False)


_DOWN = frozenset(("connecting", "reconnecting"))  # one outage: a mux agent's retries flip between the two


def on_connection(s: Readiness, ev: ConnectionState, now: float) -> Readiness:
    same = ev.state == s.connection or {ev.state, s.connection} <= _DOWN  # the link's state since, not the word's
    since = s.connection_since if same and s.connection_since is not None else now
    folded = s.evolve(connection=ev.state, connection_detail=ev.detail, connection_since=since)
    return freshness.on_connection(s, folded, ev, now)


def on_probe_logged(s: Readiness, ev: ProbeLogged, now: float) -> Readiness:
    """The log shows one of our requests reached this server: only when read live (a line from before the watch
    says nothing of the listener now). A forwarder not known by name may then be told by it (tui.core.answerer)."""
    if s.reading_history:
        return s
    return maybe_ready(s.evolve(probe_logged_at=now), None, None, now, logged=False)


def on_tick(s: Readiness, ev: Tick, now: float) -> Readiness:
    """The clock moves: a reconnect or a quiet process watch may now be past its freshness (tui.core.freshness)."""
    return freshness.on_tick(s, now)


def on_source_failed(s: Readiness, ev: SourceFailed, now: float) -> Readiness:
    """A source's worker crashed: kept under that source only; no other fact (health, process, phase) moves."""
    kept = tuple(f for f in s.source_failures if f[0] != ev.source)
    return s.evolve(source_failures=(*kept, (ev.source, ev.message, now)))
