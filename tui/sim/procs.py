"""Child processes titled like SGLang's (`sglang::scheduler_TP3`), and what a child does to mark itself.

The child's whole argv is the title, so `/proc/PID/cmdline` and `ps -eo args` show exactly that: Python is
exec'd with argv[0] = title and no arguments, and reads its bootstrap program from stdin. With no path in
argv[0] Python cannot find its prefix from it, so PYTHONHOME names the running interpreter's.
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

PR_SET_PDEATHSIG = 1
PR_SET_NAME = 15
PACKAGE_ROOT = str(Path(__file__).resolve().parent.parent.parent)


def spawn(
    title: str, entry: str, payload: dict[str, object], pass_fds: tuple[int, ...] = ()
) -> subprocess.Popen[bytes]:
    """Start `tui.sim.<entry>.child_main(payload)` in a new process whose command line is `title`."""
    code = (
        f"import sys; sys.path.insert(0, {PACKAGE_ROOT!r})\n"
        f"from tui.sim.{entry} import child_main\n"
        f"child_main({json.dumps(payload)!r})\n"
    )
    return spawn_titled_python(title, code, pass_fds=pass_fds)


def spawn_titled_python(
    title: str,
    code: str,
    *,
    env: dict[str, str] | None = None,
    pass_fds: tuple[int, ...] = (),
    new_session: bool = False,
    stdout: Any = None,
    stderr: Any = None,
) -> subprocess.Popen[bytes]:
    """Run the Python program `code` (sent on stdin) in a process whose whole /proc/PID/cmdline is `title`."""
    full = dict(os.environ if env is None else env)
    full["PYTHONHOME"] = os.pathsep.join(dict.fromkeys((sys.base_prefix, sys.base_exec_prefix)))
    full.pop("PYTHONSTARTUP", None)
    proc = subprocess.Popen(
        [title],
        executable=interpreter(),
        stdin=subprocess.PIPE,
        env=full,
        pass_fds=pass_fds,
        start_new_session=new_session,
        stdout=stdout,
        stderr=stderr,
    )
    assert proc.stdin is not None
    proc.stdin.write(code.encode())
    proc.stdin.close()
    return proc


def interpreter() -> str:
    """This Python's path. A titled process (argv[0] is its title) has no sys.executable: read /proc/self/exe."""
    return sys.executable or os.readlink("/proc/self/exe")


def _prctl(option: int, arg: int | bytes) -> None:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(option, arg, 0, 0, 0)
    except (OSError, AttributeError):
        pass  # not Linux: the title still shows in argv, only the comm name and parent-death link are missing


def mark_child(title: str, parent: int, *, die_with_parent: bool = True) -> None:
    """Set the short process name (`comm`) and, like SGLang's kill_itself_when_parent_died, SIGKILL on parent death."""
    _prctl(PR_SET_NAME, title.encode()[:15])
    if die_with_parent:
        _prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL))
        if os.getppid() != parent:  # the parent died before the link was made
            os._exit(1)


_backdate_s = 0.0  # `simulate --backdate`: each write sets the file's mtime this far back (tui.sim.clock)


def backdate_writes(seconds: float) -> None:
    global _backdate_s
    _backdate_s = seconds


def write_all(fd: int, text: str) -> None:
    data = text.encode()
    while data:
        try:
            n = os.write(fd, data)
        except BlockingIOError:
            continue
        data = data[n:]
    if _backdate_s:
        written = time.time() - _backdate_s
        try:
            os.utime(fd, (written, written))
        except OSError:  # not a file (a pipe, a terminal): nothing has an mtime to set back
            pass
