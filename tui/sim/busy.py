"""What a rank does while the log is silent but the server works: JIT-compiling kernels, downloading weights.

`jit_compile` runs, as children of the calling rank, short-lived compiler processes titled like the ones
FlashInfer's JIT drives (`ninja` → `nvcc` → `cicc`, `ptxas`) that use CPU, for a fixed real time whatever
`--speed` is (a real JIT build takes minutes whatever the model). `download` grows `*.incomplete` blobs in
the HF cache the environment names, as huggingface_hub does (sparse files: the size grows, the disk does not).
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import time
from pathlib import Path

from tui.sim.procs import spawn_titled_python

JIT_REAL_S = 48.0  # at least 45 s of wall time, whatever --speed is
DOWNLOAD_REAL_S = 30.0
DOWNLOAD_BYTES_PER_S = 96 << 20
DOWNLOAD_FILES = 4  # huggingface_hub fetches several files at once
JIT_DIR = "/root/.cache/flashinfer/90a/cached_ops/batch_prefill_with_kv_cache_dtype_q_bf16_head_dim_qk_128"

# A compiler: set its short name, die with its parent, burn CPU in short bursts (a fifth of a core), run the
# children it names one after the other, and exit after `secs`.
_COMPILER = """import ctypes, os, signal, subprocess, sys, time
libc = ctypes.CDLL(None)
libc.prctl(15, {comm!r}.encode(), 0, 0, 0)
libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)
end = time.time() + {secs!r}
for title, code in {children!r}:
    p = subprocess.Popen([title], executable={python!r}, stdin=subprocess.PIPE)
    p.stdin.write(code.encode()); p.stdin.close(); p.wait()
while time.time() < end:
    t = time.time()
    while time.time() - t < 0.02:
        pass
    time.sleep(0.08)
"""


_IDLE = """import ctypes, signal
libc = ctypes.CDLL(None)
libc.prctl(15, {comm!r}.encode(), 0, 0, 0)
libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)
signal.pause()
"""


def _compiler_code(comm: str, secs: float, children: list[tuple[str, str]]) -> str:
    """The program of one compiler process; children: (title, program) run one after the other."""
    return _COMPILER.format(comm=comm, secs=secs, children=children, python=sys.executable)


def _nvcc_job(n: int) -> tuple[str, str]:
    src = f"{JIT_DIR}/batch_prefill_kernel_{n}.cu"
    nvcc = (
        f"/usr/local/cuda/bin/nvcc -ccbin /usr/bin/g++ -O3 -std=c++17 --threads=1 "
        f"-gencode=arch=compute_90a,code=sm_90a -c {src} -o {JIT_DIR}/batch_prefill_kernel_{n}.cuda.o"
    )
    children = [
        ("/usr/local/cuda/nvvm/bin/cicc --c++17 -arch compute_90a " + src, _compiler_code("cicc", 0.8, [])),
        (
            f"ptxas -arch=sm_90a -m64 --compile-only {JIT_DIR}/batch_prefill_kernel_{n}.ptx",
            _compiler_code("ptxas", 0.5, []),
        ),
    ]
    return nvcc, _compiler_code("nvcc", 0.1, children)


def jit_compile(real_s: float = JIT_REAL_S, jobs: int = 2) -> None:
    """Compile for real_s wall seconds: `jobs` nvcc jobs at a time under one ninja, as children of this process."""
    if not sys.executable:  # a titled child (argv[0] is its title): Python could not tell where it runs from
        sys.executable = os.path.realpath("/proc/self/exe")
    env = dict(os.environ)
    end = time.time() + real_s
    ninja = spawn_titled_python(f"ninja -v -C {JIT_DIR} -j {jobs}", _IDLE.format(comm="ninja"), env=env)
    running: list[subprocess.Popen[bytes]] = []
    n = 0
    try:
        while time.time() < end:
            running = [p for p in running if p.poll() is None]
            while len(running) < jobs:
                title, code = _nvcc_job(n)
                running.append(spawn_titled_python(title, code, env=env))
                n += 1
            time.sleep(0.1)
    finally:
        for p in running:
            p.wait()
        ninja.kill()
        ninja.wait()


def hub_cache(env: dict[str, str] | os._Environ[str] = os.environ) -> Path:
    """The HF hub cache huggingface_hub would use: HF_HUB_CACHE, HUGGINGFACE_HUB_CACHE, HF_HOME/hub, ~/.cache."""
    for var in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        if env.get(var):
            return Path(env[var])
    home = env.get("HF_HOME") or os.path.join(env.get("HOME", "~"), ".cache", "huggingface")
    return Path(home).expanduser() / "hub"


def download(model: str, real_s: float = DOWNLOAD_REAL_S, shards: int = 8) -> None:
    """Grow `blobs/<sha256>.incomplete` files of `model` in the hub cache for real_s seconds, a few at a time,
    renaming each to its final name when done (like huggingface_hub)."""
    blobs = hub_cache() / f"models--{model.replace('/', '--')}" / "blobs"
    blobs.mkdir(parents=True, exist_ok=True)
    per_file = int(DOWNLOAD_BYTES_PER_S * real_s / max(1, shards))
    start = time.time()
    pending = list(range(shards))
    active: dict[int, Path] = {}
    while pending or active:
        while pending and len(active) < DOWNLOAD_FILES:
            i = pending.pop(0)
            sha = hashlib.sha256(f"{model}:{i}".encode()).hexdigest()
            active[i] = blobs / f"{sha}.incomplete"
            active[i].touch()
        rate = DOWNLOAD_BYTES_PER_S / max(1, len(active))
        time.sleep(0.25)
        for i, path in list(active.items()):
            size = min(per_file, path.stat().st_size + int(rate * 0.25))
            os.truncate(path, size)
            if size >= per_file or time.time() - start >= real_s:
                path.rename(path.with_suffix(""))
                del active[i]
        if time.time() - start >= real_s:
            for path in active.values():
                path.rename(path.with_suffix(""))
            return
