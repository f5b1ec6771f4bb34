"""Startup milestone messages across SGLang 0.4.6 … 0.5.23, `server_args=`, and speculative-algorithm names.

Functions here read one message (the text after the `[time ranks]` envelope) and know nothing of order;
the parser decides what order means (which load cycle is the draft model's, which window is warmup).
"""

from __future__ import annotations

import re
from typing import Literal

from tui.core.lazyre import lazy
from tui.core.logshapes import shape
from tui.core.vocab import MilestoneKind

_NUM = r"(\d{1,12}(?:\.\d{1,6})?)"
_ELAPSED = lazy(r"(?:Time elapsed: |elapsed=)" + _NUM + r" ?s", re.ASCII)
_MEM_USAGE = lazy(r"mem usage=" + _NUM + r" ?GB", re.ASCII)
_AVAIL = lazy(r"avail(?:able)?[ _](?:gpu_)?mem=" + _NUM + r" ?GB", re.ASCII)
_TYPE = lazy(r"\btype=(\w+)", re.ASCII)
_TOKENS = lazy(r"#tokens: (\d{1,15})", re.ASCII)
_KV_SIZES = lazy(r"\b(K|V|KV) size: " + _NUM + r" ?GB", re.ASCII)
_CAPTURE = lazy(r"Capture (?P<what>.*?)\s*(?i:cuda|cpu|npu|xpu|musa|hpu) graph (?P<edge>begin|end)\b", re.ASCII)
_BS_LIST = lazy(r"\bbs=\[([\d, ]{0,4000})\]", re.ASCII)
_MAX_TOKENS = lazy(r"max_total_num_tokens=(\d{1,15})", re.ASCII)
_STARTED = lazy(r"Started server process \[(\d{1,10})\]", re.ASCII)
_RUNNING = lazy(r"Uvicorn running on (\S+)", re.ASCII)
_ACCESS = lazy(r'"(?P<method>[A-Z]{3,7}) (?P<path>\S+) HTTP/[\d.]+" (?P<status>\d{3})', re.ASCII)
_STRAGGLER = lazy(r"TP rank (\d{1,6}) could finish the model loading", re.ASCII)
_TIMINGS = lazy(r"(\w+)=" + _NUM, re.ASCII)
_GRAPH_TIMINGS = lazy(r"cuda_graph=\{([^}]{0,2000})\}", re.ASCII)
_VERSION = lazy(r"sglang version: (\d{1,4}\.\d{1,4}[\w.+-]{0,40})$", re.ASCII)
DRAFT_TYPE = lazy(r"Eagle|EAGLE|NextN|MTP|Draft", re.ASCII)

# Message prefixes that open each milestone, checked with str.startswith before any regex.
_PREFIXES: tuple[tuple[str, MilestoneKind], ...] = (
    ("Init torch distributed begin", "init_begin"),
    ("Init nccl begin", "init_begin"),  # 0.1–0.2, under `[gpu_id=N]`
    ("Init parallel begin", "init_begin"),
    ("Init torch distributed ends", "init_end"),
    ("Init parallel ends", "init_end"),
    ("Memory baseline taken", "mem_baseline"),
    ("Load weight begin", "load_begin"),
    ("Load weight end", "load_end"),
    ("KV Cache is allocated", "kv_alloc"),
    ("KV Cache VA upper bound", "kv_alloc"),
    ("Memory pool end", "mem_pool_end"),
    ("max_total_num_tokens=", "max_tokens"),
    ("Engine startup timings", "startup_timings"),
    ("The server is fired up and ready to roll", "fired_up"),
    ("The memory capacity is unbalanced", "unbalanced_memory"),
    ("SIGTERM received", "shutdown"),  # a signal from someone asked it to stop (issue 17)
    ("Signal SIGTERM received", "shutdown"),
)
Fields = tuple[tuple[str, object], ...]


def milestone(msg: str) -> tuple[MilestoneKind, Fields] | None:
    """(kind, fields) when `msg` is a startup milestone of the scheduler or main process."""
    for prefix, kind in _PREFIXES:
        if msg.startswith(prefix):
            return kind, _fields(kind, msg)
    if msg.startswith("Capture ") and " graph " in msg:
        m = _CAPTURE.match(msg)
        if m:
            kind = "graph_begin" if m.group("edge") == "begin" else "graph_end"
            fields: list[tuple[str, object]] = [("what", m.group("what").strip())]
            fields += _memory(msg)
            bs = _BS_LIST.search(msg)
            if bs:
                fields.append(("bs", [int(x) for x in bs.group(1).replace(" ", "").split(",") if x][:512]))
            return kind, tuple(fields)
    if "could finish the model loading" in msg:
        m = _STRAGGLER.search(msg)
        return "load_straggler", (("tp_rank", int(m.group(1))),) if m else ()
    return shape(msg)


def uvicorn(msg: str) -> tuple[MilestoneKind | Literal["access"], Fields] | None:
    """uvicorn's own lines (`INFO:     Started server process [pid]`, …) as milestones; access lines as
    ("access", {method, path, status})."""
    body = msg[5:].lstrip() if msg.startswith("INFO:") else msg
    if body.startswith("Started server process"):
        m = _STARTED.match(body)
        return "uvicorn_started", (("pid", int(m.group(1))),) if m else ()
    if body.startswith("Application startup complete"):
        return "app_startup_complete", ()
    if body.startswith("Shutting down"):  # uvicorn caught SIGINT or SIGTERM
        return "shutdown", ()
    if body.startswith("Uvicorn running on"):
        m = _RUNNING.match(body)
        return "uvicorn_running", (("url", m.group(1)),) if m else ()
    if '" ' in body:
        m = _ACCESS.search(body)
        if m:
            return "access", (
                ("method", m.group("method")),
                ("path", m.group("path")),
                ("status", int(m.group("status"))),
            )
    return None


def _fields(kind: str, msg: str) -> Fields:
    out: list[tuple[str, object]] = []
    if kind == "load_end":
        t = _TYPE.search(msg)
        if t:
            out.append(("type", t.group(1)))
        out += _memory(msg)
    elif kind == "kv_alloc":
        t = _TOKENS.search(msg)
        if t:
            out.append(("tokens", int(t.group(1))))
        for name, value in _KV_SIZES.findall(msg):
            out.append((name.lower() + "_size_gb", float(value)))
    elif kind == "max_tokens":
        t = _MAX_TOKENS.match(msg)
        if t:
            out.append(("tokens", int(t.group(1))))
        out += _memory(msg)
    elif kind == "startup_timings":
        # 0.5.23 and 2026: `load_weight=154.93, …, cuda_graph={prefill=64.55, decode=4.58, target_verify=0.00, …},
        # tokenizer_e2e=257.64`; the map's keys vary with what was captured, and 0.00 is "not captured", not instant
        graphs = _GRAPH_TIMINGS.search(msg)
        flat = msg[: graphs.start()] + msg[graphs.end() :] if graphs else msg
        out += [(k, float(v)) for k, v in _TIMINGS.findall(flat)][:32]
        if graphs:
            each = [(k, float(v)) for k, v in _TIMINGS.findall(graphs.group(1))][:16]
            out += [(f"cuda_graph.{k}", v) for k, v in each]
            out.append(("cuda_graph_total", round(sum(v for _, v in each), 3)))
    elif kind in ("init_end", "mem_baseline", "load_begin", "mem_pool_end"):
        out += _memory(msg)
    return tuple(out)


def _memory(msg: str) -> list[tuple[str, object]]:
    out: list[tuple[str, object]] = []
    m = _ELAPSED.search(msg)
    if m:
        out.append(("elapsed_s", float(m.group(1))))
    m = _AVAIL.search(msg)
    if m:
        out.append(("avail_mem_gb", float(m.group(1))))
    m = _MEM_USAGE.search(msg)
    if m:
        out.append(("mem_usage_gb", float(m.group(1))))
    return out


def sglang_version(msg: str) -> str | None:
    """The version in `sglang version: 0.5.23`, the line of SGLang's `sglang version` command (0.5.x cli/main.py)
    that a launch script may print into the log. SGLang's own startup log never names its version (0.4.6 …
    0.5.23: `__version__` goes only to /server_info and /get_server_info), so this is the log's one way to say it."""
    m = _VERSION.match(msg.strip())
    return m.group(1) if m else None


# ------------------------------------------------------------------------------------------------ server_args

_ARG_CACHE: dict[str, re.Pattern[str]] = {}


def server_arg(text: str, key: str) -> str | None:
    """A field of `server_args=ServerArgs(key='v', …)` or `server_args={'key': 'v', …}`; None for None/absent."""
    pattern = _ARG_CACHE.get(key)
    if pattern is None:
        pattern = re.compile(r"[(,{\s]'?" + key + r"'?(?:=|: )(?P<v>'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|[^,)}\s]+)")
        _ARG_CACHE[key] = pattern
    m = pattern.search(text)
    if not m:
        return None
    value = m.group("v")
    if value[:1] in ("'", '"'):
        value = value[1:-1]
    return None if value in ("None", "") else value


def server_arg_int(text: str, key: str) -> int | None:
    value = server_arg(text, key)
    return int(value) if value is not None and value.isdigit() and len(value) < 10 else None


def speculative_family(text: str) -> str | None:
    """The algorithm a line names ("EAGLE3", "EAGLE", "NEXTN", "STANDALONE", "NGRAM", "DFLASH", "DSPARK", "UNO",
    "FROZEN_KV_MTP"), or None."""
    low = text.lower()
    if "frozen_kv_mtp" in low or "frozen-kv mtp" in low or "frozenkvmtp" in low:
        return "FROZEN_KV_MTP"
    for name in ("dflash", "dspark"):
        if name in low:
            return name.upper()
    if "uno " in low or "unoworker" in low or "uno_worker" in low:
        return "UNO"
    if "eagle/eagle3" in low:  # "Spec v2 is enabled for eagle/eagle3 speculative decoding": the family
        return "EAGLE"
    if "eagle3" in low:
        return "EAGLE3"
    if "eagle" in low:
        return "EAGLE"
    if "nextn" in low or "mtp" in low:
        return "NEXTN"
    if "standalone" in low:
        return "STANDALONE"
    if "ngram" in low:
        return "NGRAM"
    return None
