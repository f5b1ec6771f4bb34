"""The SGLang servers found on a host, from the discovery command's output (pure; the command is in
tui/sources/discover.py).

The command prints, for each main process (the first ancestor of a `sglang::…` process whose own title is
not `sglang::…`: the python running `sglang.launch_server` or `sglang serve`, or the simulator):
`A PID ARGV` (the arguments separated by \\x1f) and `O PID FD TARGET` for fd 1 and 2 (readlink's answer).
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_PORT = 30000
SEP = "\x1f"


@dataclass(frozen=True)
class FoundServer:
    pid: int
    port: int
    model: str | None
    log: str | None  # a regular file its output goes to, to tail; None when there is none
    output: str  # where its output goes (the file, /dev/pts/N, pipe:[…], /dev/null, or "" when unseen)
    argv: tuple[str, ...] = ()

    @property
    def terminal(self) -> bool:
        return self.output.startswith(("/dev/pts/", "/dev/tty"))

    def summary(self) -> str:
        """One short line: pid, port, model and where its output goes."""
        parts = [f"pid {self.pid}", f"port {self.port}"]
        if self.model:
            parts.append(f"model {self.model}")
        parts.append(f"log {self.log}" if self.log else f"no log file ({self.no_log_reason()})")
        return ", ".join(parts)

    def no_log_reason(self) -> str:
        if self.terminal:
            return f"output goes to the terminal {self.output}: watched by its port, process and GPUs"
        if not self.output:
            return "its output cannot be seen: watched by its port, process and GPUs"
        return f"output goes to {self.output}: watched by its port, process and GPUs"


def _option(argv: tuple[str, ...], *names: str) -> str | None:
    for i, word in enumerate(argv):
        for name in names:
            if word == name and i + 1 < len(argv):
                return argv[i + 1]
            if word.startswith(name + "="):
                return word.split("=", 1)[1]
    return None


def _served_model(argv: tuple[str, ...]) -> str | None:
    """`sglang serve MODEL …` (2026's documented launch, beside `python -m sglang.launch_server`): the model may
    come first, without --model-path."""
    for i, word in enumerate(argv[:-1]):
        if word == "serve" and i > 0 and argv[i - 1].rsplit("/", 1)[-1] == "sglang":
            following = argv[i + 1]
            return None if following.startswith("-") else following
    return None


def _is_log_file(target: str) -> bool:
    """A path that can be tailed: absolute, not a device, socket, pipe or deleted file."""
    return target.startswith("/") and not target.startswith("/dev/") and not target.endswith(" (deleted)")


def parse_discovery(text: str) -> list[FoundServer]:
    """The servers in the command's output, by pid; unparsable lines are skipped."""
    argvs: dict[int, tuple[str, ...]] = {}
    outputs: dict[int, dict[str, str]] = {}
    for line in text.splitlines():
        kind, _, rest = line.partition(" ")
        pid_text, _, rest = rest.partition(" ")
        if not pid_text.isdigit():
            continue
        pid = int(pid_text)
        if kind == "A":
            argvs[pid] = tuple(w for w in rest.split(SEP) if w)
        elif kind == "O":
            fd, _, target = rest.partition(" ")
            outputs.setdefault(pid, {})[fd] = target.strip()
    found = []
    for pid in sorted(argvs):
        argv = argvs[pid]
        port_text = _option(argv, "--port")
        port = int(port_text) if port_text and port_text.isdigit() else DEFAULT_PORT
        fds = outputs.get(pid, {})
        targets = [fds.get("2", ""), fds.get("1", "")]
        log = next((t for t in targets if _is_log_file(t)), None)
        output = log or next((t for t in targets if t), "")
        model = _option(argv, "--model-path", "--model") or _served_model(argv)
        found.append(FoundServer(pid=pid, port=port, model=model, log=log, output=output, argv=argv))
    return found


def several_line(found: list[FoundServer]) -> str:
    """One line naming every server found, for a choice the user must make (--port)."""
    return f"{len(found)} SGLang servers found: " + "; ".join(s.summary() for s in found) + " (give --port N)"
