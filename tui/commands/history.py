"""`sglang-tui history [HOST] [--json] [--compare A B]`: past launches from the history store.

Each launch with its key, phase durations and outcome, newest first; `--compare A B` puts two launches side by
side, phase by phase. `--json` prints one object: {"launches": [...]} or {"compare": {...}}.
Exit codes from the one table (tui/core/exitcodes.py): 0 shown, 2 bad arguments or an unreadable history file,
6 nothing found: no history file yet, no launch recorded (for HOST), no launch A or B to compare.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from tui.commands.options import HistoryOptions
from tui.core import fmt
from tui.core.exitcodes import EXIT_BAD_ARGS, EXIT_NOTHING, EXIT_OK
from tui.core.past import OddRow, odd_rows
from tui.history.store import HistoryError, HistoryStore, LaunchRow

MAIN_ORDER = ("starting", "init", "loading_weights", "kv_cache", "cuda_graph", "warmup")


def run(opts: HistoryOptions) -> int:
    path = opts.history
    if path is None:
        print("sglang-tui history: --no-history leaves nothing to show; drop it", file=sys.stderr)
        return EXIT_BAD_ARGS
    if not path.exists():
        print(f"sglang-tui history: no history yet at {path} (watch a launch with the TUI or `wait` first)",
              file=sys.stderr)  # fmt: skip
        return EXIT_NOTHING
    try:
        with HistoryStore(path) as store:
            if opts.compare:
                return _compare(store, opts.compare, opts.json, path)
            rows, skipped = store.listing(opts.host, limit=opts.limit)
    except HistoryError as err:
        print(f"sglang-tui history: {err}", file=sys.stderr)
        return EXIT_BAD_ARGS
    if skipped:  # odd rows (another tool's, a hand edit): named, the rest shown
        print(f"sglang-tui history: not shown: {odd_rows(skipped)}", file=sys.stderr)
    if not rows and opts.host and not opts.json:  # launches of other hosts may be there: name the host
        print(f"history: no launches recorded for {opts.host}")
        return EXIT_NOTHING
    shown = _print({"launches": rows} if opts.json else None, format_launches(rows))
    return shown if rows else EXIT_NOTHING  # an empty listing is printed all the same (`{"launches": []}`)


def _compare(store: HistoryStore, ids: tuple[int, int], as_json: bool, path: object) -> int:
    found: list[dict[str, object]] = []
    for launch_id in ids:
        try:
            row = store.launch(launch_id)
        except OddRow as odd:
            print(f"sglang-tui history: launch {launch_id} in {path} cannot be shown ({odd}); compare another",
                  file=sys.stderr)  # fmt: skip
            return EXIT_BAD_ARGS
        if row is None:
            print(f"sglang-tui history: no launch {launch_id} in {path}; `sglang-tui history` lists them",
                  file=sys.stderr)  # fmt: skip
            return EXIT_NOTHING
        found.append(row)
    a, b = found
    return _print(compare_json(a, b) if as_json else None, format_compare(a, b))


def _print(obj: dict[str, object] | None, text: str) -> int:
    try:
        print(json.dumps(obj, ensure_ascii=False) if obj is not None else text)
        sys.stdout.flush()
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return EXIT_OK


def _ratio(a: float | None, b: float | None) -> float | None:
    return b / a if a and b is not None else None


def main_phases(launch: LaunchRow) -> dict[str, float | None]:
    """Seconds per main phase (summed when a phase appears twice)."""
    out: dict[str, float | None] = {}
    for p in launch["phases"]:
        if p["model"] != "main":
            continue
        d = p["duration_s"]
        out[p["phase"]] = (out.get(p["phase"]) or 0.0) + d if d is not None else out.get(p["phase"])
    return out


def _key_words(key: dict[str, object]) -> str:
    parts = [f"{key.get('host') or '?'}: {key.get('model') or '?'}"]
    for name in ("tp", "dp", "pp", "ep", "nnodes"):
        value = key.get(name)
        if value not in (None, 1) or name == "tp":
            parts.append(f"{name}{value if value is not None else '?'}")
    if key.get("speculative"):
        parts.append(f"spec {key['speculative']}")
    for name in ("quantization", "load_format", "version"):
        if key.get(name) not in (None, "auto"):
            parts.append(f"{name} {key[name]}")
    if key.get("args_hash"):
        parts.append(f"args {key['args_hash']}")
    return " · ".join(parts)


def _outcome(launch: LaunchRow) -> str:
    error = launch.get("error")
    late = " (late)" if launch.get("seen_from") == "late" else ""  # first seen after its outcome: log-timed phases only
    if launch["outcome"] == "failed" and isinstance(error, dict) and error.get("kind"):
        return f"failed ({error['kind']}){late}"
    return f"{launch['outcome']}{late}"


def _change_words(tried: dict[str, Any]) -> str:
    """`--cuda-graph-max-bs 160 (was 256)`, … of a launch's `tried`."""
    words = []
    for c in tried.get("changes") or []:
        was = f" (was {c['was']})" if c.get("was") is not None else ""
        words.append(f"{c.get('flag')} {c.get('value')}{was}")
    return ", ".join(words)


def _tried_line(launch: LaunchRow) -> str | None:
    """`#13 ran with --cuda-graph-max-bs 160 (was 256), the remedy for out of memory`, or None."""
    tried = launch.get("tried")
    if not isinstance(tried, dict):
        return None
    cause = f", the remedy for {tried['cause']}" if tried.get("cause") else ""
    return f"#{launch['id']} ran with {_change_words(tried)}{cause}"


def helped(before: LaunchRow, after: LaunchRow) -> str | None:
    """Whether the change B ran with helped, when B ran with a remedy for A's failure: "yes" (B ready), "no" (B
    failed the same way), "not this way" (B failed otherwise), "not yet" (B has no outcome); None otherwise."""
    tried = after.get("tried")
    if not isinstance(tried, dict) or before.get("outcome") != "failed":
        return None
    if after["outcome"] == "ready":
        return "yes"
    if after["outcome"] == "failed":
        kind = (after.get("error") or {}).get("kind")
        return "no" if kind == tried.get("cause") else "not this way"
    return "not yet" if after["outcome"] == "unfinished" else None


def format_launches(rows: list[LaunchRow]) -> str:
    if not rows:
        return "history: no launches recorded"
    header = ("ID", "HOST", "START", "OUTCOME", "TOTAL", *(p.replace("loading_weights", "weights") for p in MAIN_ORDER))
    table = [header]
    keys: list[str] = []
    for launch in rows:
        phases = main_phases(launch)
        start = str(launch["start"]).removeprefix("log ").removeprefix("clock ")
        table.append((
            str(launch["id"]), str(launch["host"]), start, _outcome(launch), fmt.duration(launch["total_s"]),
            *(fmt.duration(phases.get(p)) for p in MAIN_ORDER),
        ))  # fmt: skip
        words = _key_words(launch["key"])
        if words not in keys:
            keys.append(words)
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=False)).rstrip() for r in table]
    lines.append("")
    lines += [f"key: {k}" for k in keys]
    lines += [line for launch in rows if (line := _tried_line(launch)) is not None]
    return "\n".join(lines)


def compare_json(a: LaunchRow, b: LaunchRow) -> dict[str, Any]:
    pa, pb = main_phases(a), main_phases(b)
    phases = [p for p in MAIN_ORDER if p in pa or p in pb]
    return {
        "compare": {
            "a": a["id"], "b": b["id"], "same_key": a["key_id"] == b["key_id"],
            "phases": [
                {"phase": p, "a_s": pa.get(p), "b_s": pb.get(p),
                 "ratio": _ratio(pa.get(p), pb.get(p))}
                for p in phases
            ],
            "total": {"a_s": a["total_s"], "b_s": b["total_s"]},
            "outcome": {"a": _outcome(a), "b": _outcome(b)},
            "tried": {"a": a.get("tried"), "b": b.get("tried")},
            "helped": helped(a, b),
        }
    }  # fmt: skip


def format_compare(a: LaunchRow, b: LaunchRow) -> str:
    data = compare_json(a, b)["compare"]
    rows = [("PHASE", f"#{a['id']}", f"#{b['id']}", "B/A")]
    for p in data["phases"]:
        ratio = f"{p['ratio']:.2f}×" if p["ratio"] is not None else "-"
        rows.append((p["phase"], fmt.duration(p["a_s"]), fmt.duration(p["b_s"]), ratio))
    rows.append(("total", fmt.duration(a["total_s"]), fmt.duration(b["total_s"]), "-"))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=False)).rstrip() for r in rows]
    lines.append(f"outcome  #{a['id']} {data['outcome']['a']}, #{b['id']} {data['outcome']['b']}")
    tried = [line for launch in (a, b) if (line := _tried_line(launch)) is not None]
    lines += tried
    if data["helped"] is not None:
        lines.append(f"helped: {data['helped']}")
    if not data["same_key"]:
        lines.append("")
        lines.append(f"keys differ: #{a['id']} {_key_words(a['key'])}")
        lines.append(f"             #{b['id']} {_key_words(b['key'])}")
    return "\n".join(lines)
