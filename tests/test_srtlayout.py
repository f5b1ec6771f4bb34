"""An srtctl job's log directory as srt-slurm c88ef73 writes it (names read from its source: docs/srtctl-layout.md),
the pure parts: the target, the worker logs as PD members, the recipe's counts, a job's StdOut recognised."""

from __future__ import annotations

import pytest

from tui.core import srtlayout as srt

# An example.yaml-shaped recipe (srt-slurm examples/example.yaml), 4P 1D
RECIPE = """\
# Minimal srtctl job configuration template
name: "example-job"
model:
  path: "deepseek-r1"
  precision: "fp8"
resources:
  gpu_type: "gb200"  # gb200, h100
  prefill_nodes: 2     # Number of nodes for prefill workers
  decode_nodes: 1
  prefill_workers: 4
  decode_workers: 1
  # agg_workers: 4
  gpus_per_node: 4
backend:
  prefill_environment:
    TORCH_DISTRIBUTED_DEFAULT_TIMEOUT: "1800"
    decode_workers: 99
"""


def test_targets_parse_and_say_what_to_write_otherwise() -> None:
    assert srt.parse_target("srt:outputs/4242/logs/") == srt.SrtTarget("outputs/4242/logs")
    assert srt.parse_target("me@login/srt:/scratch/o/4242/logs") == srt.SrtTarget("/scratch/o/4242/logs", "me@login")
    assert str(srt.parse_target("me@login/srt:/x/1/logs")) == "me@login/srt:/x/1/logs"
    assert srt.is_srt_target("srt:/x") and srt.is_srt_target("login/srt:/x") and not srt.is_srt_target("slurm:12")
    with pytest.raises(srt.SrtTargetError, match="srt:LOGDIR"):
        srt.parse_target("srt:")


def test_the_job_id_comes_from_the_directory() -> None:
    assert srt.job_id_of("/scratch/outputs/4242/logs") == "4242"
    assert srt.job_id_of("logs/4242_4P_1D_20260101_120000") == "4242"  # the layout the older docs describe
    assert srt.job_id_of("/tmp/somewhere") is None


def test_worker_logs_are_members_prefill_first_out_before_err() -> None:
    names = ["log.out", "benchmark.out", "sweep_4242.log", "cn02_decode_w0.out", "cn01_prefill_w1.err",
             "cn01_prefill_w0.out", "cn01_prefill_w0.err", "cn01_config.json", "cn03_nginx.out",
             "gb-1_2.x_prefill_w10.out"]  # fmt: skip
    found = srt.workers(names)
    assert [(w.name, w.node, w.log) for w in found] == [
        ("prefill0", "cn01", "cn01_prefill_w0.out"),
        ("prefill1", "cn01", "cn01_prefill_w1.err"),
        ("prefill10", "gb-1_2.x", "gb-1_2.x_prefill_w10.out"),
        ("decode0", "cn02", "cn02_decode_w0.out"),
    ]


def test_the_recipe_gives_roles_and_counts_from_resources_only() -> None:
    recipe = srt.parse_recipe(RECIPE)
    assert recipe == srt.Recipe(prefill_workers=4, decode_workers=1, prefill_nodes=2, decode_nodes=1, gpus_per_node=4)
    assert recipe.disaggregated and recipe.counts() == "4P 1D"
    assert srt.parse_recipe("resources:\n  agg_workers: 2\n").counts() == "2 agg"
    assert srt.parse_recipe("name: x\n") == srt.Recipe()


def test_a_job_whose_stdout_is_srtctls_sweep_log_is_an_srtctl_job() -> None:
    assert srt.log_dir_of_stdout("/o/4242/logs/sweep_4242.log") == "/o/4242/logs"
    assert srt.log_dir_of_stdout("/o/slurm-4242.out") is None


def test_a_workers_ports_come_from_its_log_else_srtctls_allocation() -> None:
    head = "[2026-12-06 11:54:47] server_args={'model_path': 'm', 'port': 6132, 'disaggregation_bootstrap_port': 7201}"
    assert srt.log_port(head) == 6132 and srt.log_bootstrap_port(head) == 7201
    assert srt.log_port("ServerArgs(model_path='m', nccl_port=123, port=6100, host='0.0.0.0')") == 6100
    assert srt.log_port("[..] Load weight begin") is None
    found = srt.workers(["a_prefill_w0.out", "a_prefill_w1.out", "b_decode_w0.out", "a_decode_w1.out"])
    assert srt.allocated_ports(found) == {"prefill0": 6100, "prefill1": 6132, "decode0": 6100, "decode1": 6164}
    assert srt.worker_counts(found) == "2P 2D" and srt.sweep_job_id(["x", "sweep_77.log"]) == "77"


def test_the_benchmarks_word_is_checked_against_the_servers() -> None:
    # srtctl's log (the job's StdOut): src/srtctl/core/health.py, src/srtctl/cli/mixins/benchmark_stage.py
    sweep = (
        "[INFO] Model is not ready, waiting for 1 prefills and 0 decodes. Have 1 prefills and 1 decodes.\n"
        "[INFO] Model is ready. Have 2 prefills and 1 decodes.\n"
        "[INFO] Server is healthy - starting benchmark\n"
    )
    done = sweep + "[INFO] Benchmark completed successfully\n"
    table = "Successful requests:                     0\nTotal generated tokens:                  0\n"  # sa-bench's
    word = srt.benchmark_word(done, table + table.replace(" 0\n", " 4096\n"))
    assert word == srt.BenchmarkWord("2P 1D", (0, 4096), "completed successfully")
    assert srt.benchmark_disagrees(word, True, "ready: 2P 1D") == (
        "benchmark.out reports 0 generated tokens (1 of 2 run(s)), yet srtctl says its benchmark completed "
        "successfully: the servers never served it"
    )
    said = srt.benchmark_disagrees(srt.benchmark_word(done, ""), False, "decode0 stalled in CUDA graph capture")
    assert said == (
        "srtctl's log says the model is ready (2P 1D) and its benchmark completed successfully, but the workers' "
        "own logs say: decode0 stalled in CUDA graph capture"
    )
    failed = srt.benchmark_word(sweep + "[ERROR] Benchmark failed with exit code 1\n", "")
    assert failed.done == "failed with exit code 1"
    assert srt.benchmark_disagrees(failed, False, "x") == (
        "srtctl's log says the model is ready (2P 1D), but the workers' own logs say: x"
    )
    # srtctl's words in benchmark.out are not srtctl's log: only the table is read there
    assert srt.benchmark_word("", sweep).ready is None
    assert srt.benchmark_disagrees(srt.benchmark_word(sweep, "Total generated tokens: 4096\n"), True, "ready") is None
    assert srt.benchmark_disagrees(srt.BenchmarkWord(), False, "x") is None


def test_the_benchmarks_word_is_a_fact_of_the_deployments_one_state_every_view_reads() -> None:
    # folded into the deployment (the job watch reads it once a cycle), the disagreement is decided once, in
    # combined(); the JSON, the board's STATUS cell and export's metric read that one fact
    from dataclasses import replace

    from tui.core import deployment as dm
    from tui.core.metrics import series
    from tui.core.report import to_json
    from tui.core.state import Phase
    from tui.ui.fleet_rows import status_cell

    dep = dm.Deployment((dm.Member("prefill0", "prefill", "n1"), dm.Member("decode0", "decode", "n2")))
    plain = dm.combined(dep)
    assert plain.benchmark_disagrees is None and "benchmark" not in to_json(plain)  # no srtctl job: no key
    assert not [name for name, _, _ in series(plain, 0.0) if name == "sglang_tui_benchmark_disagrees"]
    ready_said = srt.benchmark_word("[INFO] Model is ready. Have 1 prefills and 1 decodes.\n", "")
    dep = dep.with_benchmark(ready_said)
    # a later read whose tail no longer holds srtctl's ready line keeps it; a member's fold keeps the word
    dep = dep.with_benchmark(srt.benchmark_word("", "Total generated tokens: 0\n"))
    dep = dep.with_state("decode0", replace(dep.member("decode0").state, updated_at=1.0))
    assert dep.benchmark == srt.BenchmarkWord("1P 1D", (0,), None)
    state = dm.combined(dep)
    assert state.benchmark_disagrees == srt.Disagreement(zero_runs=1, runs=1)
    said = to_json(state)["benchmark"]
    assert said == {
        "model_ready": "1P 1D", "done": None, "generated_tokens": [0],
        "disagrees": "benchmark.out reports 0 generated tokens (1 of 1 run(s)): the servers never served it",
    }  # fmt: skip
    assert status_cell(state, 0.0).startswith("benchmark: 0 generated tokens · ")
    assert [v for name, _, v in series(state, 0.0) if name == "sglang_tui_benchmark_disagrees"] == [1.0]
    # srtctl says ready while the workers are still on their way: no disagreement yet (its health check can come
    # a moment before their own ready is folded); once one failed, the line names what the workers' logs say
    starting = dm.combined(dm.Deployment(dep.members, ready_said))
    assert starting.benchmark_disagrees is None and not status_cell(starting, 0.0).startswith("srtctl says")
    failed = dep.member("decode0").state.evolve(phase=Phase.FAILED)
    stuck = dm.combined(dm.Deployment(dep.members, ready_said).with_state("decode0", failed))
    assert stuck.phase is Phase.FAILED and stuck.benchmark_disagrees == srt.Disagreement(ready="1P 1D")
    line = to_json(stuck)["benchmark"]["disagrees"]
    assert line.startswith("srtctl's log says the model is ready (1P 1D), but the workers' own logs say: ")
    assert status_cell(stuck, 0.0).startswith("srtctl says ready, workers not · ")
    # agreeing: the key and the metric are there, saying so
    agreed = dm.combined(dm.Deployment(dep.members, srt.BenchmarkWord()))
    assert to_json(agreed)["benchmark"] == {
        "model_ready": None,
        "done": None,
        "generated_tokens": [],
        "disagrees": None,
    }
    assert [v for name, _, v in series(agreed, 0.0) if name == "sglang_tui_benchmark_disagrees"] == [0.0]


def test_the_frontend_is_srtctls_sglang_router_log() -> None:
    # srt-slurm c88ef73 src/srtctl/frontends/sglang.py: `{node}_router_{idx}.out`; src/srtctl/ports.py: 8000, 8180
    names = ["cn01_router_1.out", "cn02_router_0.out", "cn01_frontend_0.out", "cn01_prefill_w0.out", "log.out"]
    assert srt.routers(names) == [
        srt.SrtRouter(0, "cn02", "cn02_router_0.out"),
        srt.SrtRouter(1, "cn01", "cn01_router_1.out"),
    ]
    assert srt.routers(names)[0].name == "router0" and srt.workers(["cn02_router_0.out"]) == []
    smg = "2026-12-06 18:00:00  INFO smg::server: src/server.rs:794: Starting router on 0.0.0.0:30080 | mode: PD\n"
    assert srt.router_port(smg, names) == 30080 and srt.router_named(smg)
    assert srt.router_port("Router command: python -m sglang_router.launch_router --port 8180\n", []) == 8180
    assert not srt.router_named("") and srt.router_port("", names) == 8000
    assert srt.router_port("", [*names, "cn03_nginx.out"]) == 8180  # behind nginx: the internal port
