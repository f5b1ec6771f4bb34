"""What `wait` and the TUI do with the history: load the past of a launch's key once its server_args are seen
(handing the core a frozen `Past`), and record the launch once at its outcome (again if the outcome changes).

SGLang's log does not name its version; /server_info does, once the server answers. Until then the past is looked
up under the version this host's newest launch of the same key ran (HistoryStore.known_version); the launch is
recorded under the version it really shows (None when nothing showed it), and recorded again, as the same row,
when /server_info tells the version or startup_time after an earlier record."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

from tui.core.launchkey import key_fields, launch_key
from tui.core.state import Readiness, ServerInfo
from tui.history.record import outcome_of, start_mark, to_record
from tui.history.store import HistoryError, HistoryStore


class Recorder:
    """One watcher's link to the history. Every failure of the file is said once and turns history off."""

    def __init__(self, path: Path | None, host: str, source: str, *, warn: bool = True) -> None:
        self.host = host
        self.source = source
        self.warn = warn
        self.store: HistoryStore | None = None
        self._server: ServerInfo | None = None
        self._key: str | None = None
        self._real: tuple[ServerInfo, str] | None = None  # (server, its key with the version it really shows)
        self._loaded: tuple[str | None, str | None] | None = None
        self._recorded: dict[str, tuple[str, str, float | None]] = {}  # start mark -> (outcome, key, startup_time_s)
        self.last_id: int | None = None
        if path is not None:
            try:
                self.store = HistoryStore(path)
            except HistoryError as err:
                self._off(err)

    def _off(self, err: Exception) -> None:
        if self.warn:
            print(f"sglang-tui: {err}; history is off for this run", file=sys.stderr)
        if self.store is not None:
            try:
                self.store.close()
            except Exception:
                pass
        self.store = None

    def key_of(self, state: Readiness) -> str | None:
        """The key the past is looked up under: the launch's own, its version presumed while none is known."""
        if state.server is not self._server:
            self._server = state.server
            server = state.server
            if server.version is None and server.model and self.store is not None:
                try:
                    server = replace(server, version=self.store.known_version(key_fields(server, self.host)))
                except Exception as err:  # a broken file must never take the watcher down
                    self._off(err)
            self._key = launch_key(server, self.host)
        return self._key

    def last_bench(self) -> dict[str, object] | None:
        """The newest bench of the current launch's key (None: no store, no key yet, or none)."""
        if self.store is None or self._key is None:
            return None
        return self.store.last_bench(self._key)

    def record_bench(self, result: dict[str, object]) -> None:
        """Keep a bench result with the current launch (recorded now if it was not yet)."""
        if self.store is None or self._key is None:
            return
        launch_id = self.last_id if self.last_id is not None else (self.store.newest(self.host) or (None, ""))[0]
        if launch_id is not None:
            self.store.record_bench(launch_id, result)

    def step(self, state: Readiness, now: float) -> Readiness:
        """update, as a step of tui.core.fold.Fold (the clock is not needed)."""
        return self.update(state)

    def update(self, state: Readiness) -> Readiness:
        """The state with its key's past attached (loaded when the key or launch changes); records outcomes."""
        if self.store is None:
            return state
        key = self.key_of(state)
        if key is None:
            return state
        mark = start_mark(state)
        if self._loaded != (key, mark) or (state.past is None or state.past.key != key):
            try:
                past = self.store.past(key, exclude_mark=mark)
            except Exception as err:  # a broken file must never take the watcher down
                self._off(err)
                return state
            self._loaded = (key, mark)
            state = state.evolve(past=past)
        outcome = outcome_of(state)
        if outcome is not None and mark is not None and self._recorded.get(mark) != self._facts(state, outcome):
            self.record(state, outcome)
        return state

    def _facts(self, state: Readiness, outcome: str) -> tuple[str, str, float | None]:
        """What a record holds that can change after it: outcome, key (the version), /server_info's total."""
        if self._real is None or self._real[0] is not state.server:  # the TUI folds forever: once per ServerInfo
            self._real = (state.server, launch_key(state.server, self.host) or "")
        return (outcome, self._real[1], dict(state.startup_time).get("tokenizer_e2e"))

    def record(self, state: Readiness, outcome: str | None = None) -> int | None:
        """Record this state's launch now (at its outcome, or 'unfinished' when the watcher leaves first)."""
        if self.store is None:
            return None
        rec = to_record(state, self.host, self.source, outcome)
        if rec is None:
            return None
        before = self._recorded.get(rec.start_mark)
        try:
            self.last_id = self.store.record_launch(rec, replaces_key=before[1] if before is not None else None)
        except Exception as err:
            self._off(err)
            return None
        self._recorded[rec.start_mark] = (rec.outcome, rec.key, rec.startup_time_s)
        return self.last_id

    def finish(self, state: Readiness) -> None:
        """At exit: a launch seen but with no outcome recorded is 'unfinished'; then close the file."""
        mark = start_mark(state)
        if self.store is not None and mark is not None and mark not in self._recorded and self.key_of(state):
            self.record(state, "unfinished")
        if self.store is not None:
            self.store.close()
            self.store = None
