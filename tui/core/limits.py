"""The most sglang-tui reads of anything it does not write itself: HTTP bodies, stream lines, files.

Each cap is far above what SGLang (or a person) ever gives, so only a broken or hostile peer reaches one, and then
the read stops there and says so in one line: memory stays bounded whatever answers on the port. The sizes SGLang
gives (0.5.23; measured on the simulator, which answers in SGLang's shapes, and read in SGLang's source):
`/health` is empty, `/model_info` and `/v1/models` a few hundred bytes, `/server_info` a few KB (the server
args and one small dict of internal state per DP rank), `/metrics` tens of KB on a big server (~165 series,
histograms of ≤30 buckets, per DP rank with --enable-metrics-for-all-schedulers), a `/generate` stream line
the whole text so far plus meta_info (≤32,768 tokens: about 1 MB at the very worst).
"""

from __future__ import annotations

KIB = 1 << 10
MIB = 1 << 20

PROBE_BODY_MAX = 4 * MIB  # /health, /v1/models, /model_info, /server_info, the router's /health and /workers
METRICS_BODY_MAX = 16 * MIB  # /metrics, read once after a bench
STREAM_LINE_MAX = 16 * MIB  # one line of /generate's stream (SGLang sends the whole text so far in each)
ERROR_BODY_MAX = 64 * KIB  # a non-200 answer to /generate: only its first words are shown
LOG_READ_MAX = 8 * MIB  # the log's stretch written during a bench, read back for the acceptance cross-check
SETTINGS_MAX = 1 * MIB  # config.toml (a page of settings is a few KB)
PROMPTS_MAX = 256 * MIB  # a --prompts JSONL file (each prompt at most MAX_PROMPT_CHARS)


def size_words(n: int) -> str:
    """A cap as words: "4 MiB", "64 KiB"."""
    return f"{n // MIB} MiB" if n >= MIB else f"{n // KIB} KiB"
