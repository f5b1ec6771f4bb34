"""`fleet --inventory FILE.toml`: the servers of a fleet from a TOML file (parsing only; ValueError, one line naming
the key that is wrong, exit 2), read as strictly as a deployment file (tui/commands/deployment_file.py).

[[server]]
name = "llama-70b"          # unique; the board's NAME (default: the target as written)
target = "gpu1"             # a TARGET as on the command line: HOST, HOST:PORT[:LOG], slurm:JOBID, LOGIN/slurm:JOBID
port = 30000                # its port, where the target names none
log = "/var/log/sglang.log" # its log (an absolute path; a Slurm job: a pattern as sbatch -o), where the target names none
group = "prod"              # free text: shown by `/` and in --json
ssh_port = 2222             # its SSH port, user, key and known_hosts file (default: --ssh-port … or ~/.ssh/config)
user = "ops"
identity = "~/.ssh/gpu_ed25519"
known_hosts = "~/.ssh/known_hosts.gpu"
remote_python = "/opt/venv/bin/python"  # the Python on its host that runs the probes (default: --remote-python)
launch = "python -m sglang.launch_server …"  # what `r` (restart) starts it with (needs its log); cwd: where
"""

from __future__ import annotations

import difflib
import os
from dataclasses import dataclass, field

from tui.commands.options import ServerOptions
from tui.commands.targets import FleetTarget, JobTarget, ServerTarget, fleet_target
from tui.commands.toml_tables import entries as table_entries
from tui.commands.toml_tables import read_toml
from tui.core.slurmjob import is_slurm_target

SERVER_KEYS = ("name", "target", "port", "log", "group", "ssh_port", "user", "identity", "known_hosts",
               "remote_python", "launch", "cwd")  # fmt: skip
_TEXT_KEYS = ("user", "identity", "known_hosts", "remote_python", "launch", "cwd")


@dataclass(frozen=True)
class InventoryEntry:
    name: str
    target: FleetTarget
    group: str = ""
    server: ServerOptions = field(default_factory=ServerOptions)


def key_hint(key: str) -> str:
    """ " (did you mean 'ssh_port'?)" for a key close to a known one: a key that speaks of SSH is matched among the
    SSH keys first (`sshport`, `ssh-port` mean the SSH port, never the HTTP `port`); else ""."""
    word = key.lower().replace("-", "_")
    if word in SERVER_KEYS:
        return f" (did you mean {word!r}?)"
    pool = [k for k in SERVER_KEYS if k.startswith("ssh_")] if "ssh" in word else list(SERVER_KEYS)
    close = difflib.get_close_matches(word, pool, n=1, cutoff=0.5 if "ssh" in word else 0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def load(path: str) -> list[InventoryEntry]:
    return parse(read_toml(path, f"--inventory {path}"), path)


def parse(data: dict[str, object], path: str = "FILE") -> list[InventoryEntry]:
    """The entries, or ValueError with one line naming the key that is wrong: an unknown key (a misspelt `port`
    would have watched 30000 silently), a value of the wrong type, a port or log given twice, two entries with one
    name."""
    where = f"--inventory {path}"
    entries = table_entries(data, where, "server", ", ".join(SERVER_KEYS))
    out: list[InventoryEntry] = []
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise ValueError(f"{where}: server {i + 1} is not a table")
        target_text = entry.get("target")
        name = entry.get("name", target_text)
        at = f"{where}: server {name if isinstance(name, str) and name else i + 1}"
        unknown = sorted(set(entry) - set(SERVER_KEYS))
        if unknown:
            raise ValueError(f"{at}: unknown key {unknown[0]!r}{key_hint(unknown[0])}; keys: {', '.join(SERVER_KEYS)}")
        if not isinstance(target_text, str) or not target_text:
            raise ValueError(
                f"{at} has no target" if target_text is None else f"{at}: target {target_text!r} is not text"
            )
        if not isinstance(name, str) or not name:
            raise ValueError(f"{at}: name {name!r} is not a name (a string)")
        port = entry.get("port")
        if port is not None and (isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536):
            raise ValueError(f"{at}: port {port!r} is not a TCP port (1-65535)")
        log = entry.get("log")
        job = is_slurm_target(target_text) if isinstance(target_text, str) else False
        if log is not None and (not isinstance(log, str) or not log or not (job or log.startswith("/"))):
            # a Slurm job's log is a pattern as sbatch -o takes it (relative: to the job's WorkDir)
            raise ValueError(f"{at}: log must be an absolute path, not {log!r}")
        group = entry.get("group", "")
        if not isinstance(group, str):
            raise ValueError(f"{at}: group {group!r} is not text")
        server = _server_options(entry, at)
        if server.launch is not None and isinstance(target_text, str) and is_slurm_target(target_text):
            raise ValueError(f"{at}: launch is for a server sglang-tui may restart, not a Slurm job (sbatch it)")
        try:
            target = fleet_target(target_text, port=port, log=log)
        except ValueError as err:
            raise ValueError(f"{at}: {err}") from None
        if isinstance(target, ServerTarget):
            for key, given, used in (("port", port, target.port), ("log", log, target.log)):
                if given is not None and given != used:
                    raise ValueError(f"{at}: {key} is given twice (the target {target_text} says {used})")
        elif isinstance(target, JobTarget) and log is not None and target.slurm.log != log:
            raise ValueError(f"{at}: log is given twice (the target {target_text} says {target.slurm.log})")
        if any(e.name == name for e in out):
            raise ValueError(f"{where}: two servers are named {name}")
        out.append(InventoryEntry(name, target, group, server))
    return out


def _server_options(entry: dict[str, object], at: str) -> ServerOptions:
    """The server's own SSH and launch settings (ValueError naming the key whose value is wrong)."""
    ssh_port = entry.get("ssh_port")
    if ssh_port is not None and (
        isinstance(ssh_port, bool) or not isinstance(ssh_port, int) or not 0 < ssh_port < 65536
    ):
        raise ValueError(f"{at}: ssh_port {ssh_port!r} is not a TCP port (1-65535)")
    text: dict[str, str | None] = {}
    for key in _TEXT_KEYS:
        value = entry.get(key)
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise ValueError(f"{at}: {key} {value!r} is not text")
        text[key] = os.path.expanduser(value) if value is not None and key in ("identity", "known_hosts") else value
    return ServerOptions(ssh_port=ssh_port, **text)
