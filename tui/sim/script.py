"""One rank's startup as data: timed steps (log text, memory, actions) built from the parameters alone.

Every rank builds the same shared schedule from the seed, so eight independent processes stay in step the
way NCCL barriers keep real ranks in step; only per-line jitter differs, which interleaves their lines.
Step times are simulated seconds (`--speed` compresses them), but what a step prints is real: a line is
stamped when it is written, and tqdm frames and `elapsed=` fields are rendered then from real seconds.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from tui.sim import faults, variation
from tui.sim.bars import WEIGHTS_FORMAT, BarWriter, frame
from tui.sim.logformat import LogFormat
from tui.sim.memory import GRAPH_GIB, RankMemory, avail
from tui.sim.params import SimParams, capture_fits

SPAWN_AT = 2.0  # server_args, then the schedulers are spawned
INIT_AT = 9.0  # importing torch and sglang in a spawned child takes seconds
SHARD_SECONDS = 8.0  # a ~2 GiB safetensors shard per 8 s: a 70B model loads in ~9 minutes
DIST_TIMEOUT = 600.0
PREFILL_SIZES = (4, 8, 12, 16, 20, 24, 28, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224, 240, 256,
                 288, 320, 352, 384, 416, 448, 480, 512, 576, 640, 704, 768, 832, 896, 960, 1024, 1280, 1536, 1792,
                 2048)  # fmt: skip
# DeepGEMM JIT (0.5.23 FP8 on Hopper): a few kernel shapes, each warmed up over its M sizes.
DEEPGEMM_KERNELS = (("GEMM_NT_F8F8BF16", 24576, 7168, 1), ("GEMM_NT_F8F8BF16", 7168, 16384, 1),
                    ("GROUPED_GEMM_NT_F8F8BF16_MASKED", 4096, 7168, 32))  # fmt: skip
DEEPGEMM_MS = (1, 64, 512, 4096)
DEEPGEMM_SECONDS_PER_M = 0.15
PIECEWISE_TOKENS = (4, 8, 16, 24, 32, 48, 64, 96, 128, 256, 384, 512)
PIECEWISE_SECONDS_PER_SIZE = 0.12
PIECEWISE_GIB = 0.35
SPEC_BS = tuple(range(1, 9)) + tuple(range(10, 33, 2)) + (40, 44, 48)
PLAIN_BS = (1, 2, 4, 8, 12) + tuple(range(16, 257, 8))
GRAPH_SECONDS_PER_SIZE = {
    "target_prefill": 0.55,
    "target_verify": 0.78,
    "target_decode": 0.5,
    "draft_decode": 0.34,
    "draft_extend": 0.22,
}


@dataclass(frozen=True)
class Step:
    """At `at` simulated seconds after t0: write `text`, then set this rank's memory to `mem` GiB, then act.

    action: ready (tell the main process) | barrier (wait until every rank got here, like a collective) |
    raise (the text was a scheduler exception: SIGQUIT the parent and exit) | die (SIGKILL itself) |
    hang (stop here, stay alive, print nothing more) | stuck (block forever in a function of its own, apart
    from the others: hang-rank) | jit (compile kernels for a fixed real time, silently) | download (fetch
    the weights into the HF cache for a fixed real time, silently) | resync (a barrier after which the
    schedule resumes where it stood: the real time jit or download took is not simulated time).
    """

    at: float
    text: str = ""
    mem: float | None = None
    action: str | None = None
    mark: str | None = None  # name the real instant this step is written (a phase's or a bar's start)
    since: str | None = None  # the mark `timed` measures from
    timed: Callable[[float], str] | None = None  # the text, from the real seconds since `since` (tqdm, elapsed=)


class Marks:
    """The real instants named steps were written at, so that timed text shows real elapsed seconds."""

    def __init__(self) -> None:
        self.at: dict[str, float] = {}

    def text(self, step: Step, now: float) -> str:
        """What `step` writes at real epoch time `now`."""
        if step.mark:
            self.at[step.mark] = now
        if step.timed is None:
            return step.text
        return step.timed(max(0.0, now - self.at.get(step.since or "", now)))


def scheduled_text(steps: Iterable[Step], speed: float) -> str:
    """The steps' text as written when each runs exactly on schedule (real seconds = simulated / speed)."""
    marks = Marks()
    return "".join(marks.text(step, step.at / speed) for step in steps)


@dataclass(frozen=True)
class Schedule:
    """Phase times shared by all ranks (simulated seconds after t0)."""

    shard_done: tuple[float, ...]
    graphs: tuple[str, ...]
    max_running: int
    sizes: dict[str, tuple[int, ...]] = field(default_factory=dict)
    shard_spans: tuple[tuple[float, float], ...] = ()  # multi-thread loader: (start, end) of each shard, by end

    @classmethod
    def build(cls, params: SimParams) -> Schedule:
        rng = random.Random(params.seed)
        done, spans = _shard_schedule(params, rng)
        spec = params.speculative is not None
        decode = "target_verify" if spec else "target_decode"
        graphs: tuple[str, ...] = ("target_prefill",) if params.fmt != "0.5.9" else ()
        graphs += (decode,) + (("draft_decode", "draft_extend") if spec else ())
        bs = SPEC_BS if spec else PLAIN_BS
        sizes = {g: bs for g in graphs}
        if "target_prefill" in sizes:
            sizes["target_prefill"] = PREFILL_SIZES
        return cls(tuple(done), graphs, 48 if spec else 1024, sizes, spans)


def _shard_schedule(params: SimParams, rng: random.Random) -> tuple[list[float], tuple[tuple[float, float], ...]]:
    """When each main shard finishes (and, for the multi-thread loader, each shard's span), scaled by the
    weights phase's jitter and --slow factor."""
    scale = variation.phase_scale(params.seed, params.slow, "loading_weights")
    t = INIT_AT + 4.0
    if params.loader == "multithread":
        spans = variation.multithread_shards(params.shards, SHARD_SECONDS * scale, t, rng)
        return [end for _, end in spans], spans
    done = []
    for _ in range(params.shards):
        t += SHARD_SECONDS * rng.uniform(0.6, 1.4) * scale
        done.append(t)
    return done, ()


class RankScript:
    """Builds the steps of one rank; `steps` is the result."""

    def __init__(self, params: SimParams, rank: int) -> None:
        self.p = params
        self.rank = rank
        self.fmt = LogFormat(params.fmt, params.tp)
        self.sched = Schedule.build(params)
        self.mem = RankMemory(params.tp, params.speculative is not None, rank)
        self.rng = random.Random(params.seed * 1000 + rank + 1)
        self.used = 0.0
        self.steps: list[Step] = []
        self.stopped = False
        self.timings: dict[str, float] = {}
        self._build()

    # ------------------------------------------------------------------------------------------ helpers
    def _jitter(self, at: float, spread: float = 0.25) -> float:
        return at + self.rng.uniform(0.0, spread)

    def _add(
        self,
        at: float,
        text: str = "",
        mem: float | None = None,
        action: str | None = None,
        *,
        mark: str | None = None,
        since: str | None = None,
        timed: Callable[[float], str] | None = None,
    ) -> None:
        if self.stopped:
            return
        if mem is not None:
            self.used = mem
        if self.steps and at < self.steps[-1].at:
            at = self.steps[-1].at  # a rank prints its own lines in order
        self.steps.append(Step(at, text, mem, action, mark, since, timed))
        if action in ("raise", "die", "hang", "stuck"):
            self.stopped = True

    def _say(
        self, at: float, msg: str | None, mem: float | None = None, *, rank0_only: bool = False, mark: str | None = None
    ) -> None:
        if msg is None or (rank0_only and self.rank != 0):
            if mem is not None or mark is not None:
                self._add(at, "", mem, mark=mark)
            return
        self._add(at, self.fmt.line(self.p.t0 + at, msg, self.rank), mem, mark=mark)

    def _say_elapsed(self, at: float, since: str, msg: Callable[[float], str], mem: float | None = None) -> None:
        """A line with an `elapsed=` field: real seconds since the mark `since`, filled in when it is written."""
        stamp, rank = self.p.t0 + at, self.rank
        self._add(at, "", mem, since=since, timed=lambda elapsed: self.fmt.line(stamp, msg(elapsed), rank))

    def _frame(self, at: float, writer: BarWriter, n: int, total: int, desc: str = "", bar_format: str | None = None,
               end: str = "", tail: str = "") -> None:  # fmt: skip
        """One tqdm frame of rank 0's bar; frame 0 starts the bar's real clock, later ones show real elapsed."""

        def text(elapsed: float) -> str:
            return writer.write(frame(n, total, elapsed, desc, bar_format) + end) + tail

        self._add(at, mark="bar" if n == 0 else None, since="bar", timed=text)

    def _fault(self, kind: str) -> bool:
        return self.p.fault == kind

    def _is_fault_rank(self) -> bool:
        return self.rank == self.p.fault_rank

    # --------------------------------------------------------------------------------------------- build
    def _build(self) -> None:
        self._init(draft=False)
        if self.stopped:
            return
        self._load(draft=False)
        if self.p.fmt == "0.5.9":
            self._kv(draft=False)
            self._capture(self.sched.graphs[0])
            if self.p.speculative:
                self._init(draft=True)
                self._load(draft=True)
                self._kv(draft=True)
                for graph in self.sched.graphs[1:]:
                    self._capture(graph)
        else:
            if self.p.speculative:
                self._load(draft=True)
            self._kv(draft=False)
            if self.p.speculative:
                self._kv(draft=True)
            self._deepgemm()
            for graph in self.sched.graphs:
                self._capture(graph)
            self._piecewise()
        t = self._cursor() + 0.8
        msg = self.fmt.max_tokens(self.mem.tokens, self.sched.max_running, 131072, avail(self.used))
        self._say(t, msg, rank0_only=True)
        self._add(t + 0.01, action="ready")

    def _cursor(self) -> float:
        return self.steps[-1].at if self.steps else 0.0

    def _init(self, draft: bool) -> None:
        if draft:  # the draft runner's init is instant and allocates nothing
            t = self._cursor() + 0.05
            self._say(t, self.fmt.init_begin())
            self._say(t + 0.01, self.fmt.init_end(0.0, 0.0))
            return
        begin = self._jitter(INIT_AT)
        self._say(begin, self.fmt.init_begin(), self.mem.context, mark="init")
        if self._fault("nccl-timeout"):
            if self._is_fault_rank():
                text = faults.nccl_timeout(self.fmt, self.p.t0 + begin + DIST_TIMEOUT, self.rank)
                self._add(begin + DIST_TIMEOUT, text, action="raise")
            else:
                self._add(begin + 0.01, action="hang")
            return
        if self.p.nnodes > 1:  # the rendezvous: every node's ranks must join (a node still missing holds it)
            self._add(begin + 0.02, action="barrier")
        self._say(INIT_AT + 2.0, self.fmt.nccl(), rank0_only=True)
        end = self._jitter(INIT_AT + 2.7, 0.2)
        self._say_elapsed(end, "init", lambda elapsed: self.fmt.init_end(elapsed, 1.02), self.mem.context + 1.02)
        if self.fmt.new:
            self._say(end + 0.02, self.fmt.mem_baseline(1.02 + (0.03 if self.rank == 0 else 0.0)))

    def _load(self, draft: bool) -> None:
        begin = self._jitter(self._cursor() + (0.1 if draft else 0.3), 0.1)
        if draft and self.fmt.new:
            self._say(begin - 0.05, self.fmt.mem_baseline(0.0))
        self._say(begin, self.fmt.load_begin(avail(self.used)), mark="load")
        if not draft and self._fault("download"):  # huggingface_hub fetches the files before the loader opens them
            self._add(begin + 0.1, action="download")
            self._add(begin + 0.2, action="resync")
        self._say(begin + 0.5, self.fmt.weights_format(), rank0_only=True)
        base = self.used
        size = self.mem.draft_weights if draft else self.mem.weights
        if draft:
            done: tuple[float, ...] = (begin + 1.7,)
        else:
            done = self.sched.shard_done
        start = begin + 0.6
        writer = BarWriter()
        desc = self.fmt.weights_bar_desc()
        nl = "\n" if self.fmt.weights_bar_newline() else ""
        if self.rank == 0:
            self._frame(start, writer, 0, len(done), desc, WEIGHTS_FORMAT, nl)
        for i, at in enumerate(done, 1):
            mem = base + size * i / len(done)
            if not draft and self.sched.shard_spans:
                mem = self._memory_until(at, base, size)  # multi-thread: the bytes grew steadily until now
            if not draft and self._weights_fault(i, at, mem):
                return
            if self.rank == 0:
                self._frame(at, writer, i, len(done), desc, WEIGHTS_FORMAT, nl)
            self._add(at, "", mem)
        if self.rank == 0:
            self._frame(done[-1] + 0.01, writer, len(done), len(done), desc, WEIGHTS_FORMAT, nl, "\n")
        self._add(done[-1] + 0.02, action="barrier")  # the post-load barrier: all ranks finished loading
        end = self._jitter(done[-1] + (0.2 if draft else 1.2))
        model_type = "LlamaForCausalLMEagle3" if self.p.speculative == "EAGLE3" else "LlamaForCausalLMEagle"
        kind, free = model_type if draft else "LlamaForCausalLM", avail(self.used)
        self._say_elapsed(end, "load", lambda elapsed: self.fmt.load_end(elapsed, kind, free, size))
        self.timings["load_weight"] = self.timings.get("load_weight", 0.0) + (end - begin)

    def _memory_until(self, at: float, base: float, size: float) -> float:
        """Multi-thread loader: GPU memory steps every MEM_STEP_S up to `at`, as the workers copy bytes; returns
        the memory at `at`."""
        spans = self.sched.shard_spans
        t = self._cursor()
        while t + variation.MEM_STEP_S < at:
            t += variation.MEM_STEP_S
            self._add(t, "", base + size * variation.loaded_fraction(spans, t))
        return base + size * variation.loaded_fraction(spans, at)

    def _weights_fault(self, shard: int, at: float, mem: float) -> bool:
        """Inject a loading fault when this shard is the one it strikes; True when the rank stops here."""
        n = self.p.shards
        if self._fault("hang-weights") and shard == max(1, int(n * 0.4)):
            self._add(at, action="hang")
            return True
        if self._fault("oom-load") and shard == max(1, int(n * 0.45)):
            if self._is_fault_rank():
                text = faults.oom_load(self.fmt, self.p.t0 + at, self.rank, self.used)
                self._add(at, "", mem=faults.OOM_USED_GIB)
                self._add(at + 0.01, text, action="raise")
            else:
                self._add(at + 0.05, action="hang")
            return True
        if self._fault("crash") and shard == max(1, int(n * 0.6)) and self._is_fault_rank():
            self._add(at, action="die")
            return True
        return False

    def _kv(self, draft: bool) -> None:
        if not draft:  # KV sizing all-reduces the free memory of every rank: a collective
            self._add(self._cursor() + 0.5, action="barrier")
        t = self._jitter(self._cursor() + (0.05 if draft else 0.5), 0.1)
        self._say(t - 0.02, self.fmt.kv_dtype(), rank0_only=True)
        kv = self.mem.kv_draft if draft else self.mem.kv_target
        self._say(t, self.fmt.kv_alloc(self.mem.tokens, kv / 2, kv / 2), self.used + kv)
        self._say(t + 0.03, self.fmt.pool_end(avail(self.used)))
        if not draft:
            self._say(t + 0.05, self.fmt.tree_cache())
        self.timings["kv_cache_allocation"] = self.timings.get("kv_cache_allocation", 0.0) + 0.6

    def _capture(self, graph: str) -> None:
        sizes = self.sched.sizes[graph]
        per = GRAPH_SECONDS_PER_SIZE[graph]
        grow = GRAPH_GIB[graph] + (0.03 if self.rank == 0 else 0.0)
        logged = self.fmt.capture_logged_by_all(graph) or self.rank == 0
        per_req = 4 if graph in ("target_verify", "draft_extend") else 1
        begin = self._jitter(self._cursor() + 0.4, 0.1)
        base = self.used
        if logged:
            self._say(begin, self.fmt.capture_begin(graph, avail(base), sizes, per_req), mark="capture")
            if not self.fmt.new:
                self._say(begin + 0.01, self.fmt.capture_bs(sizes), rank0_only=True)
        start = begin + 0.05
        writer = BarWriter()
        n = len(sizes)
        if self.rank == 0:
            self._frame(start, writer, 0, n)
        order = list(reversed(sizes))
        t = start
        steps = self.fmt.capture_steps(graph)
        for i, size in enumerate(order):
            mem = base + grow * i / n
            if self._capture_fault(graph, i, t, mem):
                return
            step = 1 + i * steps // n
            if steps > 1 and logged and (i == 0 or step != 1 + (i - 1) * steps // n):
                self._say(t, self.fmt.capture_step_begin(graph, step))
            desc = self.fmt.capture_bar_desc(graph, size, avail(mem))
            if self.rank == 0:
                self._frame(t + 0.001, writer, i, n, desc)
            if i == 0:  # the first captured forward runs collectives: every rank is capturing by then
                self._add(t + 0.002, action="barrier")
                if self._fault("jit-compile") and graph in ("target_verify", "target_decode"):
                    self._add(t + 0.003, action="jit")  # the first forward JIT-compiles its kernels
                    self._add(t + 0.004, action="resync")
            t += (per * self.rng.uniform(0.9, 1.1) if self.rank == 0 else per) * self._capture_scale()
            if self.rank == 0:
                self._frame(t, writer, i + 1, n, desc)
            self._add(t, "", base + grow * (i + 1) / n)
        if self.rank == 0:
            desc = self.fmt.capture_bar_desc(graph, order[-1], avail(base + grow * (n - 1) / n))
            self._frame(t + 0.001, writer, n, n, desc, tail="\n")
            if graph in ("target_verify", "target_decode"):
                self._say(t + 0.2, self.fmt.registering())
        self._add(t + 0.01, action="barrier")  # capture runs collectives: no rank ends before rank 0's bar does
        end = self._jitter(t + 0.3, 0.1) + self.fmt.capture_stagger_s(self.rank)
        if logged:
            free = avail(self.used)
            self._say_elapsed(end, "capture", lambda elapsed: self.fmt.capture_end(graph, elapsed, grow, free, sizes))
        self.timings[graph] = end - begin

    def _deepgemm(self) -> None:
        """DeepGEMM JIT before the first captured forward: the session warning, then per kernel shape one line on
        every rank and a `DeepGEMM warmup` bar over the M sizes on rank 0 (SGLang compiles on each rank)."""
        t = self._cursor() + 0.2
        self._say(t, self.fmt.deepgemm_session(), rank0_only=True)
        for kind, n, k, groups in DEEPGEMM_KERNELS:
            t += 0.05
            self._say(t, self.fmt.deepgemm_kernel(kind, n, k, groups))
            writer = BarWriter()
            if self.rank == 0:
                self._frame(t + 0.01, writer, 0, len(DEEPGEMM_MS), self.fmt.DEEPGEMM_BAR)
            for i, _ in enumerate(DEEPGEMM_MS, 1):
                t += DEEPGEMM_SECONDS_PER_M
                if self.rank == 0:
                    self._frame(
                        t,
                        writer,
                        i,
                        len(DEEPGEMM_MS),
                        self.fmt.DEEPGEMM_BAR,
                        tail="\n" if i == len(DEEPGEMM_MS) else "",
                    )
            self._add(t + 0.01, "")
        self._add(t + 0.02, action="barrier")

    def _piecewise(self) -> None:
        """Piecewise CUDA graph after the other graphs: compile then capture each token count (largest first)."""
        begin = self._jitter(self._cursor() + 0.3, 0.1)
        base = self.used
        self._say(begin, self.fmt.piecewise_begin(avail(base)), mark="piecewise")
        order = list(reversed(PIECEWISE_TOKENS))
        n = len(order)
        t = begin + 0.05
        for label in ("compile", "capture"):
            writer = BarWriter()
            if self.rank == 0:
                self._frame(t, writer, 0, n)
            for i, size in enumerate(order):
                mem = base + PIECEWISE_GIB * i / n if label == "capture" else base
                desc = (self.fmt.piecewise_compile_desc(size) if label == "compile"
                        else self.fmt.piecewise_capture_desc(size, avail(mem)))  # fmt: skip
                t += PIECEWISE_SECONDS_PER_SIZE
                if self.rank == 0:
                    self._frame(t, writer, i + 1, n, desc, tail="\n" if i + 1 == n else "")
            self._add(t + 0.01, "", base + (PIECEWISE_GIB if label == "capture" else 0.0))
        self._add(t + 0.02, action="barrier")
        end = self._jitter(t + 0.2, 0.1)
        free = avail(self.used)
        self._say_elapsed(end, "piecewise", lambda elapsed: self.fmt.piecewise_end(elapsed, PIECEWISE_GIB, free))

    def _capture_scale(self) -> float:
        """The capture phase's jitter x --slow factor (1.0 for the classic schedule)."""
        return variation.phase_scale(self.p.seed, self.p.slow, "cuda_graph")

    def _capture_fault(self, graph: str, index: int, at: float, mem: float) -> bool:
        if graph not in ("target_verify", "target_decode"):
            return False
        n = len(self.sched.sizes[graph])
        if self._fault("hang-capture") and index == int(n * 0.4):
            self._add(at, action="hang")
            return True
        if self._fault("hang-rank") and index == int(n * 0.4):
            # TP3 blocks in a collective of its own; the others wait for it at the next barrier, forever
            self._add(at, action="stuck" if self._is_fault_rank() else "barrier")
            self._add(at + 0.01, action="hang")
            return True
        if self._fault("oom-capture") and index == int(n * 0.35) and not capture_fits(self.p):
            if self._is_fault_rank():
                self._add(at, "", mem=faults.OOM_USED_GIB)
                text = faults.oom_capture(self.fmt, self.p.t0 + at + 0.01, self.rank, self.fmt.new)
                self._add(at + 0.01, text, action="raise")
            else:
                self._add(at + 0.05, action="hang")
            return True
        return False


def rank_steps(params: SimParams, rank: int) -> list[Step]:
    """The steps of one rank, in order."""
    return RankScript(params, rank).steps


def startup_timings(params: SimParams) -> dict[str, float]:
    """What rank 0 measured per phase (for `Engine startup timings`)."""
    return RankScript(params, 0).timings
