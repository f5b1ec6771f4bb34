"""The history store: stdlib sqlite3 in WAL mode, a schema version with migrations, a busy timeout.

Every write is one transaction, so a writer killed mid-write (kill -9) leaves the file as it was before that
write; two TUIs (or a TUI and `wait`) writing at once take turns through SQLite's lock (the busy timeout).
A launch is identified by its key, its start mark (the log time of its first line), its port and its log:
recording it again, by a second watcher or a later outcome, updates the same row, except that a look that came
after the outcome ("late") never rewrites what a watcher from before it ("first_line") recorded.

Rows of schema 1 (before `seen_from`) were written with the reducer's clock where the log gave no stamp: a
phase that ended at our first look (ready by /health at an attach) holds the attach time. Such phases are left out
of medians (`Past.attach_timed` counts the launches, said once).

Whatever goes wrong with the file (locked past the busy timeout, read-only, corrupt, not a file at all) is a
HistoryError of one line, from every method; a row whose figures no launch can have is left out and named
(tui.core.past.OddRow), never a crash of its reader.
"""

from __future__ import annotations

import json
import math
import os
import sqlite3
import stat
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tui.core.past import OddRow, Past, PastLaunch, past_launch, seconds

BUSY_TIMEOUT_S = 15.0
WATCH_BUSY_S = 2.0  # for a watcher or a bench with its result in hand: a writer holds the lock for milliseconds
KEEP_PAST = 10  # the ETA uses at most this many earlier ready launches
MAX_ROWID = 2**63 - 1  # SQLite's largest integer: a launch id or a limit past it is no row

MIGRATIONS: tuple[str, ...] = (
    # 1: launches, their phase spans, bench results keyed by launch
    """
    CREATE TABLE launches (
        id INTEGER PRIMARY KEY,
        key TEXT NOT NULL,
        key_json TEXT NOT NULL,
        host TEXT NOT NULL,
        model TEXT,
        start_mark TEXT NOT NULL,
        started_at REAL,
        recorded_at REAL NOT NULL,
        source TEXT NOT NULL,
        outcome TEXT NOT NULL,
        fail_kind TEXT,
        fail_line TEXT,
        total_s REAL,
        shards INTEGER,
        draft_shards INTEGER,
        weight_gib_per_rank REAL,
        startup_timings TEXT,
        startup_time_s REAL,
        UNIQUE (key, start_mark)
    );
    CREATE INDEX launches_key ON launches (key, started_at);
    CREATE INDEX launches_host ON launches (host, started_at);
    CREATE TABLE phases (
        launch_id INTEGER NOT NULL REFERENCES launches (id) ON DELETE CASCADE,
        idx INTEGER NOT NULL,
        phase TEXT NOT NULL,
        model TEXT NOT NULL,
        start TEXT,
        "end" TEXT,
        duration_s REAL,
        PRIMARY KEY (launch_id, idx)
    );
    CREATE TABLE bench (
        id INTEGER PRIMARY KEY,
        launch_id INTEGER NOT NULL REFERENCES launches (id) ON DELETE CASCADE,
        recorded_at REAL NOT NULL,
        result TEXT NOT NULL
    );
    CREATE INDEX bench_launch ON bench (launch_id, recorded_at);
    """,
    # 2: a launch is one launch of one server: (key, start mark, port, log); and how it was seen. SQLite cannot
    # change a table's UNIQUE, so the table is rebuilt (foreign keys are off during migrations: phases and bench
    # keep their rows and ids)
    """
    CREATE TABLE launches_v2 (
        id INTEGER PRIMARY KEY,
        key TEXT NOT NULL,
        key_json TEXT NOT NULL,
        host TEXT NOT NULL,
        model TEXT,
        start_mark TEXT NOT NULL,
        started_at REAL,
        recorded_at REAL NOT NULL,
        source TEXT NOT NULL,
        outcome TEXT NOT NULL,
        fail_kind TEXT,
        fail_line TEXT,
        total_s REAL,
        shards INTEGER,
        draft_shards INTEGER,
        weight_gib_per_rank REAL,
        startup_timings TEXT,
        startup_time_s REAL,
        port INTEGER NOT NULL DEFAULT 0,
        log TEXT NOT NULL DEFAULT '',
        seen_from TEXT,
        UNIQUE (key, start_mark, port, log)
    );
    INSERT INTO launches_v2 (id, key, key_json, host, model, start_mark, started_at, recorded_at, source, outcome,
        fail_kind, fail_line, total_s, shards, draft_shards, weight_gib_per_rank, startup_timings, startup_time_s)
        SELECT id, key, key_json, host, model, start_mark, started_at, recorded_at, source, outcome, fail_kind,
        fail_line, total_s, shards, draft_shards, weight_gib_per_rank, startup_timings, startup_time_s FROM launches;
    DROP TABLE launches;
    ALTER TABLE launches_v2 RENAME TO launches;
    CREATE INDEX launches_key ON launches (key, started_at);
    CREATE INDEX launches_host ON launches (host, started_at);
    """,
    # 3: the remedy a launch ran with (the TUI's "restart with this change"), JSON: changes, cause, after
    """
    ALTER TABLE launches ADD COLUMN tried TEXT;
    """,
)
SCHEMA_VERSION = len(MIGRATIONS)

# A launch as `history` shows it and --json prints it: JSON-shaped (its key, phases and error are nested).
LaunchRow = dict[str, Any]


class HistoryError(Exception):
    """The history file cannot be used: str() is the one line to print."""


@dataclass(frozen=True)
class LaunchRecord:
    key: str
    key_fields: dict[str, object]
    start_mark: str
    source: str  # tui | wait | replay
    outcome: str  # ready | failed | stalled | stopped | unfinished
    started_at: float | None = None
    fail_kind: str | None = None
    fail_line: str | None = None
    total_s: float | None = None
    shards: int | None = None
    draft_shards: int | None = None
    weight_gib_per_rank: float | None = None
    phases: tuple[tuple[str, str, str | None, str | None, float | None], ...] = ()  # phase, model, start, end, s
    startup_timings: dict[str, float] = field(default_factory=dict)
    startup_time_s: float | None = None
    port: int = 0  # the server's port (0: not known, a replayed log)
    log: str = ""  # the log path watched ("": none)
    seen_from: str = "first_line"  # first_line | late (tui.history.record)
    tried: dict[str, object] | None = None  # the remedy it ran with (TriedChange.to_json), None: as launched


class HistoryStore:
    def __init__(self, path: str | Path, *, busy_timeout_s: float = BUSY_TIMEOUT_S) -> None:
        self.path = Path(path)
        self.busy_timeout_s = busy_timeout_s
        try:
            found = os.stat(self.path)
        except FileNotFoundError:
            found = None
        except OSError as err:
            raise HistoryError(
                f"history {self.path}: {err.strerror or err}; pass --history FILE or --no-history"
            ) from None
        if found is not None and not stat.S_ISREG(found.st_mode):  # SQLite would write PATH-journal beside it
            what = "a directory" if stat.S_ISDIR(found.st_mode) else "not a regular file"
            raise HistoryError(f"history {self.path}: {what}; pass --history FILE or --no-history")
        with self._one_line():
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as err:
                raise HistoryError(
                    f"history {self.path}: {err.strerror or err}; pass --history PATH or --no-history"
                ) from None
            self.db = sqlite3.connect(str(self.path), timeout=busy_timeout_s, isolation_level=None)
            try:
                self.db.execute(f"PRAGMA busy_timeout = {int(busy_timeout_s * 1000)}")
                self.db.execute("PRAGMA journal_mode = WAL")
                self.db.execute("PRAGMA synchronous = NORMAL")
                self.db.execute("PRAGMA foreign_keys = OFF")  # a migration rebuilds launches: no cascade then
                self._migrate()
                self.db.execute("PRAGMA foreign_keys = ON")
            except BaseException:
                self.db.close()
                raise

    @contextmanager
    def _one_line(self) -> Iterator[None]:
        """Any failure of the file inside as a HistoryError of one line saying what to do."""
        try:
            yield
        except sqlite3.Error as err:
            raise HistoryError(self._words(err)) from None

    def _words(self, err: sqlite3.Error) -> str:
        text = str(err)
        if "locked" in text or "busy" in text:
            return f"history {self.path}: locked by another process (waited {self.busy_timeout_s:g} s)"
        if "readonly" in text or "read-only" in text:
            return f"history {self.path}: cannot write it ({text}); pass --history PATH or --no-history"
        return f"history {self.path}: {text}; move the file away or pass --no-history"

    def close(self) -> None:
        try:
            self.db.close()
        except sqlite3.Error:
            pass

    def __enter__(self) -> HistoryStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------------------------------ schema
    def _migrate(self) -> None:
        version = self.db.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise HistoryError(
                f"history {self.path} has schema {version}, newer than this sglang-tui's {SCHEMA_VERSION}; upgrade it"
            )
        while version < SCHEMA_VERSION:
            self.db.execute("BEGIN IMMEDIATE")
            try:
                current = self.db.execute("PRAGMA user_version").fetchone()[0]  # another writer may have done it
                if current == version:
                    for statement in MIGRATIONS[version].split(";"):
                        if statement.strip():
                            self.db.execute(statement)
                    self.db.execute(f"PRAGMA user_version = {version + 1}")
                self.db.execute("COMMIT")
            except BaseException:
                if self.db.in_transaction:
                    self.db.execute("ROLLBACK")
                raise
            version = self.db.execute("PRAGMA user_version").fetchone()[0]

    @property
    def schema_version(self) -> int:
        with self._one_line():
            return int(self.db.execute("PRAGMA user_version").fetchone()[0])

    # ------------------------------------------------------------------------------------------- write
    def record_launch(self, rec: LaunchRecord, *, replaces_key: str | None = None) -> int:
        """Insert the launch, or update the row of the same key and start mark; returns its id.

        replaces_key: the key this launch was recorded under before (its SGLang version learnt since, from
        /server_info): that row takes the new key, in the same transaction, so one launch stays one row."""
        with self._one_line():
            return self._record_launch(rec, replaces_key)

    def _record_launch(self, rec: LaunchRecord, replaces_key: str | None) -> int:
        where = (rec.start_mark, rec.port, rec.log)
        self.db.execute("BEGIN IMMEDIATE")
        try:
            if replaces_key is not None and replaces_key != rec.key:
                self.db.execute(
                    "UPDATE OR IGNORE launches SET key = ?, key_json = ? WHERE key = ? AND start_mark = ? AND port = ?"
                    " AND log = ?",
                    (rec.key, json.dumps(rec.key_fields, sort_keys=True), replaces_key, *where),
                )
                # left only when a row of the new key was there already (another watcher): one row stays
                self.db.execute(
                    "DELETE FROM launches WHERE key = ? AND start_mark = ? AND port = ? AND log = ?",
                    (replaces_key, *where),
                )
            found = self.db.execute(
                "SELECT id, seen_from, outcome FROM launches WHERE key = ? AND start_mark = ? AND port = ? AND log = ?",
                (rec.key, *where),
            ).fetchone()
            if found is None and rec.port and rec.log and replaces_key is None:
                # the same launch of the same server under another key: a later look learnt what the first did not
                # (SGLang's version, from /server_info after the first watcher left). One launch is one row: the
                # launch's identity is its host, port, log and first line (DESIGN.md), the key only groups launches
                found = self.db.execute(
                    "SELECT id, seen_from, outcome FROM launches WHERE host = ? AND start_mark = ? AND port = ?"
                    " AND log = ? ORDER BY id LIMIT 1",
                    (str(rec.key_fields.get("host") or ""), *where),
                ).fetchone()
                if found is not None and not _keeps(found[1], found[2], rec):
                    # this record knows more (an outcome, or the first line): the row takes it, and its key
                    self.db.execute(
                        "UPDATE launches SET key = ?, key_json = ? WHERE id = ?",
                        (rec.key, json.dumps(rec.key_fields, sort_keys=True), found[0]),
                    )
            if found is not None and _keeps(found[1], found[2], rec):
                launch_id = int(found[0])  # what was seen from the first line stands: only late facts are added
                self.db.execute(
                    "UPDATE launches SET weight_gib_per_rank = COALESCE(weight_gib_per_rank, ?),"
                    " startup_timings = COALESCE(startup_timings, ?), startup_time_s = COALESCE(startup_time_s, ?)"
                    " WHERE id = ?",
                    (rec.weight_gib_per_rank, json.dumps(rec.startup_timings) if rec.startup_timings else None,
                     rec.startup_time_s, launch_id),
                )  # fmt: skip
                self.db.execute("COMMIT")
                return launch_id
            row = (
                rec.key, json.dumps(rec.key_fields, sort_keys=True), str(rec.key_fields.get("host") or ""),
                rec.key_fields.get("model"), rec.start_mark, rec.started_at, time.time(), rec.source, rec.outcome,
                rec.fail_kind, rec.fail_line, rec.total_s, rec.shards, rec.draft_shards, rec.weight_gib_per_rank,
                json.dumps(rec.startup_timings) if rec.startup_timings else None, rec.startup_time_s, rec.port,
                rec.log, rec.seen_from, json.dumps(rec.tried) if rec.tried else None,
            )  # fmt: skip
            self.db.execute(
                "INSERT INTO launches (key, key_json, host, model, start_mark, started_at, recorded_at, source, outcome,"
                " fail_kind, fail_line, total_s, shards, draft_shards, weight_gib_per_rank, startup_timings,"
                " startup_time_s, port, log, seen_from, tried) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"
                " ON CONFLICT (key, start_mark, port, log) DO UPDATE SET recorded_at=excluded.recorded_at,"
                " source=excluded.source, outcome=excluded.outcome, fail_kind=excluded.fail_kind,"
                " fail_line=excluded.fail_line, total_s=excluded.total_s, shards=excluded.shards,"
                " draft_shards=excluded.draft_shards,"
                " weight_gib_per_rank=COALESCE(excluded.weight_gib_per_rank, weight_gib_per_rank),"
                " startup_timings=COALESCE(excluded.startup_timings, startup_timings),"
                " startup_time_s=COALESCE(excluded.startup_time_s, startup_time_s), seen_from=excluded.seen_from,"
                " tried=COALESCE(excluded.tried, tried)",
                row,
            )
            launch_id = int(
                self.db.execute(
                    "SELECT id FROM launches WHERE key = ? AND start_mark = ? AND port = ? AND log = ?",
                    (rec.key, *where),
                ).fetchone()[0]
            )
            self.db.execute("DELETE FROM phases WHERE launch_id = ?", (launch_id,))
            self.db.executemany(
                'INSERT INTO phases (launch_id, idx, phase, model, start, "end", duration_s) VALUES (?,?,?,?,?,?,?)',
                [(launch_id, i, *p) for i, p in enumerate(rec.phases)],
            )
            self.db.execute("COMMIT")
        except BaseException:
            if self.db.in_transaction:
                self.db.execute("ROLLBACK")
            raise
        return launch_id

    def record_bench(self, launch_id: int, result_json: dict[str, object]) -> int:
        """Store a `bench --json` result against a launch; returns its row id."""
        with self._one_line():
            with_tx = self.db.execute(
                "INSERT INTO bench (launch_id, recorded_at, result) VALUES (?, ?, ?)",
                (launch_id, time.time(), json.dumps(result_json, sort_keys=True)),
            )
            return int(with_tx.lastrowid or 0)

    # -------------------------------------------------------------------------------------------- read
    def past(self, key: str, *, exclude_mark: str | None = None, limit: int = KEEP_PAST) -> Past:
        """The ready launches of `key`, newest first, as the core's frozen value; odd rows left out and named."""
        with self._one_line():
            rows = self.db.execute(
                "SELECT id, total_s, weight_gib_per_rank, shards, seen_from FROM launches WHERE key = ?"
                " AND outcome = 'ready' AND start_mark IS NOT ? ORDER BY started_at DESC, id DESC LIMIT ?",
                (key, exclude_mark, limit),
            ).fetchall()
            launches: list[PastLaunch] = []
            skipped: list[str] = []
            attach_timed = 0
            for launch_id, total, weight, shards, seen_from in rows:
                phases = self.db.execute(
                    "SELECT phase, duration_s, start, \"end\" FROM phases WHERE launch_id = ? AND model = 'main'"
                    " AND duration_s IS NOT NULL ORDER BY idx",
                    (launch_id,),
                ).fetchall()
                timed = [(p, d) for p, d, start, end in phases if seen_from is not None or (start and end)]
                if len(timed) < len(phases):  # an older sglang-tui's row: a phase timed by our look, not the log
                    attach_timed += 1
                    total = None
                try:
                    launches.append(past_launch(int(launch_id), total, timed, weight, shards))
                except OddRow as odd:
                    skipped.append(f"launch {launch_id}: {odd}")
        return Past(key=key, launches=tuple(launches), skipped=tuple(skipped), attach_timed=attach_timed)

    def listing(self, host: str | None = None, limit: int = 50) -> tuple[list[LaunchRow], tuple[str, ...]]:
        """Launches, newest first (of one host when given), each with its key fields and phases; and the odd rows
        left out, named ("launch 7: total 'x' is not a number")."""
        where, params = ("WHERE host = ?", (host, min(limit, MAX_ROWID))) if host else ("", (min(limit, MAX_ROWID),))
        with self._one_line():
            rows = self.db.execute(f"SELECT {_LAUNCH_COLUMNS} FROM launches {where} ORDER BY started_at DESC, id DESC"
                                   " LIMIT ?", params).fetchall()  # fmt: skip
            found: list[LaunchRow] = []
            skipped: list[str] = []
            for row in rows:
                try:
                    found.append(self._launch_dict(row))
                except OddRow as odd:
                    skipped.append(f"launch {row[0]}: {odd}")
        return found, tuple(skipped)

    def launches(self, host: str | None = None, limit: int = 50) -> list[LaunchRow]:
        """The launches of `listing`, without the odd rows."""
        return self.listing(host, limit)[0]

    def launch(self, launch_id: int) -> LaunchRow | None:
        """One launch (None when there is no such id); OddRow when its row holds figures no launch can have."""
        if not 0 < launch_id <= MAX_ROWID:
            return None
        with self._one_line():
            row = self.db.execute(f"SELECT {_LAUNCH_COLUMNS} FROM launches WHERE id = ?", (launch_id,)).fetchone()
            return self._launch_dict(row) if row else None

    def known_version(self, key_fields: dict[str, object], scan: int = 200) -> str | None:
        """The SGLang version of the newest launch whose key is these fields but for the version (None: none, or
        not known for it): what a launch whose log does not name its version most likely runs, until /server_info says."""
        want = {k: v for k, v in key_fields.items() if k != "version"}
        with self._one_line():
            rows = self.db.execute(
                "SELECT key_json FROM launches WHERE host = ? AND model IS ? ORDER BY started_at DESC, id DESC LIMIT ?",
                (str(key_fields.get("host") or ""), key_fields.get("model"), scan),
            ).fetchall()
        for (key_json,) in rows:
            try:
                fields = _json_object("key", key_json)
            except OddRow:
                continue  # an odd row says nothing about the version
            version = fields.pop("version", None)
            if fields == want:  # the newest such launch decides, even one recorded with no version
                return str(version) if version else None
        return None

    def newest(self, host: str) -> tuple[int, str] | None:
        """(id, key) of the host's newest launch, or None."""
        with self._one_line():
            row = self.db.execute(
                "SELECT id, key FROM launches WHERE host = ? ORDER BY started_at DESC, id DESC LIMIT 1", (host,)
            ).fetchone()
        return (int(row[0]), str(row[1])) if row else None

    def last_bench(self, key: str) -> dict[str, object] | None:
        """The newest bench result of any launch of `key`, or None; OddRow when that row is not a JSON object."""
        with self._one_line():
            row = self.db.execute(
                "SELECT b.result, b.id FROM bench b JOIN launches l ON l.id = b.launch_id WHERE l.key = ?"
                " ORDER BY b.recorded_at DESC, b.id DESC LIMIT 1",
                (key,),
            ).fetchone()
        if row is None:
            return None
        try:
            return _json_object("result", row[0])
        except OddRow as odd:
            raise OddRow(f"bench {row[1]}: {odd}") from None

    def _launch_dict(self, row: tuple[object, ...]) -> LaunchRow:
        """A launch row as the dict `history` shows; OddRow when a figure in it is none a launch can have."""
        (launch_id, key_json, host, mark, started, source, outcome, kind, line, total, shards, draft, weight,
         timings, startup_time, key, seen_from, tried) = row  # fmt: skip
        phases = self.db.execute(
            'SELECT phase, model, start, "end", duration_s FROM phases WHERE launch_id = ? ORDER BY idx', (launch_id,)
        ).fetchall()
        startup_timings = _json_object("startup_timings", timings) if timings else None
        return {
            "id": launch_id,
            "key": _json_object("key", key_json),
            "host": _text("host", host),
            "start": _text("start", mark),
            "started_at": _number("started_at", started),
            "source": _text("source", source),
            "outcome": _text("outcome", outcome),
            "error": {"kind": _optional_text("fail_kind", kind), "line": _optional_text("fail_line", line)}
            if kind or line
            else None,
            "total_s": None if total is None else seconds("total", total),
            "shards": _count("shards", shards),
            "draft_shards": _count("draft_shards", draft),
            "weight_gib_per_rank": _number("weight_gib_per_rank", weight),
            "phases": [
                {
                    "phase": _text("phase", p),
                    "model": _text("model", m),
                    "start": s,
                    "end": e,
                    "duration_s": None if d is None else seconds(f"{p}", d),
                }
                for p, m, s, e, d in phases
            ],  # fmt: skip
            "startup_timings": startup_timings,
            "startup_time_s": _number("startup_time_s", startup_time),
            "key_id": _text("key", key),
            "seen_from": _optional_text("seen_from", seen_from),  # null: recorded before sglang-tui said it
            "tried": _json_object("tried", tried) if tried else None,  # the remedy it ran with
        }


_LAUNCH_COLUMNS = (
    "id, key_json, host, start_mark, started_at, source, outcome, fail_kind, fail_line, total_s, shards,"
    " draft_shards, weight_gib_per_rank, startup_timings, startup_time_s, key, seen_from, tried"
)


def _keeps(seen_from: object, outcome: object, rec: LaunchRecord) -> bool:
    """Whether the row recorded as (seen_from, outcome) stands against `rec`: a launch recorded from its first line
    with an outcome is never rewritten by a look that came after it (a board, an exporter, a later `wait`), and an
    outcome is never rewritten by a watcher that left before one ("unfinished": it knows less)."""
    if outcome != "unfinished" and rec.outcome == "unfinished":
        return True
    return seen_from == "first_line" and outcome != "unfinished" and rec.seen_from != "first_line"


def _json_object(name: str, value: object) -> dict[str, object]:
    try:
        found = json.loads(value) if isinstance(value, (str, bytes)) else None
    except (ValueError, RecursionError):
        found = None
    if not isinstance(found, dict):
        raise OddRow(f"{name} {value!r:.40} is not a JSON object")
    return found


def _text(name: str, value: object) -> str:
    if not isinstance(value, str):
        raise OddRow(f"{name} {value!r:.40} is not text")
    return value


def _optional_text(name: str, value: object) -> str | None:
    return None if value is None else _text(name, value)


def _number(name: str, value: object) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise OddRow(f"{name} {value!r:.40} is not a number")
    return float(value)


def _count(name: str, value: object) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise OddRow(f"{name} {value!r:.40} is not a count")
    return value
