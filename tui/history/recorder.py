"""What `wait` and the TUI do with the history: load the past of a launch's key once its server_args are seen
(handing the core a frozen `Past`), and record the launch once at its outcome (again if the outcome changes).

The file is only ever touched from one thread of its own (HistoryWorker), never from the fold: a history file
locked by another process, on a slow disk or broken, never holds up a verdict or the screen. A load is waited for
a moment (LOAD_WAIT_S: a read of a healthy file takes milliseconds), a record not at all; `finish` gives the writes
still queued what is left of the caller's time, then leaves them (one line says so).

SGLang's log does not name its version; /server_info does, once the server answers. Until then the past is looked
up under the version this host's newest launch of the same key ran (HistoryStore.known_version); the launch is
recorded under the version it really shows (None when nothing showed it), and recorded again, as the same row,
when /server_info tells the version or startup_time after an earlier record.

A launch is `seen_from` "first_line" when this watcher saw it, after its look's history was read, before its
outcome; else "late" (a board or an exporter attaching to a server ready for hours): then only the phases the
log's stamps time are recorded, and the store never lets it rewrite a first-line row (tui.history.record)."""

from __future__ import annotations

import queue
import sys
import threading
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import replace
from pathlib import Path
from typing import Any

from tui.core.launchkey import key_fields, launch_key, start_mark
from tui.core.past import OddRow, Past
from tui.core.state import Readiness, ServerInfo
from tui.history.record import FIRST_LINE, LATE, outcome_of, to_record
from tui.history.store import WATCH_BUSY_S, HistoryError, HistoryStore

LOAD_WAIT_S = 0.5  # how long a fold step waits for the past it asked for (then it comes with a later step)
FINISH_WAIT_S = 3.0  # at exit, the most the queued writes are waited for (less when the caller's time is up)

Job = Callable[[HistoryStore], Any]


class HistoryWorker:
    """One thread that opens the store and runs its jobs in order. The first failure of the file stops it: later
    jobs are dropped, and `failure` holds the one line to say."""

    def __init__(self, path: Path, busy_timeout_s: float = WATCH_BUSY_S) -> None:
        self.path = path
        self.busy_timeout_s = busy_timeout_s
        self.failure: Exception | None = None
        self._jobs: queue.SimpleQueue[tuple[Job, Future[Any]] | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="sglang-tui-history", daemon=True)
        self._thread.start()  # a daemon: a job stuck on a locked file never keeps the process from exiting

    def submit(self, job: Job) -> Future[Any]:
        done: Future[Any] = Future()
        self._jobs.put((job, done))
        return done

    def _run(self) -> None:
        store: HistoryStore | None = None
        try:
            store = HistoryStore(self.path, busy_timeout_s=self.busy_timeout_s)
        except Exception as err:  # HistoryError, or anything else the file does: said once, never raised
            self.failure = err
        while (item := self._jobs.get()) is not None:
            job, done = item
            if store is None or self.failure is not None:
                done.set_exception(self.failure or HistoryError(f"history {self.path}: closed"))
                continue
            try:
                done.set_result(job(store))
            except Exception as err:
                self.failure = err
                done.set_exception(err)
        if store is not None:
            store.close()

    def close(self, wait_s: float) -> bool:
        """No more jobs; True when the queued ones ended within wait_s (else the thread is left to the exit)."""
        self._jobs.put(None)
        self._thread.join(max(0.0, wait_s))
        return not self._thread.is_alive()


def _load(server: ServerInfo, host: str, mark: str | None) -> Callable[[HistoryStore], tuple[str | None, Past | None]]:
    """The job that finds the key the past is looked up under (its version presumed while none is known) and that
    key's past."""

    def job(store: HistoryStore) -> tuple[str | None, Past | None]:
        found = server
        if found.version is None and found.model:
            found = replace(found, version=store.known_version(key_fields(found, host)))
        key = launch_key(found, host)
        return (key, store.past(key, exclude_mark=mark)) if key is not None else (None, None)

    return job


class Recorder:
    """One watcher's link to the history. Every failure of the file is said once and turns history off."""

    def __init__(
        self,
        path: Path | None,
        host: str,
        source: str,
        *,
        warn: bool = True,
        say: Callable[[str], None] | None = None,
        port: int = 0,
        log: str = "",
    ) -> None:
        self.host = host
        self.source = source
        self.port = port  # with the log, what tells two servers of one key apart (one launch, one row)
        self.log = log
        self.warn = warn
        self._say = say or (lambda line: print(f"sglang-tui: {line}", file=sys.stderr, flush=True))
        self.path = path
        self.worker: HistoryWorker | None = HistoryWorker(path) if path is not None else None
        self._asked: tuple[ServerInfo, str | None] | None = None  # the (server, start mark) of the load in `_load`
        self._loading: Future[tuple[str | None, Past | None]] | None = None
        self._key: str | None = None
        self._past: Past | None = None
        self._real: tuple[ServerInfo, str] | None = None  # (server, its key with the version it really shows)
        self._recorded: dict[str, tuple[str, str, float | None]] = {}  # start mark -> (outcome, key, startup_time_s)
        self._said: set[str] = set()
        self._live: set[str] = set()  # start marks seen before their outcome, after the look's history was read
        self.last_id: int | None = None

    @property
    def on(self) -> bool:
        """History is kept for this run (no --no-history, and the file has not failed)."""
        self._check()
        return self.worker is not None

    def tell(self, line: str) -> None:
        """Say a line about the history once per run."""
        if self.warn and line not in self._said:
            self._said.add(line)
            self._say(line)

    def _check(self) -> None:
        if self.worker is not None and self.worker.failure is not None:
            self._off(self.worker.failure)

    def _off(self, err: Exception) -> None:
        self.tell(f"{err}; history is off for this run")
        if self.worker is not None:
            self.worker.close(0.0)
        self.worker = None

    # ------------------------------------------------------------------------------------------- reads

    def last_bench(self) -> dict[str, object] | None:
        """The newest bench of the current launch's key (None: no history, no key yet, none, or not in time)."""
        key = self._key
        if not self.on or key is None or self.worker is None:
            return None
        try:
            return self.worker.submit(lambda store: store.last_bench(key)).result(LOAD_WAIT_S)  # type: ignore[no-any-return]
        except OddRow as odd:
            self.tell(f"history {self.path}: {odd}; compared with nothing")
        except FutureTimeout:
            self.tell(f"history {self.path}: busy (another process holds it); the last bench is not shown")
        except Exception:
            self._check()
        return None

    # ------------------------------------------------------------------------------------------- steps

    def step(self, state: Readiness, now: float) -> Readiness:
        """update, as a step of tui.core.fold.Fold (the clock is not needed)."""
        return self.update(state)

    def update(self, state: Readiness) -> Readiness:
        """The state with its key's past attached (asked for when the launch or its server changes); records
        outcomes. Never waits on the file beyond LOAD_WAIT_S, once per launch."""
        self._check()
        if self.worker is None:
            return state
        mark = start_mark(state)
        if mark is not None and not state.reading_history and outcome_of(state) is None and not state.log_ready:
            self._live.add(mark)  # seen before the log said fired up: its end is timed live (a 200 may come later)
        asked = (state.server, mark)
        if self._asked is None or self._asked[0] is not state.server or self._asked[1] != mark:
            self._asked = asked
            self._key = self._past = None  # another server or launch: the past it had is not this one's
            if not state.server.model:  # no server_args yet: no key, nothing to load
                return state
            stuck = self._loading is not None and not self._loading.done()  # the file hangs: do not wait again
            self._loading = self.worker.submit(_load(state.server, self.host, mark))
            self._wait_loading(0.0 if stuck else LOAD_WAIT_S)
        elif self._loading is not None:
            self._wait_loading(0.0)
        if self._past is not None and state.past is not self._past:
            state = state.evolve(past=self._past)
        outcome = outcome_of(state)
        if outcome is not None and mark is not None and self._recorded.get(mark) != self._facts(state, outcome):
            self.record(state, outcome, wait_s=0.0)  # the write goes on in the worker: the verdict never waits
        return state

    def _wait_loading(self, wait_s: float) -> None:
        loading = self._loading
        if loading is None:
            return
        try:
            key, past = loading.result(wait_s)
        except FutureTimeout:
            return  # not yet: a later step takes it
        except Exception:
            self._loading = None
            self._check()
            return
        self._loading = None
        self._key, self._past = key, past
        if past is not None and (words := past.skipped_words()):
            self.tell(f"history {self.path}: {words}")

    def _facts(self, state: Readiness, outcome: str) -> tuple[str, str, float | None]:
        """What a record holds that can change after it: outcome, key (the version), /server_info's total."""
        if self._real is None or self._real[0] is not state.server:  # the TUI folds forever: once per ServerInfo
            self._real = (state.server, launch_key(state.server, self.host) or "")
        return (outcome, self._real[1], dict(state.startup_time).get("tokenizer_e2e"))

    # ------------------------------------------------------------------------------------------ writes

    def record(self, state: Readiness, outcome: str | None = None, *, wait_s: float = LOAD_WAIT_S) -> int | None:
        """Record this state's launch (at its outcome, or 'unfinished' when the watcher leaves first); its row id
        when the write ends within wait_s (0: do not wait), else None."""
        self._check()
        if self.worker is None:
            return None
        mark = start_mark(state)
        seen_from = FIRST_LINE if mark in self._live else LATE
        rec = to_record(state, self.host, self.source, outcome, port=self.port, log=self.log, seen_from=seen_from)
        if rec is None:
            return None
        before = self._recorded.get(rec.start_mark)
        replaces = before[1] if before is not None else None
        self._recorded[rec.start_mark] = (rec.outcome, rec.key, rec.startup_time_s)
        written = self.worker.submit(lambda store: store.record_launch(rec, replaces_key=replaces))
        written.add_done_callback(self._written)
        if wait_s <= 0:
            return None
        try:
            return int(written.result(wait_s))
        except FutureTimeout:
            return None
        except Exception:
            self._check()
            return None

    def _written(self, done: Future[Any]) -> None:
        if not done.cancelled() and done.exception() is None:
            self.last_id = int(done.result())

    def record_bench(self, result: dict[str, object]) -> None:
        """Keep a bench result with the current launch (with the host's newest launch before this one's id is
        known); written in the worker, never waited for."""
        self._check()
        if self.worker is None or self._key is None:
            return

        def job(store: HistoryStore) -> None:  # last_id read here: a record queued before has set it by now
            found = self.last_id if self.last_id is not None else (store.newest(self.host) or (None, ""))[0]
            if found is not None:
                store.record_bench(found, result)

        self.worker.submit(job)

    def finish(self, state: Readiness, wait_s: float = FINISH_WAIT_S) -> None:
        """At exit: a launch seen but with no outcome recorded is 'unfinished'; the queued writes get wait_s (at
        most FINISH_WAIT_S), then the file is closed or left to the exit, with one line."""
        self._check()
        if self.worker is None:
            return
        mark = start_mark(state)
        if mark is not None and mark not in self._recorded:
            self.record(state, "unfinished", wait_s=0.0)
        worker, self.worker = self.worker, None
        ended = worker.close(min(wait_s, FINISH_WAIT_S))
        if worker.failure is not None:
            self.tell(f"{worker.failure}; history is off for this run")
        elif not ended:
            self.tell(
                f"history {self.path}: not written within {max(0.0, min(wait_s, FINISH_WAIT_S)):.1f} s "
                "(the file stayed busy: another process holds it, or the disk is slow); this launch is not recorded"
            )
