"""The link between the nodes of a simulated multi-node launch (`simulate --nnodes N --node-rank R
--dist-init-addr HOST:PORT`), standing in for torch.distributed's TCPStore and NCCL collectives.

Node 0 listens on dist-init-addr; every other node connects to it (retrying, as a real node waits for the
store) and says `hello R`. A collective completes only when every node's ranks reached it: a node reports
`at NAME` once all its local ranks arrived, and node 0 answers `go NAME` to all once every node has. Node 0
serves HTTP only after every node said `ready`. On a graceful stop node 0 sends `shutdown` (SGLang's
ShutdownReq broadcast); that is the only thing that stops a non-zero node's schedulers gracefully.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from tui.sim.params import SimParams, dist_addr

CONNECT_RETRY_S = 0.2


class NodeLink:
    """One node's end of the link. Callbacks run on the event loop."""

    def __init__(self, params: SimParams, on_go: Callable[[str], None], on_shutdown: Callable[[], None],
                 on_lost: Callable[[], None]) -> None:  # fmt: skip
        self.p = params
        self.on_go = on_go
        self.on_shutdown = on_shutdown
        self.on_lost = on_lost
        self.arrivals: dict[str, set[int]] = {}
        self.ready_nodes: set[int] = set()
        self.all_ready = asyncio.Event()
        self.clients: dict[int, asyncio.StreamWriter] = {}
        self.server: asyncio.Server | None = None
        self.writer: asyncio.StreamWriter | None = None
        self.pending: list[str] = []  # what a non-zero node said before it reached node 0
        self.closing = False
        self.tasks: list[asyncio.Task[None]] = []

    @property
    def head(self) -> bool:
        return self.p.node_rank == 0

    async def start(self) -> None:
        host, port = dist_addr(self.p)
        if self.head:
            self.server = await asyncio.start_server(self._serve, host, port)
        else:
            self.tasks.append(asyncio.get_running_loop().create_task(self._follow(host, port)))

    # --------------------------------------------------------------------------------------- this node
    def arrived(self, name: str) -> None:
        """Every local rank reached collective `name`."""
        if self.head:
            self._arrive(0, name)
        else:
            self._send(f"at {self.p.node_rank} {name}")

    def local_ready(self) -> None:
        if self.head:
            self._ready(0)
        else:
            self._send(f"ready {self.p.node_rank}")

    def shutdown(self) -> None:
        """Node 0's ShutdownReq broadcast."""
        self.closing = True
        for writer in self.clients.values():
            self._write(writer, "shutdown")

    def close(self) -> None:
        self.closing = True
        if self.server is not None:
            self.server.close()
        for task in self.tasks:
            task.cancel()

    # ------------------------------------------------------------------------------------------ node 0
    def _arrive(self, node: int, name: str) -> None:
        arrived = self.arrivals.setdefault(name, set())
        arrived.add(node)
        if len(arrived) >= self.p.nnodes:
            for writer in self.clients.values():
                self._write(writer, f"go {name}")
            self.on_go(name)

    def _ready(self, node: int) -> None:
        self.ready_nodes.add(node)
        if len(self.ready_nodes) >= self.p.nnodes:
            self.all_ready.set()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        node: int | None = None
        while True:
            try:
                raw = await reader.readline()
            except (ConnectionError, OSError):
                raw = b""
            except asyncio.CancelledError:  # the loop ends with this node: leave no traceback in the log
                return
            if not raw:
                break
            what, *rest = raw.decode(errors="replace").split() or [""]
            if what == "hello" and rest:
                node = int(rest[0])
                self.clients[node] = writer
            elif what == "at" and len(rest) >= 2:
                self._arrive(int(rest[0]), rest[1])
            elif what == "ready" and rest:
                self._ready(int(rest[0]))
        if node is not None:
            self.clients.pop(node, None)
        writer.close()

    # ------------------------------------------------------------------------------------ other nodes
    async def _follow(self, host: str, port: int) -> None:
        while True:
            try:
                reader, writer = await asyncio.open_connection(host, port)
                break
            except OSError:
                await asyncio.sleep(CONNECT_RETRY_S)  # node 0 is not up yet: a real node waits for the store
        self.writer = writer
        self._write(writer, f"hello {self.p.node_rank}")
        for line in self.pending:
            self._write(writer, line)
        self.pending.clear()
        while True:
            try:
                raw = await reader.readline()
            except (ConnectionError, OSError):
                raw = b""
            if not raw:
                break
            what, *rest = raw.decode(errors="replace").split() or [""]
            if what == "go" and rest:
                self.on_go(rest[0])
            elif what == "shutdown":
                self.closing = True
                self.on_shutdown()
        if not self.closing:
            self.on_lost()

    def _send(self, line: str) -> None:
        if self.writer is None:
            self.pending.append(line)
        else:
            self._write(self.writer, line)

    @staticmethod
    def _write(writer: asyncio.StreamWriter, line: str) -> None:
        try:
            writer.write(f"{line}\n".encode())
        except (ConnectionError, OSError, RuntimeError):
            pass  # that node is gone
