"""`--deployment FILE`: the members of a deployment from a TOML file (parsing only; ValueError, one line, exit 2).

[[member]]
name = "prefill"        # unique; shown in the verdict
role = "prefill"        # node | prefill | decode | router | server
host = "gpu-a"          # as on the command line: user@host, an ssh alias, or `local`
port = 30000            # its HTTP port on that host
log = "/var/log/sglang/prefill.log"
bootstrap_port = 8998   # prefill only (default 8998)
node_rank = 0           # role node only (default: the order of the node entries)
"""

from __future__ import annotations

from tui.commands.toml_tables import entries as table_entries
from tui.commands.toml_tables import hint, read_toml
from tui.core.deployment import ROLES
from tui.sources.deployment import MemberSpec


def load(path: str, *, sim_gpus: str | None = None) -> list[MemberSpec]:
    return parse(read_toml(path, f"--deployment {path}"), path, sim_gpus=sim_gpus)


MEMBER_KEYS = ("name", "role", "host", "port", "log", "bootstrap_port", "node_rank")


def parse(data: dict[str, object], path: str = "FILE", *, sim_gpus: str | None = None) -> list[MemberSpec]:
    """The members, or ValueError with one line naming the key that is wrong: a key not in MEMBER_KEYS (a
    misspelt `port` would have fallen back to 30000 silently), a value of the wrong type (`port = true` is a
    bool, not a port), a key of another role, two nodes with one node_rank."""
    where = f"--deployment {path}"
    entries = table_entries(data, where, "member", "name, role, host, port, log")
    gpus = sim_gpus.split(",") if sim_gpus else []
    specs: list[MemberSpec] = []
    ranks: dict[int, str] = {}
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise ValueError(f"{where}: member {i + 1} is not a table")
        name = entry.get("name", f"member{i}")
        if not isinstance(name, str) or not name:
            raise ValueError(f"{where}: member {i + 1}: name {name!r} is not a name (a string)")
        at = f"{where}: member {name}"
        unknown = sorted(set(entry) - set(MEMBER_KEYS))
        if unknown:
            raise ValueError(
                f"{at}: unknown key {unknown[0]!r}{hint(unknown[0], MEMBER_KEYS)}; keys: {', '.join(MEMBER_KEYS)}"
            )
        role = entry.get("role", "server")
        if role not in ROLES:
            raise ValueError(f"{at}: role {role!r}; use one of {', '.join(ROLES)}")
        host = entry.get("host")
        if not isinstance(host, str) or not host:
            raise ValueError(f"{at} has no host" if host is None else f"{at}: host {host!r} is not a host name")
        port = _port(entry, "port", 30000, at)
        log = entry.get("log")
        if log is not None and (not isinstance(log, str) or not log.startswith("/")):
            raise ValueError(f"{at}: log must be an absolute path, not {log!r}")
        if any(s.name == name for s in specs):
            raise ValueError(f"{where}: two members are named {name}")
        for key, only in (("bootstrap_port", "prefill"), ("node_rank", "node")):
            if key in entry and role != only:
                raise ValueError(f"{at}: {key} is for {only} members only (this one is {role})")
        boot = _port(entry, "bootstrap_port", 8998, at) if role == "prefill" else None
        rank: int | None = None
        if role == "node":
            rank = entry.get("node_rank", sum(s.role == "node" for s in specs))
            if isinstance(rank, bool) or not isinstance(rank, int) or rank < 0:
                raise ValueError(f"{at}: node_rank {rank!r} is not a node rank (0, 1, …)")
            if rank in ranks:
                raise ValueError(f"{at}: node_rank {rank} is {ranks[rank]}'s too; give each node its own")
            ranks[rank] = name
        gpu = gpus[i] if i < len(gpus) else None
        specs.append(MemberSpec(name, role, host, port, log, rank, boot, sim_gpus=gpu))
    return specs


def _port(entry: dict[str, object], key: str, default: int, at: str) -> int:
    value = entry.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value < 65536:
        raise ValueError(f"{at}: {key} {value!r} is not a TCP port (1-65535)")
    return value
