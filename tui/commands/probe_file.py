"""Where `probe` keeps its memo between calls, and the lock that lets one call at a time fold it.

One file per server: `$XDG_STATE_HOME/sglang-tui/probe/HASH.memo` (HASH of the host, port and log; the env
SGLANG_TUI_PROBE_DIR overrides the directory), written atomically (a temporary file in the same directory,
fsync'd, then renamed over the old one), so a reader sees the old memo or the new one, never half of one.
kubelet runs a pod's liveness and readiness probes concurrently: `HASH.lock` (flock) lets one fold at a time,
so the two never send /health at once and the second folds from the first's memo instead of from its own
stale copy. What the file holds is checked by tui.core.probe_memo.decode before anything of it is used.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import time
from pathlib import Path

ENV = "SGLANG_TUI_PROBE_DIR"


def probe_dir(env: dict[str, str] | None = None) -> Path:
    env = dict(os.environ) if env is None else env
    if env.get(ENV):
        return Path(env[ENV]).expanduser()
    state = env.get("XDG_STATE_HOME") or os.path.join(env.get("HOME") or os.path.expanduser("~"), ".local", "state")
    return Path(state) / "sglang-tui" / "probe"


def memo_key(host: str, port: int, log: str | None) -> str:
    """The server a memo is for, as one line (also stored in the memo, and checked on reading)."""
    return f"{host}\0{int(port)}\0{log or ''}"


def memo_path(key: str, directory: Path | None = None) -> Path:
    digest = hashlib.sha256(key.encode("utf-8", "surrogateescape")).hexdigest()[:24]
    return (directory or probe_dir()) / f"{digest}.memo"


def not_private(directory: Path) -> str | None:
    """Why memos in `directory` are not read, or None: one that another user owns or may write could hold a
    memo forged to say ready (the unpickler builds only the tool's records, but those can lie)."""
    try:
        info = directory.stat()
    except OSError:
        return None  # not there yet: write() makes it 0700
    if info.st_uid != os.getuid() or info.st_mode & 0o022:
        return f"{directory} is not private (owned by uid {info.st_uid}, mode {info.st_mode & 0o777:o})"
    return None


def read(path: Path) -> bytes | None:
    """The memo's bytes; None when there is none, or it is not this user's alone."""
    try:
        with open(path, "rb") as handle:
            info = os.fstat(handle.fileno())
            if info.st_uid != os.getuid() or info.st_mode & 0o022:
                return None
            return handle.read()
    except OSError:
        return None


def write(path: Path, data: bytes, *, mode: int = 0o600) -> None:
    """Replace the file with `data` atomically (a temp file beside it, fsync, rename), with this mode; a
    missing directory is made 0700. The temp file's name ends in .tmp (never *.prom or *.memo)."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.{time.monotonic_ns()}.tmp")  # tempfile costs a probe its imports
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


class MemoLock:
    """flock on PATH.lock for one call's fold; `held` says whether it was had within the wait, `problem` why
    there is no lock file at all (a read-only state dir: the call then folds alone and saves nothing)."""

    def __init__(self, path: Path, wait_s: float) -> None:
        self.path = path.with_suffix(".lock")
        self.wait_s = wait_s
        self.held = False
        self.problem: str | None = None
        self._fd = -1

    def __enter__(self) -> MemoLock:
        try:
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as err:
            self.problem = f"{self.path.parent}: {err.strerror or err}"
            return self
        deadline = time.monotonic() + self.wait_s
        while True:
            try:
                fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                self.held = True
                return self
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    return self
                time.sleep(0.01)

    def __exit__(self, *exc: object) -> None:
        if self._fd >= 0:
            if self.held:
                fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = -1
