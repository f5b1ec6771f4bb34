"""The log's clock on the reducer's (tui/core/clocks.py), pure: the zone from the file's mtime, the host's skew,
logs without time, history against live bytes, and what an attach then says (quiet time, time in phase, rates
from a burst of old frames, the `stall` object)."""

from __future__ import annotations

import calendar
import io
import time
from typing import Any

import pytest

from tui.commands.replay import replay_stream
from tui.core import clocks
from tui.core.clockmap import LOG_IS_CLOCK, ClockMap
from tui.core.clocks import ours, zone_of
from tui.core.eta import estimate
from tui.core.events import BarProgress, LogActivity, LogLook, Milestone, ServerArgs, Tick
from tui.core.readiness import reduce
from tui.core.report import to_json
from tui.core.state import Phase, Readiness
from tui.core.wording import verdict_line

DAY = "2026-12-01"
NOW = 1_796_000_000.0  # our clock at the attach (an epoch in 2026)


def log_t(hms: str) -> float:
    """A stamp's log time: the host's local time read as UTC (tui.core.logenvelope)."""
    return float(calendar.timegm((2026, 12, 1, int(hms[:2]), int(hms[3:5]), int(hms[6:8]))))


@pytest.mark.parametrize(
    ("zone", "behind"),
    [(0.0, 0.0), (19800.0, 0.4), (-28800.0, 3.0), (20700.0, 600.0), (3600.0, 890.0), (-12600.0, 1.0)],
    ids=["utc", "+05:30", "-08:00", "+05:45-10min-old", "+01:00-almost-15min-old", "-03:30"],
)
def test_the_zone_is_the_quarter_hour_the_newest_line_and_the_mtime_allow(zone: float, behind: float) -> None:
    """The newest timestamped line was written `behind` s before the last write (tqdm frames after it)."""
    mtime = NOW - 30.0
    last_t = (mtime - behind) + zone
    assert zone_of(last_t, mtime) == zone


def test_a_line_stamped_just_after_the_truncated_mtime_is_the_same_zone() -> None:
    mtime = float(int(NOW))  # stat's %Y: whole seconds, the write was up to 1 s later
    assert zone_of(mtime + 0.9 + 19800.0, mtime) == 19800.0


def test_time_only_stamps_map_too() -> None:
    """A log whose stamps carry no date counts seconds of the day: the zone then holds the date as well."""
    mtime = NOW
    tod = (NOW + 3600.0) % 86400.0 - 2.0  # the newest line, 2 s before the last write, at +01:00
    clock = clocks.learn(None, LogLook(end=10, mtime_s=mtime, skew_s=0.0, last_t=tod))
    mapped = ours(clock, tod - 60.0, NOW)
    assert mapped is not None and abs(mapped - (NOW - 62.0)) < 1e-6


def test_skew_moves_the_host_onto_our_clock_and_never_past_now() -> None:
    # the host's clock runs 30 s behind ours: its mtime and its log's stamps are 30 s "early"
    clock = clocks.learn(None, LogLook(end=100, mtime_s=NOW - 40.0 - 30.0, skew_s=30.0, last_t=log_t("12:00:00")))
    assert clock.history_at == NOW - 40.0
    assert ours(clock, log_t("12:00:00"), NOW) == pytest.approx(NOW - 40.0, abs=900.0)  # within the zone's step
    assert ours(clock, log_t("12:00:00") + 10_000.0, NOW) == NOW  # a stamp "in the future" is now at most
    assert ours(None, log_t("12:00:00"), NOW) is None and ours(clock, None, NOW) is None


def attach(events: list[Any], *, mtime: float, end: int = 10_000, now: float = NOW) -> Readiness:
    """Fold a look, the history's events between its LogClocks (as the Monitor hands them on), and the history's
    bytes, at our clock `now`."""
    stamps = [e.t for e in events if getattr(e, "t", None) is not None]
    look = LogLook(end=end, mtime_s=mtime, skew_s=0.0, last_t=max(stamps) if stamps else None)
    s = reduce(Readiness(), look, now)
    for ev in events:
        s = reduce(s, ev, now)
    s = reduce(s, LogLook(end=end, mtime_s=mtime, skew_s=0.0, last_t=look.last_t, live=True), now)
    return reduce(s, LogActivity(end, b"x" * 10), now)


def stamp(t: float) -> dict[str, Any]:
    """A line's stamp fields at log time t (whole seconds, as SGLang prints them)."""
    t = float(int(t))
    return {"at": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(t)), "t": t}


def hung_load(*, quiet: float, frames_elapsed: bool = True, zone: float = 19800.0) -> tuple[Readiness, float]:
    """A load whose shard frames stopped `quiet` s before the attach: the history read at once."""
    last_write = NOW - quiet
    begin = last_write + zone - 20.0  # the log's clock 20 s before the last write
    events: list[Any] = [
        ServerArgs(model="m", tp_size=2, **stamp(begin - 10)),
        Milestone("load_begin", rank="TP0", **stamp(begin)),
    ]
    for d in range(11):  # a shard every 2 s, the last at the last write
        events.append(BarProgress("weights", d, 32, elapsed_s=2.0 * d if frames_elapsed else None))
    s = attach(events, mtime=last_write)
    return s, last_write


def test_attach_counts_the_quiet_time_from_the_log_and_withdraws_the_eta() -> None:
    s, last_write = hung_load(quiet=120.0)
    assert s.phase is Phase.LOADING_WEIGHTS and s.shards is not None and s.shards.done == 10
    assert s.last_progress_at == pytest.approx(last_write, abs=1.0)
    stall = to_json(s, NOW)["stall"]
    assert stall["quiet_s"] >= 119.0 and stall["budget_s"] == 180.0
    # the rate is the frames' own (tqdm's elapsed: 0.5 shards/s), but 120 s of silence withdraws any ETA
    assert s.shards.rate_per_s == pytest.approx(0.5)
    e = estimate(s, NOW)
    assert e.phase_left_s is None and e.silent_s is not None and e.silent_s >= 119.0
    assert "no progress for 2m0" in verdict_line(s) and "ETA" not in verdict_line(s), verdict_line(s)
    # the phase began at the log's load_begin, 20 s before the last write, not at the attach
    assert NOW - s.phase_since == pytest.approx(140.0, abs=1.0)


def test_attach_past_the_budget_is_stalled_at_once() -> None:
    s, _ = hung_load(quiet=200.0)
    assert s.stall is not None and verdict_line(s).startswith("stalled in loading weights")
    with_override = hung_load(quiet=40.0)[0].evolve(stall_after=30.0)
    assert reduce(with_override, Tick(), NOW).stall is not None


def test_a_fresh_log_is_live_progress() -> None:
    s, last_write = hung_load(quiet=0.5)
    assert s.stall is None and to_json(s, NOW)["stall"]["quiet_s"] == 0.0
    left, silent = estimate(s, NOW).phase_left_s, estimate(s, NOW).silent_s
    assert silent is None and left is not None and left == pytest.approx(2.0 * 22, abs=2.0)  # 22 shards x 2 s


def test_a_burst_of_old_frames_with_no_time_of_their_own_gives_no_rate() -> None:
    s, _ = hung_load(quiet=30.0, frames_elapsed=False)
    assert s.shards is not None and s.shards.done == 10 and s.shards.rate_per_s is None
    assert estimate(s, NOW).phase_left_s is None and "shards/s" not in verdict_line(s)
    # live frames after it: a rate again, from when they arrive
    live = s
    for i, d in enumerate(range(11, 14)):
        live = reduce(live, BarProgress("weights", d, 32), NOW + 2.0 * (i + 1))
    assert live.shards is not None and live.shards.rate_per_s is not None
    assert live.shards.updated_at == NOW + 6.0


def test_no_log_time_at_all_uses_the_files_last_write() -> None:
    """A log with no stamps (a foreign format): the history's events happened no later than the last write."""
    events = [Milestone("load_begin", rank="TP0"), BarProgress("weights", 1, 8)]
    s = attach(events, mtime=NOW - 50.0)
    assert s.clock is not None and s.clock.zone_s is None
    assert s.phase_since == NOW - 50.0 and s.last_progress_at == NOW - 50.0
    assert to_json(s, NOW)["stall"] == {"quiet_s": 50.0, "budget_s": 180.0, "last_progress_at": None}


def test_last_progress_at_is_the_logs_own_time() -> None:
    s, last_write = hung_load(quiet=60.0)
    text = to_json(s, NOW)["stall"]["last_progress_at"]
    assert isinstance(text, str) and len(text) == 19
    written = calendar.timegm(time.strptime(text, "%Y-%m-%d %H:%M:%S")) - 19800.0
    assert written == pytest.approx(last_write, abs=1.0)  # the last write, on the log's clock as it prints it


def test_without_a_look_events_happen_now() -> None:
    """No LogLook (tests, a watch without a log): the old rule, every event at `now`."""
    s = reduce(Readiness(), Milestone("load_begin", rank="TP0", **stamp(NOW + 19800.0 - 300)), NOW)
    assert s.phase_since == NOW and s.last_progress_at == NOW


def test_live_lines_after_the_history_are_now_and_teach_the_zone() -> None:
    s = reduce(Readiness(), LogLook(end=0, mtime_s=NOW, skew_s=0.0, live=True), NOW)
    assert s.clock is not None and s.clock.zone_s is None  # an empty log: nothing to learn the zone from
    wall = NOW + 19800.0 - 0.3  # a live line stamped at +05:30, read 0.3 s later
    s = reduce(s, Milestone("init_begin", rank="TP0", at="x", t=wall), NOW)
    assert s.clock is not None and s.clock.zone_s == 19800.0
    assert s.phase_since == pytest.approx(NOW - 0.3)


def test_history_bytes_grew_the_log_at_its_mtime() -> None:
    """The answerer's "the log grew after the 200" must not count history read late as growth."""
    s, last_write = hung_load(quiet=90.0)
    assert s.log_grew_at == pytest.approx(last_write)
    s = reduce(s, LogActivity(20_000, b"new\n"), NOW + 1.0)  # live bytes
    assert s.log_grew_at == NOW + 1.0 and s.last_progress_at == NOW + 1.0


def test_replay_keeps_its_clock_the_logs_own() -> None:
    log = (
        f"[{DAY} 10:00:00] server_args=ServerArgs(model_path='m', tp_size=1)\n"
        f"[{DAY} 10:00:05] Load weight begin. avail mem=70.00 GB\n"
        "Loading safetensors checkpoint shards:  50% Completed | 1/2 [00:03<00:03,  3.00s/it]\n"
    ).encode()
    s = replay_stream(io.BytesIO(log))
    assert s.clock == LOG_IS_CLOCK and s.phase is Phase.LOADING_WEIGHTS
    assert s.phase_since == log_t("10:00:05")
    stall = to_json(s)["stall"]
    assert stall["quiet_s"] == 0.0 and stall["last_progress_at"] == f"{DAY} 10:00:05"


def test_a_second_look_after_a_reconnect_reads_what_came_meanwhile_as_history() -> None:
    s, _ = hung_load(quiet=5.0)
    # 100 s later, a reconnect: 2 more shards were written while away, the last 60 s ago
    later = NOW + 100.0
    events = [BarProgress("weights", 11, 32, elapsed_s=22.0), BarProgress("weights", 12, 32, elapsed_s=24.0)]
    s = reduce(s, LogLook(end=20_000, mtime_s=later - 60.0, skew_s=0.0, last_t=None), later)
    for ev in events:
        s = reduce(s, ev, later)
    s = reduce(s, LogLook(end=20_000, mtime_s=later - 60.0, skew_s=0.0, live=True), later)
    s = reduce(s, LogActivity(20_000, b"y"), later)
    assert s.shards is not None and s.shards.done == 12
    assert to_json(s, later)["stall"]["quiet_s"] == pytest.approx(60.0, abs=1.0)
    # the zone learnt at the first look stays (the second read no stamped line); the history is the second's
    assert s.clock == ClockMap(skew_s=0.0, zone_s=19800.0, history_end=20_000, history_at=later - 60.0)


def test_attached_mid_load_the_gpu_memory_growth_is_not_the_weights() -> None:
    """The weights began loading before the attach: the GPU memory grown since the attach is only part of them,
    so no byte ETA is made from it (the shard bar's stands); a load that begins in view has one."""
    from tests.test_eta import past
    from tui.core.events import GpuInfo, GpuSnapshot

    def snap(used_gib: float) -> GpuSnapshot:
        return GpuSnapshot(
            "sim", tuple(GpuInfo(i, used_bytes=int(used_gib * (1 << 30)), total_bytes=140 << 30) for i in (0, 1))
        )

    s, _ = hung_load(quiet=0.5)
    s = s.evolve(past=past(weight_gib=32.0))
    for i in range(8):  # 1 GiB/s of growth since the attach, 20 GiB already loaded before it
        s = reduce(s, snap(20.0 + i), NOW + i)
    assert s.weights_mem is None and estimate(s, NOW + 7).source != "GPU memory"
    fresh = reduce(Readiness().evolve(past=past(weight_gib=32.0)), snap(2.0), NOW)
    fresh = reduce(fresh, Milestone("load_begin", rank="TP0"), NOW + 1)
    for i in range(8):
        fresh = reduce(fresh, snap(2.0 + i), NOW + 2 + i)
    assert fresh.weights_mem is not None and estimate(fresh, NOW + 9).source == "GPU memory"


def test_a_watched_log_not_looked_at_yet_has_no_quiet_time() -> None:
    """Before the tail's first look, the log's last progress may be minutes or a moment old: no quiet time, no
    stall (a slow first read is not a stall in `starting`); the look then counts from the file's last write."""
    from tui.core.events import ConnectionState

    s = reduce(Readiness.of(log_watched=True, stall_after=2.0), ConnectionState("connected"), NOW)
    s = reduce(s, Tick(), NOW + 5.0)
    assert s.stall is None and to_json(s, NOW + 5.0)["stall"]["quiet_s"] is None
    s = attach([Milestone("load_begin", rank="TP0", **stamp(NOW + 19800.0 - 30))], mtime=NOW - 30.0, now=NOW + 5.0)
    s = reduce(s.evolve(log_watched=True, stall_after=2.0), Tick(), NOW + 5.0)
    assert s.stall is not None and to_json(s, NOW + 5.0)["stall"]["quiet_s"] == 35.0


def test_the_stall_verdict_waits_for_the_looks_bytes() -> None:
    """The look says the log was last written 30 s ago; until its bytes are read the phase is not known, so a
    2 s budget gives no verdict in `starting`; once read, it is the stall in the phase they show."""
    s = reduce(Readiness.of(log_watched=True, stall_after=2.0), LogLook(end=500, mtime_s=NOW - 30.0, skew_s=0.0), NOW)
    assert s.reading_history and s.stall is None and s.phase is Phase.STARTING
    assert to_json(s, NOW)["stall"]["quiet_s"] == 30.0  # the look's mtime: the log's last progress, already
    s = reduce(s, Milestone("load_begin", rank="TP0"), NOW)
    s = reduce(s, LogLook(end=500, mtime_s=NOW - 30.0, skew_s=0.0, live=True), NOW)
    assert s.stall is not None and s.phase is Phase.LOADING_WEIGHTS


def test_a_health_200_waits_for_the_looks_bytes() -> None:
    """A /health 200 that arrives while the look's bytes are read waits for them: the log may show a later
    launch or its failure. Once read, the 200 decides, and ready is dated at the fired-up line (written before
    the look's mtime), not at the 200's arrival."""
    from tui.core.events import HealthResult

    s = Readiness.of(log_watched=True, health_probed=True)
    s = reduce(s, LogLook(end=500, mtime_s=NOW - 1.0, skew_s=0.0), NOW)
    s = reduce(s, ServerArgs(model="m", tp_size=1), NOW)
    s = reduce(s, Milestone("fired_up"), NOW)
    s = reduce(s, HealthResult("/health", "ok", status=200), NOW)
    assert s.health_ready and s.phase is not Phase.READY  # held: the history is still being read
    s = reduce(s, LogLook(end=500, mtime_s=NOW - 1.0, skew_s=0.0, live=True), NOW + 0.1)
    assert s.phase is Phase.READY and s.phase_since == NOW - 1.0
