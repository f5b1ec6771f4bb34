"""The texts of the injected failures: scheduler tracebacks, launcher errors, uvicorn's bind error.

Frames are abbreviated but keep the shape of the real ones: a `Traceback (most recent call last):` header,
unprefixed frame lines, and the exception line the reference (§4) documents.
"""

from __future__ import annotations

from tui.sim.logformat import LogFormat
from tui.sim.memory import TOTAL_GIB

OOM_FREE_GIB = 1.12
OOM_USED_GIB = TOTAL_GIB - OOM_FREE_GIB
_PKG = "/usr/local/lib/python3.12/dist-packages"
_SRT = f"{_PKG}/sglang/srt"
_TORCH = f"{_PKG}/torch"


def _frames(*frames: tuple[str, int, str, str]) -> str:
    return "".join(f'  File "{path}", line {line}, in {func}\n    {code}\n' for path, line, func, code in frames)


def _scheduler_frames(new: bool) -> str:
    entry = "configure_scheduler_process" if new else "run_scheduler_process"
    return _frames(
        (f"{_SRT}/managers/scheduler.py", 3130, entry, "scheduler = Scheduler("),
        (f"{_SRT}/managers/scheduler.py", 352, "__init__", "self.tp_worker = TpModelWorker("),
        (f"{_SRT}/managers/tp_worker.py", 244, "__init__", "self._model_runner = ModelRunner("),
        (f"{_SRT}/model_executor/model_runner.py", 381, "__init__", "self.initialize(min_per_gpu_memory)"),
    )


def oom_message(rank: int, used_gib: float, tried: str = "1.96 GiB") -> str:
    """PyTorch's CUDA OOM text for the GPU of `rank`."""
    return (
        f"CUDA out of memory. Tried to allocate {tried}. GPU {rank} has a total capacity of {TOTAL_GIB:.2f} GiB "
        f"of which {OOM_FREE_GIB:.2f} GiB is free. Including non-PyTorch memory, this process has "
        f"{used_gib:.2f} GiB memory in use. Of the allocated memory {used_gib - 0.95:.2f} GiB is allocated by "
        "PyTorch, and 0.31 GiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large "
        "try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation "
        "for Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)"
    )


def scheduler_exception(fmt: LogFormat, t: float, rank: int, traceback: str) -> str:
    """`[ts TPk] Scheduler hit an exception: Traceback…`; the traceback ends in a newline, so a blank line follows."""
    return fmt.line(t, "Scheduler hit an exception: " + traceback, rank)


def oom_load(fmt: LogFormat, t: float, rank: int, _used: float) -> str:
    iterator = "multi_thread_safetensors_weights_iterator" if fmt.new else "safetensors_weights_iterator"
    tb = (
        "Traceback (most recent call last):\n"
        + _scheduler_frames(fmt.new)
        + _frames(
            (f"{_SRT}/model_executor/model_runner.py", 469, "initialize", "self.load_model()"),
            (f"{_SRT}/model_executor/model_runner.py", 968, "load_model", "self.model = get_model("),
            (f"{_SRT}/model_loader/loader.py", 612, "load_model", "self.load_weights_and_postprocess("),
            (f"{_SRT}/models/llama.py", 662, "load_weights", "for name, loaded_weight in weights:"),
            (f"{_SRT}/model_loader/weight_utils.py", 651, iterator, "param = f.get_tensor(name)"),
        )
        + f"torch.OutOfMemoryError: {oom_message(rank, OOM_USED_GIB)}\n"
    )
    return scheduler_exception(fmt, t, rank, tb)


def capture_failed_help(new: bool) -> str:
    max_bs = "--cuda-graph-max-bs-decode" if new else "--cuda-graph-max-bs"
    disable = "--cuda-graph-backend-decode=disabled" if new else "--disable-cuda-graph"
    return (
        "Possible solutions:\n"
        "1. set --mem-fraction-static to a smaller value (e.g., 0.8 or 0.7)\n"
        f"2. set {max_bs} to a smaller value (e.g., 16)\n"
        "3. disable torch compile by not using --enable-torch-compile\n"
        f"4. disable CUDA graph by {disable}. (Not recommended. Huge performance loss)\n"
        "Open an issue on GitHub https://github.com/sgl-project/sglang/issues/new/choose \n"
    )


def oom_capture(fmt: LogFormat, t: float, rank: int, new: bool) -> str:
    runner = f"{_SRT}/model_executor/" + ("runner/decode_cuda_graph_runner.py" if new else "cuda_graph_runner.py")
    oom = oom_message(rank, OOM_USED_GIB, "448.00 MiB")
    inner = (
        "Traceback (most recent call last):\n"
        + _frames(
            (runner, 388, "__init__", "self.capture()"),
            (runner, 507, "capture", ") = self.capture_one_batch_size(bs, forward)"),
            (runner, 663, "capture_one_batch_size", "run_once()"),
            (f"{_TORCH}/cuda/graphs.py", 186, "__exit__", "self.cuda_graph.capture_end()"),
        )
        + f"torch.OutOfMemoryError: {oom}\n"
    )
    outer = (
        "Traceback (most recent call last):\n"
        + _scheduler_frames(new)
        + _frames(
            (f"{_SRT}/model_executor/model_runner.py", 482, "initialize", "self.init_device_graphs()"),
            (
                f"{_SRT}/model_executor/model_runner.py",
                2210,
                "init_device_graphs",
                "self.graph_runner = graph_runners[",
            ),
            (runner, 390, "__init__", "raise Exception("),
        )
        + f"Exception: Capture cuda graph failed: {oom}\n"
        + capture_failed_help(new)
    )
    tb = inner + "\nDuring handling of the above exception, another exception occurred:\n\n" + outer
    return scheduler_exception(fmt, t, rank, tb)


def nccl_timeout(fmt: LogFormat, t: float, rank: int) -> str:
    where = "distributed/bootstrap.py" if fmt.new else "model_executor/model_runner.py"
    tb = (
        "Traceback (most recent call last):\n"
        + _scheduler_frames(fmt.new)
        + _frames(
            (f"{_SRT}/{where}", 712, "init_torch_distributed", "initialize_model_parallel("),
            (
                f"{_SRT}/distributed/parallel_state.py",
                1460,
                "initialize_model_parallel",
                "_TP = init_model_parallel_group(",
            ),
            (f"{_TORCH}/distributed/distributed_c10d.py", 4159, "barrier", "work = group.barrier(opts=opts)"),
        )
        + f"torch.distributed.DistBackendError: [{rank}] is setting up NCCL communicator and retrieving ncclUniqueId "
        "from [0] via c10d key-value store by key '0', but store->get('0') got error: wait timeout after 600000ms, "
        "keys: /default_pg/0//cuda//0\n"
    )
    return scheduler_exception(fmt, t, rank, tb)


def rank_dead(fmt: LogFormat, rank: int, exit_code: int) -> str:
    """The launcher's uncaught RuntimeError when a scheduler died silently during init (printed at exit)."""
    if fmt.new:
        return (
            "Traceback (most recent call last):\n"
            + _frames(
                ("/usr/local/bin/sglang", 10, "<module>", "sys.exit(main())"),
                (f"{_PKG}/sglang/cli/serve.py", 118, "serve", "run_server(server_args)"),
                (f"{_SRT}/entrypoints/http_server.py", 1710, "launch_server", "_launch_subprocesses("),
                (f"{_SRT}/entrypoints/engine.py", 1021, "_wait_for_scheduler_ready", "raise RuntimeError("),
            )
            + f"RuntimeError: Rank {rank} scheduler died during initialization (exit code: {exit_code}). "
            "If exit code is -9 (SIGKILL), a common cause is the OS OOM killer. "
            "Run `dmesg -T | grep -i oom` to check.\n"
        )
    inner = (
        "Traceback (most recent call last):\n"
        + _frames(
            (f"{_SRT}/entrypoints/engine.py", 903, "_launch_subprocesses", "data = scheduler_pipe_readers[i].recv()"),
            ("/usr/lib/python3.12/multiprocessing/connection.py", 250, "recv", "buf = self._recv_bytes()"),
            ("/usr/lib/python3.12/multiprocessing/connection.py", 430, "_recv_bytes", "buf = self._recv(4)"),
            ("/usr/lib/python3.12/multiprocessing/connection.py", 399, "_recv", "raise EOFError"),
        )
        + "EOFError\n"
    )
    outer = (
        "Traceback (most recent call last):\n"
        '  File "<frozen runpy>", line 198, in _run_module_as_main\n'
        '  File "<frozen runpy>", line 88, in _run_code\n'
        + _frames(
            (f"{_PKG}/sglang/launch_server.py", 29, "<module>", "launch_server(server_args)"),
            (f"{_SRT}/entrypoints/http_server.py", 1383, "launch_server", "_launch_subprocesses("),
            (f"{_SRT}/entrypoints/engine.py", 905, "_launch_subprocesses", "raise RuntimeError("),
        )
        + f"RuntimeError: Rank {rank} scheduler is dead. Please check if there are relevant logs.\n"
    )
    return inner + "\nDuring handling of the above exception, another exception occurred:\n\n" + outer


def warmup_error() -> str:
    """The traceback the warmup thread logs when its POST /generate did not return 200."""
    return (
        "Traceback (most recent call last):\n"
        + _frames(
            (
                f"{_SRT}/entrypoints/http_server.py",
                1502,
                "_execute_server_warmup",
                'assert res.status_code == 200, f"{res}"',
            )
        )
        + "AssertionError: <Response [500]>\n"
    )


def gated_repo(model: str) -> str:
    """A gated Hugging Face repo without a token: 0.5.23 resolves the server args (the model's config.json from the
    hub) before it logs them, so transformers' OSError is a bare traceback with no launch line before it (its
    message, huggingface_hub's 401 under it, as sgl-project/sglang#14644's log shows)."""
    hub = f"{_PKG}/transformers/utils/hub.py"
    return (
        "Traceback (most recent call last):\n"
        + _frames(
            ("/usr/local/bin/sglang", 10, "<module>", "sys.exit(main())"),
            (f"{_PKG}/sglang/cli/serve.py", 112, "serve", "server_args = prepare_server_args(argv)"),
            (f"{_SRT}/server_args.py", 279, "resolve_once", "run_resolution_pipeline(self)"),
            (
                f"{_PKG}/transformers/configuration_utils.py",
                721,
                "_get_config_dict",
                "resolved_config_file = cached_file(",
            ),
            (hub, 543, "cached_files", "raise OSError("),
        )
        + "OSError: You are trying to access a gated repo.\n"
        f"Make sure to have access to it at https://huggingface.co/{model}.\n"
        "401 Client Error. (Request ID: Root=1-695139c1-20c276683bbfa05022511a7b;379c2def-ca77-4fc6-9489-6fc1f7a44e40)\n"
        "\n"
        f"Cannot access gated repo for url https://huggingface.co/{model}/resolve/main/config.json.\n"
        f"Access to model {model} is restricted. You must have access to it and be authenticated to access it. "
        "Please log in.\n"
    )


def bind_error(host: str, port: int, errno: int = 98, reason: str = "address already in use") -> str:
    """uvicorn's message when it cannot bind (it binds only after the whole model is loaded)."""
    return f"[Errno {errno}] error while attempting to bind on address ('{host}', {port}): {reason}"


def head_lost(fmt: LogFormat, t: float, rank: int, addr: str) -> str:
    """A non-zero node's scheduler when node 0 vanished: its store connection resets (multi-node)."""
    tb = (
        "Traceback (most recent call last):\n"
        + _scheduler_frames(fmt.new)
        + f"torch.distributed.DistNetworkError: Connection reset by peer: the TCPStore at {addr} (node 0) is gone\n"
    )
    return scheduler_exception(fmt, t, rank, tb)
