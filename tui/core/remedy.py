"""What to change after a failed startup: `error.remedy` of `replay --json` / `wait --json` (DESIGN.md, third round).

From the failed state's error, the log's clues (tui/core/remedy_clues.py) and the launch command when the watcher
knows it. SGLang's own printed suggestion comes first (`source: "log"`, quoted); else the table of known causes
(tui/core/remedy_table.py, `source: "table"`); else no remedy. New values are computed from what the launch used:
- a memory fraction: 0.05 below what it was, down to the 0.05 grid (0.88 -> 0.80); unknown: SGLang's own 0.8;
  for the KV cache: 0.05 above (at most 0.95);
- the capture's largest batch size: half of it (when server_args did not say: the largest the capture began with,
  else the one it ran out of memory at; else SGLang's own example, 16);
- the context length: half of it; TP: twice it, when the host has that many GPUs; else fp8 quantization;
- --dist-timeout: twice it (SGLang's default is torch's 600 s); a port: the next one up (said as not checked free).
A value that cannot be known (a token, an interface name) is said in the text, never made up as a change.
`command` is the launch command with the changes applied, every word quoted; text to copy, never run from here.
"""

from __future__ import annotations

import math
import re
import shlex
from dataclasses import dataclass
from typing import Literal

from tui.core.events import LogClues
from tui.core.launchkey import start_mark
from tui.core.lazyre import lazy
from tui.core.logmilestones import server_arg
from tui.core.remedy_table import GPU_OOM, LEGACY_FLAGS, ROWS, Row, row
from tui.core.state import ErrorInfo, Phase, Readiness, TriedChange

Source = Literal["log", "table"]

_PORT_IN_LINE = lazy(r"\(['\"][^'\"]*['\"], (\d{2,5})\)|[\w\]]:(\d{2,5})['\")]|[Pp]ort (\d{2,5})\b")
_ADVICE_FLAG = lazy(r"set (--[a-z0-9-]+) to a smaller value(?: \(e\.g\., ([\d.]+))?")
_LOG_SAYS_FRACTION = lazy(r"Please try to (increase|decrease) (--mem-fraction-static)")
_TIMEOUT_MS = lazy(r"(\d+) ?ms\b|after (\d+) milliseconds|ran for (\d+) milliseconds")
# a row that also matches by the phase the launch failed in, whatever its line says
_PHASE_ROWS = {"capture_oom": Phase.CUDA_GRAPH}
DEFAULT_DIST_TIMEOUT_S = 600  # torch.distributed's default, which SGLang keeps when --dist-timeout is not given


@dataclass(frozen=True)
class Change:
    flag: str  # `--flag` or an environment variable's name
    value: str
    was: str | None = None

    def to_json(self) -> dict[str, object]:
        return {"flag": self.flag, "value": self.value, "was": self.was}


@dataclass(frozen=True)
class Remedy:
    text: str
    changes: tuple[Change, ...]
    source: Source
    ref: str
    command: str | None
    cause: str = ""  # the table row (or "log"): the board's short form

    def to_json(self) -> dict[str, object]:
        return {
            "text": self.text,
            "changes": [c.to_json() for c in self.changes],
            "source": self.source,
            "ref": self.ref,
            "command": self.command,
        }

    def line(self) -> str:
        """`TEXT; change: --flag V (was W), …; run: COMMAND` (what is known of it)."""
        words = [self.text]
        if self.changes:
            words.append("change: " + ", ".join(
                f"{c.flag} {c.value}" + (f" (was {c.was})" if c.was is not None else "") for c in self.changes
            ))  # fmt: skip
        if self.command:
            words.append(f"run: {self.command}")
        return "; ".join(words)

    def headline(self) -> str:
        """The TUI header's line: the changes first (what to do), then why; a restart offer when it has a command."""
        changes = ", ".join(
            f"{c.flag} {c.value}" + (f" (was {c.was})" if c.was is not None else "") for c in self.changes
        )
        words = [w for w in (changes, self.text, "r restarts with it" if self.command else "") if w]
        return " · ".join(words)

    def short(self) -> str:
        """One line: the changes as flags (`--cuda-graph-max-bs-decode 80 --mem-fraction-static 0.8`), else the text."""
        if not self.changes:
            return self.text
        return " ".join(
            f"{c.flag} {c.value}" if c.flag.startswith("--") else f"{c.flag}={c.value}" for c in self.changes
        )


def tried_change(state: Readiness, found: Remedy) -> TriedChange:
    """The fact a restart with this remedy leaves in the watch's setup (the history records it per launch)."""
    changes = tuple((c.flag, c.value, c.was) for c in found.changes)
    return TriedChange(changes, state.error.kind if state.error is not None else None, start_mark(state))


def remedy_line(state: Readiness) -> str:
    """The remedy in one line (wait's --on-fail hook gets it as SGLANG_TUI_REMEDY), "" when none is known."""
    found = remedy(state)
    return found.line() if found is not None else ""


def remedy_json(state: Readiness) -> dict[str, object] | None:
    found = remedy(state)
    return found.to_json() if found is not None else None


def remedy(state: Readiness) -> Remedy | None:
    """The remedy for the state's failure, or None (not failed, no error line, or no known cause)."""
    s = state
    if s.phase is not Phase.FAILED or s.error is None or s.error.stopped_by or s.error.action is not None:
        return None
    clues = s.clues or LogClues()
    launch = s.launch_command
    found = _from_log(s, s.error, clues, launch) or _from_table(s, s.error, clues, launch)
    return found


# ---------------------------------------------------------------------------------------------------- from the log


def _from_log(s: Readiness, error: ErrorInfo, clues: LogClues, launch: str | None) -> Remedy | None:
    """SGLang's own `Possible solutions:` block, or its `Please try to increase --mem-fraction-static` line."""
    if len(clues.advice) > 1:
        changes: list[Change] = []
        for line in clues.advice[1:]:
            m = _ADVICE_FLAG.search(line)
            if m is None:
                continue
            flag = m.group(1)
            if "mem-fraction" in flag:
                changes.append(_fraction_down(s, clues, launch, example=m.group(2)))
            elif "max-bs" in flag:
                changes.append(_max_bs_down(clues, launch, flag, example=m.group(2), capture_bs=_capture_bs(s)))
        quoted = " ".join(clues.advice)
        return _made(f"SGLang says: {quoted}", changes, "log", _log_ref(clues), launch, "log")
    m = _LOG_SAYS_FRACTION.search(error.line)
    if m is not None:
        change = _fraction_up(clues, launch) if m.group(1) == "increase" else _fraction_down(s, clues, launch)
        said = error.line[m.start() :].strip()
        return _made(f"SGLang says: {said}", [change], "log", row("kv_cache_small").ref, launch, "log")
    return None


def _log_ref(clues: LogClues) -> str:
    """SGLang prints its suggestion for a failed CUDA graph capture; the doc that explains those flags."""
    return row("capture_oom").ref


# -------------------------------------------------------------------------------------------------- from the table


def _from_table(s: Readiness, error: ErrorInfo, clues: LogClues, launch: str | None) -> Remedy | None:
    line = error.line
    for r in ROWS:
        by_phase = r.cause in _PHASE_ROWS and _PHASE_ROWS[r.cause] is _failed_phase(s) and GPU_OOM.search(line)
        if error.kind not in r.kinds or not (r.words.search(line) or by_phase):
            continue
        made = _apply_row(r, s, error, clues, launch)
        if made is not None:
            return made
    return None


def _apply_row(r: Row, s: Readiness, error: ErrorInfo, clues: LogClues, launch: str | None) -> Remedy | None:
    def done(changes: list[Change], text: str = r.text) -> Remedy:
        return _made(text, changes, "table", r.ref, launch, r.cause)

    if r.cause == "draft_oom":
        if not _failed_in_draft(s):
            return None
        return done([_fraction_down(s, clues, launch)])
    if r.cause == "capture_oom":
        flag = _max_bs_flag(clues, launch)
        return done([_max_bs_down(clues, launch, flag, capture_bs=_capture_bs(s)), _fraction_down(s, clues, launch)])
    if r.cause == "kv_cache_small":
        changes = [_fraction_up(clues, launch)]
        context = _was(clues, launch, "context_length", "--context-length")
        if context is not None and context.isdigit() and int(context) > 1024:
            changes.append(Change("--context-length", str(int(context) // 2), context))
        return done(changes)
    if r.cause == "load_oom":
        if _failed_phase(s) is not Phase.LOADING_WEIGHTS:
            return None
        return done(_load_changes(s, clues, launch))
    if r.cause == "nccl_timeout":
        return done(_timeout_changes(error.line, clues, launch))
    if r.cause in ("nccl_system", "nccl_collective_timeout"):
        return done([_env("NCCL_DEBUG", "INFO", launch)])
    if r.cause == "port_in_use":
        return _port(r, error.line, clues, launch)
    if r.cause == "gated_model":
        model = _was(clues, launch, "model_path", "--model-path") or s.server.model
        where = f" (https://huggingface.co/{model})" if model and not model.startswith("/") else ""
        return _made(f"{r.text}{where}", [], "table", r.ref, None, r.cause)
    if r.cause == "model_missing":
        model = _was(clues, launch, "model_path", "--model-path") or s.server.model
        path = re.search(r"No such file or directory: '([^']+)'", error.line)
        named = path.group(1) if path else model
        text = r.text + (f" ({named} was not found)" if named else "")
        return _made(text, [], "table", r.ref, None, r.cause)
    if r.cause == "warmup_proxy":
        host = _was(clues, launch, "host", "--host")
        hosts = ["localhost", "127.0.0.1", "0.0.0.0"] + (
            [host] if host and host not in ("127.0.0.1", "0.0.0.0") else []
        )
        return done([_env("no_proxy", ",".join(hosts), launch)])
    if r.cause == "jit_build":
        if not clues.cache_dirs:
            return None
        text = f"{r.text}: {', '.join(clues.cache_dirs)}"
        return _made(text, [], "table", r.ref, None, r.cause)
    return None


# --------------------------------------------------------------------------------------------------- the changes


def _fraction_down(s: Readiness, clues: LogClues, launch: str | None, example: str | None = None) -> Change:
    was = _was(clues, launch, "mem_fraction_static", "--mem-fraction-static")
    value = _float(was)
    if value is None:
        new = example or "0.8"  # SGLang's own example value (runner_backend_utils: "e.g., 0.8 or 0.7")
    else:
        new = f"{max(0.3, math.floor((value - 0.05) * 20 + 1e-9) / 20):.2f}"
    return Change("--mem-fraction-static", new, was)


def _fraction_up(clues: LogClues, launch: str | None) -> Change:
    was = _was(clues, launch, "mem_fraction_static", "--mem-fraction-static")
    value = _float(was)
    new = "0.9" if value is None else f"{min(0.95, round(value + 0.05, 2)):.2f}"
    return Change("--mem-fraction-static", new, was)


def _max_bs_flag(clues: LogClues, launch: str | None) -> str:
    """0.5.23's --cuda-graph-max-bs-decode, unless the launch is an older SGLang's that spells it --cuda-graph-max-bs."""
    for legacy in LEGACY_FLAGS:
        key = legacy[2:].replace("-", "_")
        said_new = server_arg(clues.args_line, key + "_decode") is not None or (
            "cuda_graph_max_bs_decode" in clues.args_line
        )
        if (launch and _flag_value(launch, legacy) is not None) or (
            not said_new and re.search(r"[(,{\s]'?" + key + r"'?(?:=|: )", clues.args_line)
        ):
            return legacy
    return "--cuda-graph-max-bs-decode"


def _max_bs_down(
    clues: LogClues, launch: str | None, flag: str, example: str | None = None, capture_bs: int | None = None
) -> Change:
    key = flag[2:].replace("-", "_")
    was = _flag_value(launch, flag) if launch else None
    if was is None:
        was = server_arg(clues.args_line, key)
    if was is None:  # an older SGLang's server_args spells it cuda_graph_max_bs
        older = next((o for o, new in LEGACY_FLAGS.items() if new == flag), None)
        was = server_arg(clues.args_line, older[2:].replace("-", "_")) if older else None
    largest = int(was) if was is not None and was.isdigit() else clues.capture_bs
    if largest is None and capture_bs is not None:  # the batch size the capture ran out of memory at
        largest = capture_bs
    if largest is not None and largest > 1:
        new = str(max(1, largest // 2))
    else:
        new = example or "16"  # SGLang's own example value
    return Change(flag, new, was)


def _capture_bs(s: Readiness) -> int | None:
    return s.capture.bs if s.capture is not None else None


def _load_changes(s: Readiness, clues: LogClues, launch: str | None) -> list[Change]:
    tp = _was(clues, launch, "tp_size", "--tp-size")
    if tp is None and s.server.tp_size is not None:
        tp = str(s.server.tp_size)
    gpus = len(s.gpus.gpus) if s.gpus is not None and s.gpus.gpus else None
    if tp is not None and tp.isdigit() and gpus is not None and int(tp) * 2 <= gpus:
        return [Change("--tp-size", str(int(tp) * 2), tp)]
    quant = _was(clues, launch, "quantization", "--quantization")
    if quant is None:
        return [Change("--quantization", "fp8", None)]
    return []


def _timeout_changes(line: str, clues: LogClues, launch: str | None) -> list[Change]:
    was = _was(clues, launch, "dist_timeout", "--dist-timeout")
    seconds = int(was) if was is not None and was.isdigit() else None
    if seconds is None:
        m = _TIMEOUT_MS.search(line)
        ms = next((g for g in m.groups() if g), None) if m else None
        seconds = int(ms) // 1000 if ms is not None and int(ms) >= 1000 else DEFAULT_DIST_TIMEOUT_S
    return [Change("--dist-timeout", str(seconds * 2), was), _env("NCCL_DEBUG", "INFO", launch)]


def _port(r: Row, line: str, clues: LogClues, launch: str | None) -> Remedy:
    m = _PORT_IN_LINE.search(line)
    held = next((g for g in m.groups() if g), None) if m else None
    was = _was(clues, launch, "port", "--port")
    port = held or was
    text = (
        f"port {port} is taken (another server, or a leftover of this one): stop what holds it "
        f"(ss -ltnp 'sport = :{port}'), or use another port"
        if port
        else r.text
    )
    if was is not None and was.isdigit() and (held is None or held == was):
        new = str(int(was) + 1)
        return _made(text + f" ({new} is the next one up; not checked free)", [Change("--port", new, was)],
                     "table", r.ref, launch, r.cause)  # fmt: skip
    return _made(text, [], "table", r.ref, None, r.cause)


def _env(name: str, value: str, launch: str | None) -> Change:
    was = None
    if launch:
        for word in _words(launch):
            if word.startswith(name + "="):
                was = word.split("=", 1)[1]
            elif "=" not in word:
                break
    return Change(name, value, was)


# ---------------------------------------------------------------------------------------------- what it was


def _was(clues: LogClues, launch: str | None, key: str, flag: str) -> str | None:
    """The launch's value: its command line says it, else server_args does."""
    if launch:
        given = _flag_value(launch, flag)
        if given is not None:
            return given
    return server_arg(clues.args_line, key) if clues.args_line else None


# other spellings SGLang takes for a flag: its aliases (0.5.23's arg_groups/fields) and the prefix people type
# (`--tp 8`: argparse takes a unique prefix)
SPELLINGS = {
    "--tp-size": ("--tp-size", "--tensor-parallel-size", "--tp"),
    "--model-path": ("--model-path", "--model"),
    "--port": ("--port",),
}


def _spellings(flag: str) -> tuple[str, ...]:
    return SPELLINGS.get(flag, (flag,))


def _flag_value(command: str, flag: str) -> str | None:
    words = _words(command)
    for i, word in enumerate(words):
        for name in _spellings(flag):
            if word == name and i + 1 < len(words):
                return words[i + 1]
            if word.startswith(name + "="):
                return word.split("=", 1)[1]
    return None


def _words(command: str) -> list[str]:
    try:
        return shlex.split(command)
    except ValueError:
        return command.split()


def _float(text: str | None) -> float | None:
    try:
        return float(text) if text is not None else None
    except ValueError:
        return None


def _failed_phase(s: Readiness) -> Phase | None:
    """The phase the launch was in when it failed (the timeline's last span before `failed`)."""
    spans = [span for span in s.timeline if span.phase is not Phase.FAILED]
    return spans[-1].phase if spans else None


def _failed_in_draft(s: Readiness) -> bool:
    spans = [span for span in s.timeline if span.phase is not Phase.FAILED]
    return bool(spans) and spans[-1].model == "draft" and spans[-1].phase is Phase.LOADING_WEIGHTS


# ---------------------------------------------------------------------------------------------- the command


def _made(text: str, changes: list[Change], source: Source, ref: str, launch: str | None, cause: str) -> Remedy:
    runnable = bool(launch and changes) and all(takes(c) for c in changes)
    command = apply_changes(launch, changes) if launch and runnable else None
    return Remedy(text, tuple(changes), source, ref, command, cause)


_FRACTION = lazy(r"^(?:0?\.\d{1,3}|1(?:\.0+)?)$")
_COUNT = lazy(r"^[1-9]\d{0,6}$")
_ENV_NAME = lazy(r"^[A-Za-z_][A-Za-z0-9_]*$")
# what each flag a remedy may set takes (SGLang 0.5.23's types): a value outside it makes no command
_TAKES: dict[str, re.Pattern[str]] = {
    "--mem-fraction-static": _FRACTION,
    "--cuda-graph-max-bs-decode": _COUNT,
    "--cuda-graph-max-bs": _COUNT,
    "--tp-size": _COUNT,
    "--context-length": _COUNT,
    "--dist-timeout": _COUNT,
    "--port": re.compile(r"^(?:[1-9]\d{0,3}|[1-5]\d{4}|6[0-4]\d{3}|65[0-4]\d{2}|655[0-2]\d|6553[0-5])$"),
    "--quantization": re.compile(r"^fp8$"),
}
_ENV_VALUE = lazy(r"^[\w.,:/@+-]*$")


def takes(change: Change) -> bool:
    """The value is one the flag takes (a fraction, a count, a port, fp8) or, for an environment variable, a plain
    word list; anything else (a value read from a log that is not what it should be) makes no command."""
    if change.flag.startswith("--"):
        pattern = _TAKES.get(change.flag)
        return pattern is not None and pattern.match(change.value) is not None
    return _ENV_NAME.match(change.flag) is not None and _ENV_VALUE.match(change.value) is not None


def apply_changes(command: str, changes: list[Change] | tuple[Change, ...]) -> str:
    """The command with each change applied: a `--flag`'s value replaced (or the flag added at the end), an
    environment variable set before the command. Every word is quoted with shlex.quote."""
    words = _words(command)
    env: list[str] = []
    while words and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[0]):
        env.append(words.pop(0))
    for change in changes:
        if change.flag.startswith("--"):
            words = _set_flag(words, change.flag, change.value)
        else:
            env = [w for w in env if not w.startswith(change.flag + "=")] + [f"{change.flag}={change.value}"]
    return " ".join(shlex.quote(w) for w in (*env, *words))


def _set_flag(words: list[str], flag: str, value: str) -> list[str]:
    """The flag's value replaced where the command gives it (in the spelling it uses), else the flag added."""
    out = list(words)
    for i, word in enumerate(out):
        for name in _spellings(flag):
            if word == name and i + 1 < len(out):
                out[i + 1] = value
                return out
            if word.startswith(name + "="):
                out[i] = f"{name}={value}"
                return out
    return [*out, flag, value]
