"""The SGLang log parser: bytes in (chunks cut anywhere), events out, for SGLang 0.4.6 … 0.5.23.

Order carries meaning the lines alone don't: the second load cycle of a rank is the draft model's, a weight bar
after the main model's `Load weight end` is the draft's, access lines between uvicorn's start and "fired up"
are the warmup. Serving-time batch lines are coalesced: a run of them (no other event in between) is reported
once per stage, with the last line's numbers and the run's line count, so a 1M-line serving log costs little.
"""

from __future__ import annotations

import re
from typing import Literal

from tui.core.events import (
    BarProgress,
    Event,
    Failure,
    JitHint,
    LaunchStarted,
    Milestone,
    ProbeLogged,
    RankSeen,
    ServerArgs,
    SpeculativeHint,
    WatchdogDump,
)
from tui.core.launchkey import args_hash
from tui.core.lazyre import lazy
from tui.core.logbars import PIECEWISE_DESCS, parse_frame
from tui.core.logbatch import BatchRun
from tui.core.logcommand import LAUNCH_COMMAND, command_sizes
from tui.core.logenvelope import LogClock, split_envelope, torch_rank
from tui.core.logfailures import (
    exception_failure,
    is_exception_line,
    is_hf_message,
    kind_of,
    marker_failure,
    tolerated,
    what_failure,
)
from tui.core.loglines import LineSplitter, strip_ansi
from tui.core.logmilestones import (
    DRAFT_TYPE,
    milestone,
    server_arg,
    server_arg_int,
    sglang_version,
    speculative_family,
    uvicorn,
)
from tui.core.logshapes import nccl_ranks
from tui.core.probes import PROBE_QUERY, is_probe_access, is_probe_prefill, probe_access
from tui.core.ranklabels import tp_index
from tui.core.vocab import BarName, MilestoneKind

# Main-model milestones after the weights: a weight load after one of them is the draft's (speculative on).
_PAST_LOADING = frozenset({"kv_alloc", "mem_pool_end", "kv_profile", "graph_begin", "graph_end", "max_tokens",
                           "uvicorn_started", "app_startup_complete", "uvicorn_running", "http_running", "fired_up"})  # fmt: skip
# Per-rank milestones that repeat for the draft model (second cycle on the same rank = draft).
_CYCLE_KINDS = frozenset(
    ("init_begin", "init_end", "mem_baseline", "load_begin", "load_end", "kv_alloc", "mem_pool_end")
)
_WARMUP_PATHS = {"/model_info": "info", "/get_model_info": "info", "/generate": "generate",
                 "/v1/chat/completions": "generate", "/encode": "generate"}  # fmt: skip
# Cheap substrings that a failure line must contain before the failure regexes run.
_FAILURE_HINTS = ("rror", "xception", "sigquit", "SIGQUIT", "ailed", "dead", "died", "crash", "terminate", "memory",
                  "in use", "imeout", "Interrupt", "Exit", "ailure", "[E", "EADDRINUSE", "Killed", "[Errno",
                  "gated", "restricted", "Not Found for url", " hit a", "oom", "OOM")  # fmt: skip
_NONZERO = lazy(r"[1-9]")
# A traceback frame that shows a speculative draft worker at work (`self.draft_worker = EAGLEWorker(`).
_DRAFT_FRAME = lazy(
    r"\bdraft_worker\b|\b\w*(?:EAGLE|Eagle|NGram|Ngram|NGRAM|Standalone|DFlash|DFLASH|DSpark|DSPARK|Uno|UNO|FrozenKV|MTP)"
    r"\w*Worker(?:V2)?\b|/speculative/\w*worker\w*\.py",
    re.ASCII,
)
# Milestones after which an access line is the warmup's (HTTP is up, not fired up yet).
_HTTP_UP = frozenset(("uvicorn_running", "http_running"))
# Access lines whose 200 says the server is up (0.4.10+ answer 503 until the warmup is done; both generate).
_HEALTH_PATHS = frozenset(("/health", "/health_generate"))
# SGLang's cudacore_pyspy_dump_utils (0.5.x): `Pyspy dump for PID {pid} ({cmd}):` then py-spy's stdout;
# `Pyspy failed ({cmd}). Error: …` and `All pyspy dump attempts failed for PID …` when py-spy could not.
_PYSPY_HEADS = ("Pyspy dump for PID ", "Pyspy failed (", "All pyspy dump attempts failed")
_PYSPY_DUMP = lazy(r"Pyspy dump for PID (\d+)\b")
# How many lines above a traceback's end an `NCCL WARN` still names its cause (a traceback of a dozen frames, the
# ranks' interleaved lines).
_NCCL_WARN_REACH = 80
_WORDED = (("worded", True),)  # tui.core.logshapes: a kv_profile line read by its words
# A launch script's own print of the engine's arguments (`options={'model_path': …, 'tp_size': 2, …}`,
# `args=ServerArgs(model_path=…)`): it states the sizes as server_args does, but it is no launch line of SGLang's.
_ARGS_PRINT = lazy(r"[A-Za-z_][\w.]{0,40} ?[=:] ?(?:ServerArgs)?[{(] ?['\"]?model_path\b", re.ASCII)
_SPEC_OFF = lazy(r"speculative decoding (?:is )?(?:disabled|not enabled|off)", re.IGNORECASE)

_PROBE_MARK = ("?" + PROBE_QUERY).encode()


class LogParser:
    """Streaming parser: feed chunks of bytes (cut anywhere), get events; flush() at end of input."""

    def __init__(self) -> None:
        self._splitter = LineSplitter()
        self._clock = LogClock()
        self._out: list[Event] = []
        self._run = BatchRun()
        self._server_args_seen = False
        self._version: str | None = None  # from a `sglang version: X` line (SGLang itself never logs it)
        self._early: list[str] = []  # the open line's pieces read before their terminator came (its newest frame)
        self._reset_launch()

    def _reset_launch(self) -> None:
        self._speculative_off = False  # server_args said speculative_algorithm=None
        self._cycles: dict[tuple[str, str | None], int] = {}
        self._main_load_end = False  # rank 0 finished loading the main model
        self._capture_seen = False
        self._past_loading = False  # the main model's startup went past its weights (KV cache, capture, HTTP)
        self._in_capture = False  # a bare tqdm bar now is a capture bar
        self._weights_desc: str | None = None
        self._weights_total = 0
        self._weights_done = -1
        self._draft_bar = False
        self._last_bar: tuple[object, ...] | None = None
        self._ready = False
        self._warm = False  # uvicorn up, not fired up yet: access lines are the warmup
        self._warmup_seen: set[str] = set()
        self._hint_level = 0  # 0 none, 1 "speculative, unknown" reported, 2 an algorithm reported
        self._ranks: set[str] = set()
        self._in_traceback = False
        self._tb_rank: str | None = None
        self._tb_benign = False  # a request's traceback (uvicorn "Exception in ASGI application"): not fatal
        self._tb_head: str | None = None  # the line that opened the traceback (quoted if its end is cut off)
        self._tb_reported = False  # a failure was already reported for this traceback
        self._tb_at: str | None = None
        self._tb_ready = False  # the server was ready when the traceback opened
        self._capture_bar: BarName = "capture"  # which capture a bare tqdm frame belongs to ("capture" or "piecewise")
        self._failed = False  # a failure was reported in this launch
        self._pyspy: tuple[int, str | None, str | None, list[str]] | None = None  # SGLang's own dump being read
        self._jit_named: set[str] = set()
        self._http_seen = False  # an access line outside the warmup was reported (HTTP is up)
        self._health_seen = False  # …and one of a /health 200 (the server answered it up)
        self._nccl_max = 0  # the largest NCCL communicator reported (0: no NCCL INFO line yet)
        # the last `NCCL WARN` line (line, rank, at, the parser's line number then)
        self._nccl_warn: tuple[str, str | None, str | None, int] | None = None
        self._lines = 0  # lines read (the parser's, not the file's): how far above a traceback a WARN was
        self._started = False  # an event other than the launch's arguments was reported
        self._command: list[str] | None = None  # a launch command's lines so far (continued with `\\`)
        self._custom_group = False  # `init custom process group` (RLHF weight sync): its communicators are not TP's

    # ------------------------------------------------------------------------------------------ API

    def feed(self, data: bytes) -> list[Event]:
        if b"\x00" in data:  # NUL runs are nothing: `: > LOG` under a writer without O_APPEND leaves a hole of them
            data = data.replace(b"\x00", b"")
        block, partial = self._splitter.cut(data)
        if block:
            # tqdm frames are the splitter's work ("%" alone is a memchr; serving lines rarely hold one)
            if self._early or b"\r" in block or (b"%" in block and (b"%|" in block or b"Completed |" in block)):
                self._slow(block.decode("utf-8", "replace"))
            else:
                self._lean(block)
        if partial:
            pieces: list[str] = []
            self._splitter.split_partial(partial, pieces, None)
            self._pieces(pieces)
        self._read_open_frame()
        return self._take()

    def _read_open_frame(self) -> None:
        """tqdm draws "\r" before each frame, so the log's newest frame has no terminator yet: read it now (the
        bar says 24/64 when the log does, not 23/64), and pass over it when its terminator hands it out again.
        The same pieces in the same order whatever the chunking (LineSplitter.open_frame_pieces)."""
        pieces = self._splitter.open_frame_pieces()
        if pieces[: len(self._early)] != self._early:
            return  # not the line read early (cannot happen: the splitter's pieces only grow)
        for piece in pieces[len(self._early) :]:
            self._piece(piece)
        self._early = pieces if pieces else self._early

    def _pieces(self, pieces: list[str]) -> None:
        """Pieces handed out by the splitter, the open line's first: those read early are passed over."""
        early, self._early = self._early, []
        start = len(early) if pieces[: len(early)] == early else 0
        for piece in pieces[start:]:
            self._piece(piece)

    def flush(self) -> list[Event]:
        tail = self._splitter.take_tail()
        if tail:
            self._slow(tail + "\n")
        head = self._tb_head
        open_tb = self._in_traceback and not self._tb_benign and not (self._ready and not self._tb_ready)
        warned = self._warned_nccl() if open_tb else None
        if warned is not None:  # the traceback's end is cut off: an NCCL WARN shortly above it names the cause
            self._in_traceback = False
            self._emit(warned)
        elif open_tb and not self._tb_reported and head is not None:  # ready after it: not fatal (open_tb)
            # The input ends inside a traceback whose exception line is cut off: it still says something failed.
            self._in_traceback = False
            self._emit(Failure("exception", head, False, self._tb_rank, self._tb_at, self._t(self._tb_at)))
        self._end_pyspy()
        return self._take()

    # ------------------------------------------------------------------------------------------ paths

    def _take(self) -> list[Event]:
        if self._run:
            self._out += self._run.drain(self._clock)
        out, self._out = self._out, []
        return out

    def _slow(self, text: str) -> None:
        pieces: list[str] = []
        self._splitter.split_block(text, pieces, None)
        self._pieces(pieces)

    def _lean(self, block: bytes) -> None:
        """Line by line on bytes: a batch or post-warmup access line costs a few substring checks."""
        lines = block.split(b"\n")
        lines.pop()
        decode: bytes | None = None  # the run's lines so far in this block, kept in locals for speed
        prefill: bytes | None = None
        n_decode = n_prefill = 0
        decode_last = False
        hinted, warm = self._hint_level >= 1, self._warm  # refreshed after any line that may change them
        known, health_known = self._access_known()
        for line in lines:
            if b"Decode batch" in line or (b"gen throughput" in line and b"#running-req" in line):
                if not hinted and (b"accept len" in line or b"accept rate" in line):
                    self._run.add_block(decode, n_decode, prefill, n_prefill, decode_last)
                    decode, prefill, n_decode, n_prefill = None, None, 0, 0
                    self._piece(line.decode("utf-8", "replace"))
                    hinted, warm = self._hint_level >= 1, self._warm
                    known, health_known = self._access_known()
                else:
                    decode = line
                    n_decode += 1
                    decode_last = True
            elif b"Prefill batch" in line:
                if is_probe_prefill(line):  # a health check's 1-token generation: not the server's work
                    continue
                prefill = line
                n_prefill += 1
                decode_last = False
            elif (
                not warm
                and known
                and b"HTTP/1." in line
                and b'" ' in line
                and (health_known or b"/health" not in line)
                and _PROBE_MARK not in line  # our own request: the log shows it reached this server (ProbeLogged)
            ):
                continue  # an access line that says nothing new
            elif line:
                if decode is not None or prefill is not None:
                    self._run.add_block(decode, n_decode, prefill, n_prefill, decode_last)
                    decode, prefill, n_decode, n_prefill = None, None, 0, 0
                text = line.decode("utf-8", "replace")
                if "\x1b" in text:  # ANSI: the splitter's work
                    self._slow(text + "\n")
                else:
                    self._piece(text)
                hinted, warm = self._hint_level >= 1, self._warm
                known, health_known = self._access_known()
        self._run.add_block(decode, n_decode, prefill, n_prefill, decode_last)

    def _access_known(self) -> tuple[bool, bool]:
        """Whether an access line outside the warmup can say nothing new: (any access line, a /health one)."""
        return self._ready or self._http_seen, self._ready or self._health_seen

    def _emit(self, event: Event) -> None:
        if self._run:  # a run of batch lines ends at any other event
            self._out += self._run.drain(self._clock)
        if isinstance(event, Failure):
            self._failed = True
        if not isinstance(event, ServerArgs):
            self._started = True
        self._out.append(event)

    def _t(self, at: str | None) -> float | None:
        return self._clock.seconds(at) if at else None

    # ------------------------------------------------------------------------------------------ one piece

    def _piece(self, text: str) -> None:
        """One line (or tqdm frame) of text."""
        if "Decode batch" in text or ("gen throughput" in text and "#running-req" in text):  # 0.1: no stage word
            if self._hint_level < 1 and ("accept len" in text or "accept rate" in text):  # a clipped line: rate only
                env = split_envelope(strip_ansi(text))
                self._hint(None, env.line, env.at)
            self._run.add("decode", text)
            return
        if "Prefill batch" in text:
            if not is_probe_prefill(text):
                self._run.add("prefill", text)
            return
        if "HTTP/1." in text and '" ' in text and is_probe_access(text):
            ours = probe_access(text)  # one of sglang-tui's own probes: the log shows it reached this server
            if ours is not None:
                self._emit(ProbeLogged(*ours))
            return
        if "HTTP/1." in text and '" ' in text and not self._warm and self._access_said(text):
            return  # an access line outside the warmup that says nothing new
        if self._command is not None:
            self._command_line(text)
            return
        env = split_envelope(text)
        msg = env.msg
        self._lines += 1
        if not msg or msg.isspace():
            if env.level in ("ERROR", "CRITICAL"):  # an ERROR line cut off before its message still says it failed
                self._emit(Failure("other", env.line, False, env.rank, env.at, self._t(env.at)))
            return
        if self._pyspy is not None:
            if env.at is None:  # py-spy's text: unprefixed lines under the `Pyspy dump for PID` line
                self._pyspy[3].append(env.line)
                return
            self._end_pyspy()
        if msg.startswith(_PYSPY_HEADS) and self._pyspy_line(msg, env.rank, env.at):
            return
        if "JIT" in msg or "flashinfer.jit" in msg:
            kind = (
                "DeepGEMM"
                if "DeepGEMM JIT" in msg
                else "FlashInfer"
                if ("flashinfer.jit" in msg or "FlashInfer JIT" in msg)
                else None
            )
            if kind is not None and kind not in self._jit_named:
                self._jit_named.add(kind)
                self._emit(JitHint(kind, env.line, env.at, self._t(env.at)))
        if "%|" in msg or " Completed | " in msg:
            if env.at is None and self._bar(msg):  # tqdm frames carry no envelope
                return
        if env.at is None:
            if "what():" in msg[:12] and self._what_line(env.line, msg):
                return
            if self._in_traceback and self._traceback_line(env.line, msg):
                return
            if msg[0] in " \t":
                if msg.lstrip().startswith('File "'):  # a traceback whose head is not in view
                    self._in_traceback, self._tb_head, self._tb_reported = True, None, False
                    self._draft_frame(msg, env.at)
                return
        elif env.rank is not None and env.rank not in self._ranks:
            self._ranks.add(env.rank)
            self._emit(RankSeen(env.rank, tp_index(env.rank), env.at, self._t(env.at)))
        if msg.startswith("server_args="):
            self._server_args(msg, env.at)
            return
        if ("sglang" in msg and not self._server_args_seen and not self._started and env.at is None
                and (launch := LAUNCH_COMMAND.search(msg)) is not None):  # fmt: skip
            self._command = []
            self._command_line(msg[launch.start() :])
            return
        if "model_path" in msg[:80] and not self._server_args_seen and not self._started and _ARGS_PRINT.match(msg):
            self._args_print(msg, env.at)
            return
        if msg.startswith("sglang version"):
            self._version = sglang_version(msg) or self._version
            return
        if "NCCL INFO" in msg:
            self._nccl_info(msg, env.line, env.at)
            return
        if "NCCL WARN" in msg:  # a cause only if a traceback follows (NCCL warns of much it gets past)
            self._nccl_warn = (env.line, env.rank, env.at, self._lines)
            return
        if msg.startswith("init custom process group"):
            self._custom_group = True  # a weight-sync group with a trainer: its nranks say nothing of TP
        found = milestone(msg)
        if found is not None and found[1] == _WORDED and not self._kv_sizing_fits(env.rank):
            found = None
        if found is not None:
            if found[0] == "request_log":  # one says HTTP is up; `--log-requests` writes one per request
                if self._warm or self._access_known()[0]:
                    return
                self._http_seen = True
            self._milestone(found[0], found[1], env.rank, env.line, env.at)
            return
        if msg.startswith(("INFO:", "Started server process", "Application startup complete", "Uvicorn running on")):
            answer = uvicorn(msg)
            if answer is not None:
                self._uvicorn_line(answer[0], answer[1], env.line, env.at)
            return
        if "peculative" in msg or "eagle" in msg:
            if ("speculative decoding" in msg or "eagle speculative" in msg) and not _SPEC_OFF.search(msg):
                self._hint(speculative_family(msg), env.line, env.at)
        if msg.startswith("[rank"):
            rank = torch_rank(msg)
            if rank is not None and rank not in self._ranks:
                self._ranks.add(rank)
                self._emit(RankSeen(rank, tp_index(rank), env.at, self._t(env.at)))
        if "Traceback (most recent call last)" in msg:
            self._open_traceback(env.line, env.rank, env.at)
        if "Exception in ASGI application" in msg or msg.startswith("Exception ignored in"):
            self._in_traceback, self._tb_benign = True, True  # a request's or a finalizer's traceback
            return
        for hint in _FAILURE_HINTS:
            if hint in msg:
                if tolerated(msg) or (self._failed and is_hf_message(msg)):
                    break  # a 404 for a file SGLang does without; the message of an HF error already reported
                found_failure = marker_failure(msg)
                if found_failure is None and env.level in ("ERROR", "CRITICAL"):
                    named = kind_of(msg)  # an ERROR-level line that names a cause states it
                    found_failure = (named, True, False) if named is not None else None
                if found_failure is not None and msg == "Killed" and self._failed:
                    break  # the tree being killed after a failure already reported: a consequence, not news
                if found_failure is not None:
                    kind, root, opens = found_failure
                    self._emit(Failure(kind, env.line, root, env.rank, env.at, self._t(env.at)))
                    if opens:
                        self._open_traceback(env.line, env.rank, env.at)
                    if self._in_traceback and not self._tb_benign:
                        self._tb_reported = True
                break

    def _access_said(self, text: str) -> bool:
        """An access line outside the warmup says nothing new once HTTP up (and a /health 200) were reported."""
        known, health_known = self._access_known()
        return known and (health_known or "/health" not in text)

    def _what_line(self, line: str, msg: str) -> bool:
        """libstdc++'s `what():` line: the C++ exception that ended a rank (NCCL's watchdog timeout), whether or not
        its `terminate called after throwing …` line is in view. True when it was one."""
        found = what_failure(msg)
        if found is None:
            return False
        kind, root = found
        self._emit(Failure(kind, line, root))
        return True

    def _nccl_info(self, msg: str, line: str, at: str | None) -> None:
        """`host:pid:tid [dev] NCCL INFO …` (NCCL_DEBUG=INFO): distributed init. Reported once, and again for each
        larger communicator an `… nranks N …` line names (the largest is the TP group's, times PP)."""
        n = nccl_ranks(msg) if not self._custom_group else None
        if self._nccl_max and (n is None or n <= self._nccl_max):
            return
        self._nccl_max = max(self._nccl_max, n or 0) or -1  # -1: a line seen, no size yet
        self._milestone("dist_init", (("nranks", n),) if n is not None else (), None, line, at)

    def _warned_nccl(self) -> Failure | None:
        """An `NCCL WARN` line shortly above a traceback whose own last line names no cause (a generic
        `RuntimeError`, a socket error, a cut traceback): the WARN names it (nccl)."""
        warn = self._nccl_warn
        if warn is None or self._lines - warn[3] > _NCCL_WARN_REACH:
            return None
        line, rank, at, _ = warn
        return Failure("nccl", line, True, rank or self._tb_rank, at, self._t(at))

    def _open_traceback(self, line: str, rank: str | None, at: str | None) -> None:
        self._in_traceback, self._tb_rank, self._tb_benign = True, rank, False
        self._tb_head, self._tb_reported, self._tb_at, self._tb_ready = line, False, at, self._ready

    def _draft_frame(self, msg: str, at: str | None) -> None:
        """A frame of a draft worker: speculative decoding is on (which algorithm, the frame rarely says)."""
        if self._hint_level < 1 and "orker" in msg and not self._speculative_off and _DRAFT_FRAME.search(msg):
            self._hint(None, msg.strip(), at)

    def _pyspy_line(self, msg: str, rank: str | None, at: str | None) -> bool:
        """SGLang's py-spy lines (issue 13): a dump opens a block; its failures are diagnostics, not errors."""
        m = _PYSPY_DUMP.match(msg)
        if m:
            self._in_traceback = False
            self._pyspy = (int(m.group(1)), rank, at, [])
        return True

    def _end_pyspy(self) -> None:
        if self._pyspy is not None:
            pid, rank, at, lines = self._pyspy
            self._pyspy = None
            self._emit(WatchdogDump(pid, "\n".join(lines), rank, at, self._t(at)))

    def _traceback_line(self, line: str, msg: str) -> bool:
        """Inside a traceback: True when the line was consumed (frame line or the closing exception line)."""
        first = msg[0]
        if first in " \t":
            if "orker" in msg:
                self._draft_frame(msg, None)
            return True
        if msg.startswith(("Traceback (most recent", "During handling of the above", "The above exception")):
            return True
        if not is_exception_line(msg):
            return False
        self._in_traceback = False
        if self._tb_benign or tolerated(msg):
            self._tb_benign = False
            return True
        kind, root = exception_failure(msg)
        self._tb_reported = True
        warned = self._warned_nccl() if kind == "exception" else None
        self._emit(warned or Failure(kind, line, root, self._tb_rank))
        found = milestone(msg.partition(": ")[2])
        if found is not None and found[0] in ("load_straggler", "unbalanced_memory"):
            self._milestone(found[0], found[1], self._tb_rank, line, None)
        return True

    # ------------------------------------------------------------------------------------------ kinds of lines

    def _server_args(self, msg: str, at: str | None) -> None:
        t = self._t(at)
        if self._server_args_seen:
            self._emit(LaunchStarted(at, t))
            self._reset_launch()
        self._server_args_seen = True
        algorithm = server_arg(msg, "speculative_algorithm")
        if algorithm is not None:
            algorithm = algorithm.upper()
            self._hint_level = 2
        elif "speculative_algorithm" in msg:
            self._speculative_off = True
        self._emit(
            ServerArgs(
                model=server_arg(msg, "model_path"),
                tp_size=server_arg_int(msg, "tp_size"),
                dp_size=server_arg_int(msg, "dp_size"),
                pp_size=server_arg_int(msg, "pp_size"),
                speculative=algorithm,
                draft_model=server_arg(msg, "speculative_draft_model_path"),
                port=server_arg_int(msg, "port"),
                host=server_arg(msg, "host"),
                at=at,
                t=t,
                ep_size=server_arg_int(msg, "ep_size"),
                nnodes=server_arg_int(msg, "nnodes"),
                load_format=server_arg(msg, "load_format"),
                quantization=server_arg(msg, "quantization"),
                args_hash=args_hash(msg),
                version=self._version,
            )
        )

    def _kv_sizing_fits(self, rank: str | None) -> bool:
        """A KV sizing line known only by its words (`… memory calculation …`) is the KV cache phase where a rank
        printed it, the weights were loading, or the window starts mid-run; a main-process line of that wording
        before any weight (server_args' resolution of memory settings) is not."""
        return (
            rank is not None
            or not self._server_args_seen
            or any(k[0] in ("load_begin", "load_end") for k in self._cycles)
        )

    def _command_line(self, text: str) -> None:
        """A line of a launch command pasted or echoed into the log (`python -m sglang.launch_server … \\`,
        `sglang serve …`): the sizes its options state, once the command ends (its last line has no `\\`)."""
        assert self._command is not None
        body = text.rstrip()
        self._command.append(body.rstrip("\\"))
        if body.endswith("\\") and len(self._command) < 200:
            return
        command, self._command = " ".join(self._command), None
        sizes = command_sizes(command)
        if sizes is not None:
            self._emit(sizes)

    def _args_print(self, msg: str, at: str | None) -> None:
        """A script's print of the engine's arguments, before SGLang's own `server_args=` (an offline Engine prints
        none): the sizes it states, not a launch (a `server_args=` after it is the same launch)."""
        algorithm = server_arg(msg, "speculative_algorithm")
        self._emit(
            ServerArgs(
                model=server_arg(msg, "model_path"),
                tp_size=server_arg_int(msg, "tp_size"),
                dp_size=server_arg_int(msg, "dp_size"),
                pp_size=server_arg_int(msg, "pp_size"),
                speculative=algorithm.upper() if algorithm else None,
                at=at,
                t=self._t(at),
                ep_size=server_arg_int(msg, "ep_size"),
                nnodes=server_arg_int(msg, "nnodes"),
                stated_only=True,
            )
        )

    def _milestone(self, kind: MilestoneKind, fields: tuple[tuple[str, object], ...], rank: str | None, line: str,
                   at: str | None) -> None:  # fmt: skip
        draft = False
        if kind in _CYCLE_KINDS:
            key = (kind, rank)
            cycle = self._cycles.get(key, 0) + 1
            self._cycles[key] = cycle
            draft = cycle >= 2 and not self._speculative_off
            if kind == "load_end":
                model_type = next((str(v) for k, v in fields if k == "type"), "")
                if model_type and DRAFT_TYPE.search(model_type):
                    draft = True
                    self._hint(speculative_family(model_type), line, at)
                if not draft and (rank is None or not _NONZERO.search(rank)):
                    self._main_load_end = True
            elif kind == "load_begin":
                self._in_capture = False
            if not draft and kind in ("load_begin", "load_end") and self._past_loading and self._speculative_on():
                draft = True  # EAGLE v1's order: the draft loads after the target's KV cache or capture
        elif kind in ("graph_begin", "graph_end"):
            draft = "draft" in str(fields[0][1]).lower() if fields else False
            if draft and not self._speculative_off:  # a draft model's graph: speculative decoding is on
                self._hint(speculative_family(str(fields[0][1])), line, at)
            if kind == "graph_begin":
                self._capture_seen = self._in_capture = True
                self._capture_bar = "piecewise" if "piecewise" in str(fields[0][1]).lower() else "capture"
        elif kind in _HTTP_UP:
            self._in_capture = False
            self._warm = not self._ready
        elif kind == "max_tokens":
            self._in_capture = False
        elif kind == "fired_up":
            self._ready, self._warm, self._in_capture = True, False, False
        if not draft and kind in _PAST_LOADING:
            self._past_loading = True
        self._emit(Milestone(kind, rank, draft, fields, line, at, self._t(at)))

    def _speculative_on(self) -> bool:
        return self._hint_level >= 1 and not self._speculative_off

    def _uvicorn_line(
        self, kind: MilestoneKind | Literal["access"], fields: tuple[tuple[str, object], ...], line: str, at: str | None
    ) -> None:
        if kind == "access":
            if not self._warm:
                self._outside_access(fields, line, at)
                return
            path = str(fields[1][1]).partition("?")[0]
            role = _WARMUP_PATHS.get(path)
            if role is None or role in self._warmup_seen:
                return
            self._warmup_seen.add(role)
            kind = "warmup_request"
        else:
            self._in_capture = False
            self._warm = not self._ready
        self._emit(Milestone(kind, None, False, fields, line, at, self._t(at)))

    def _outside_access(self, fields: tuple[tuple[str, object], ...], line: str, at: str | None) -> None:
        """An access line with no warmup in view: HTTP is up (http_access); a /health or /health_generate 200 says
        the server answered up (health_access). Each once: a serving log holds millions of them."""
        if self._ready:
            return
        path = str(fields[1][1]).partition("?")[0]
        if fields[2][1] == 200 and path in _HEALTH_PATHS:
            if not self._health_seen:
                self._health_seen = self._http_seen = True
                self._emit(Milestone("health_access", None, False, fields, line, at, self._t(at)))
        elif not self._http_seen:
            self._http_seen = True
            self._emit(Milestone("http_access", None, False, fields, line, at, self._t(at)))

    def _bar(self, msg: str) -> bool:
        frame = parse_frame(msg)
        if frame is None:
            return False
        bar: BarName
        if frame.kind == "shards":
            bar = "draft_weights" if self._is_draft_bar(frame.desc, frame.done, frame.total) else "weights"
        elif frame.kind == "capture":
            bar = "piecewise" if frame.desc.startswith(PIECEWISE_DESCS) else "capture"
            self._capture_seen = self._in_capture = self._past_loading = True
            self._capture_bar = bar
        elif frame.kind == "jit":
            bar = "jit"
        elif frame.kind == "warmup":
            bar = "warmup"
        elif self._in_capture:
            bar = self._capture_bar
        else:
            return False
        key = (bar, frame.done, frame.total, frame.bs, frame.desc)
        if key == self._last_bar:  # tqdm's close() prints the last frame again
            return True
        self._last_bar = key
        self._emit(
            BarProgress(
                bar=bar,
                done=frame.done,
                total=frame.total,
                bs=frame.bs,
                avail_mem_gb=frame.avail_mem_gb,
                label=frame.desc,
                elapsed_s=frame.elapsed_s,
                remaining_s=frame.remaining_s,
            )
        )
        return True

    def _is_draft_bar(self, desc: str, done: int, total: int) -> bool:
        """The draft's weight bar: after the main model's load end or a capture, or a new bar after the main one."""
        if self._speculative_off:
            return False
        if self._draft_bar or self._main_load_end or self._capture_seen:
            self._draft_bar = True
            return True
        if self._weights_desc is not None:
            complete = self._weights_done >= self._weights_total
            other_size = total != self._weights_total and (complete or self._speculative_on())
            # a window of the log that starts inside a frame cuts its description ("ding shards: 40% Completed |
            # 12/30 …", then "Multi-thread loading shards: …"): the same bar, not another one
            cut = total == self._weights_total and desc.endswith(self._weights_desc)
            if (desc != self._weights_desc and not cut) or other_size or (complete and done < self._weights_done):
                self._draft_bar = True
                return True
        self._weights_desc = desc
        self._weights_total = total
        self._weights_done = max(self._weights_done, done)
        return False

    def _hint(self, algorithm: str | None, line: str, at: str | None) -> None:
        level = 2 if algorithm else 1
        if level > self._hint_level:
            self._hint_level = level
            self._emit(SpeculativeHint(algorithm, line, at, self._t(at)))
