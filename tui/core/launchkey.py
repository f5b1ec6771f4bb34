"""The key that says two launches are "the same launch" for the history: host, model, parallel sizes,
speculative algorithm and draft, load format, quantization, SGLang version, and a hash of the other args.

Pure: `args_hash(text)` reads a `server_args=` line, `launch_key(server, host)` a parsed ServerInfo.
"""

from __future__ import annotations

import json
import zlib

from tui.core.lazyre import lazy
from tui.core.state import Readiness, ServerInfo

# Fields that change between otherwise identical launches (or name where it runs): not part of the hash.
VOLATILE = frozenset(
    {"port", "host", "random_seed", "nccl_port", "dist_init_addr", "node_rank", "log_level", "log_level_http",
     "log_requests", "log_requests_level", "api_key", "admin_api_key", "served_model_name", "file_storage_path",
     "decode_log_interval", "enable_metrics", "show_time_cost", "base_gpu_id", "download_dir", "metrics_http_port",
     "watchdog_timeout", "crash_dump_folder", "tokenizer_worker_num", "warmups", "skip_server_warmup"}
)  # fmt: skip
_FIELD = lazy(r"""(?:(?<=[(,{\s])|^)'?(\w+)'?(?:=|: )""")


def args_hash(text: str) -> str | None:
    """A short hash of a `server_args=ServerArgs(…)` / `server_args={…}` line's fields, volatile ones left out."""
    start = text.find("server_args=")
    if start < 0:
        return None
    body = text[start + len("server_args=") :].strip()
    kept: list[str] = []
    matches = list(_FIELD.finditer(body))
    for i, m in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(body)
        name = m.group(1)
        if name in VOLATILE:
            continue
        kept.append(name + "=" + body[m.end() : end].strip().rstrip(",").strip())
    if not kept:
        return None
    data = "\n".join(kept).encode("utf-8", "replace")
    # two CRC-32s (zlib: no OpenSSL import on replay's path): enough to tell a user's arg sets apart
    return f"{zlib.crc32(data):08x}{zlib.crc32(data[::-1]) & 0xFFFF:04x}"


def key_fields(server: ServerInfo, host: str) -> dict[str, object]:
    """The key as named fields (stored with the launch, shown by `history`)."""
    return {
        "host": host,
        "model": server.model,
        "tp": server.tp_size,
        "dp": server.dp_size,
        "pp": server.pp_size,
        "ep": server.ep_size,
        "nnodes": server.nnodes,
        "speculative": server.speculative,
        "draft_model": server.draft_model,
        "load_format": server.load_format,
        "quantization": server.quantization,
        "version": server.version,
        "args_hash": server.args_hash,
    }


def launch_key(server: ServerInfo, host: str) -> str | None:
    """One string for the key; None until the server_args are seen (no model: nothing to compare)."""
    if not server.model:
        return None
    return json.dumps(key_fields(server, host), sort_keys=True, separators=(",", ":"))


def start_mark(state: Readiness) -> str | None:
    """What identifies this launch across watchers: the log time of its first span (else the clock)."""
    if not state.timeline:
        return None
    first = state.timeline[0]
    return f"log {first.start}" if first.start else f"clock {first.started_at:.3f}"
