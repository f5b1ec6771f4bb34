"""`--deployment FILE`: the members of a deployment from a TOML file (parsing only; ValueError, one line).

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

import sys

from tui.core.deployment import ROLES
from tui.sources.deployment import MemberSpec

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover  (Python 3.10)
    import tomli as tomllib  # type: ignore[import-not-found, unused-ignore]


def load(path: str, *, sim_gpus: str | None = None) -> list[MemberSpec]:
    try:
        with open(path, "rb") as handle:
            data = tomllib.load(handle)
    except OSError as err:
        raise ValueError(f"--deployment {path}: cannot read it ({err.strerror or err})") from None
    except tomllib.TOMLDecodeError as err:
        raise ValueError(f"--deployment {path}: not valid TOML ({err})") from None
    return parse(data, path, sim_gpus=sim_gpus)


def parse(data: dict[str, object], path: str = "FILE", *, sim_gpus: str | None = None) -> list[MemberSpec]:
    entries = data.get("member", data.get("members"))
    if not isinstance(entries, list) or not entries:
        raise ValueError(f"--deployment {path}: no members; add [[member]] tables with name, role, host, port, log")
    gpus = sim_gpus.split(",") if sim_gpus else []
    specs: list[MemberSpec] = []
    nodes = 0
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise ValueError(f"--deployment {path}: member {i + 1} is not a table")
        name = str(entry.get("name") or f"member{i}")
        role = str(entry.get("role", "server"))
        if role not in ROLES:
            raise ValueError(f"--deployment {path}: member {name}: role {role!r}; use one of {', '.join(ROLES)}")
        host = entry.get("host")
        if not isinstance(host, str) or not host:
            raise ValueError(f"--deployment {path}: member {name} has no host")
        port = entry.get("port", 30000)
        if not isinstance(port, int) or not 0 < port < 65536:
            raise ValueError(f"--deployment {path}: member {name}: port {port!r} is not a TCP port")
        log = entry.get("log")
        if log is not None and (not isinstance(log, str) or not log.startswith("/")):
            raise ValueError(f"--deployment {path}: member {name}: log must be an absolute path")
        if any(s.name == name for s in specs):
            raise ValueError(f"--deployment {path}: two members are named {name}")
        rank = entry.get("node_rank", nodes) if role == "node" else None
        nodes += role == "node"
        boot = entry.get("bootstrap_port", 8998) if role == "prefill" else None
        gpu = gpus[i] if i < len(gpus) else None
        specs.append(MemberSpec(name, role, host, port, log, rank if isinstance(rank, int) else None,
                                boot if isinstance(boot, int) else None, sim_gpus=gpu))  # fmt: skip
    return specs
