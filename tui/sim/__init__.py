"""A simulated SGLang launch: real processes, a real log in a real SGLang version's format, real HTTP.

Processes: the main process (`python -m tui simulate …`, the process-group/session leader when started
with setsid) writes server_args and the uvicorn/warmup lines, serves HTTP and runs rank 0's serving loop;
one child per TP rank (`sglang::scheduler_TP<k>`, its whole cmdline) plays that rank's startup script and
writes its own lines to the inherited stderr, so ranks interleave as they do in a redirected real log; a
`sglang::detokenizer` child idles. Ranks synchronise through the main process at the points where real ranks
meet in a collective (end of loading, end of each capture). `speed` compresses how long each step takes;
what is printed (log timestamps, tqdm elapsed/rate/remaining, `elapsed=` fields) is real wall-clock time.
Stopped with SIGSTOP and continued, a rank resumes where its schedule stood, as a real rank's work does.

Modules: params (what to simulate), logformat + bars (the text), script (a rank's timeline as data),
memory + gpustate (GPU memory per rank, published for the GPU probe), faults (failure texts), rank / detok /
procs (the children), http + api + engine + metrics (the HTTP server, /metrics), server (the main process), clock.

What the faults model (reference §4, §6):
- oom-load / oom-capture / nccl-timeout: TP3 (or the last rank) logs `Scheduler hit an exception:` with the
  traceback, SIGQUITs the main process, which logs `Received sigquit…` and SIGKILLs the tree and itself.
- crash: TP3 SIGKILLs itself while loading; the launcher reports the dead rank, kills the children, exits 1.
- hang-weights / hang-capture: every rank stops at the same point and stays alive; the log goes silent.
- port-in-use (or a real listener on --port): uvicorn's bind error after the model loaded; exit 3.
- warmup-fail: the warmup's POST /generate gets a 500; `Initialization failed. warmup error:`; tree killed.
- gated: the model is a gated Hugging Face repo and no token is set: the server args cannot be resolved (the
  model's config.json), so transformers' OSError and the hub's 401 message come before any launch line; exit 1.
- orphans: schedulers have no parent-death signal and ignore SIGTERM (stuck in GPU teardown), so a TERM to
  the main process or the group leaves them running, re-parented, still in the launch's process group and
  session, holding their GPU memory and carrying the launcher's SGLANG_TUI_RUN marker; SIGKILL to the group
  ends them. With SGLANG_TUI_SIM_ORPHAN_SETSID=1 they also leave the session (setsid), as SGLang's never do:
  then nothing but the run marker ties them to the launch, which a tmux server the launch started carries too.
"""
