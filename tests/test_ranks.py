"""map_ranks: TP rank -> (GPU, PID), from process titles first, else SGLang's placement rule."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tui.core.events import GpuInfo, GpuProcess, GpuSnapshot
from tui.core.ranklabels import rank_key, title_key
from tui.core.ranks import map_ranks, placement_gpu

GIB = 2**30


def snapshot(gpus: int, procs: dict[int, list[tuple[int, str]]] | None = None) -> GpuSnapshot:
    procs = procs or {}
    return GpuSnapshot(
        "nvml",
        tuple(
            GpuInfo(i, procs=tuple(GpuProcess(pid, 20 * GIB, name) for pid, name in procs.get(i, [])))
            for i in range(gpus)
        ),
    )


def test_keys_from_labels_and_titles() -> None:
    assert rank_key("DP1 TP3 EP3") == (("DP", 1), ("TP", 3), ("EP", 3))
    assert rank_key("PP1 ATTN_CP2 MOE_DP0 TP12") == (("PP", 1), ("ATTN_CP", 2), ("MOE_DP", 0), ("TP", 12))
    assert title_key("sglang::scheduler_DP0_TP0_EP0") == (("DP", 0), ("TP", 0), ("EP", 0))
    assert title_key("sglang::scheduler_TP3     ") == (("TP", 3),)
    assert title_key("sglang::scheduler") == ()
    assert title_key("sglang::detokenizer") is None
    assert title_key("python -m sglang.launch_server --tp 8") is None
    assert title_key("sglang::scheduler_TP3_extra") is None


def test_titles_win_over_placement() -> None:
    # CUDA_VISIBLE_DEVICES=7,6,…,0: rank k runs on physical GPU 7-k; only the titles can tell.
    snap = snapshot(8, {7 - k: [(1000 + k, f"sglang::scheduler_TP{k}")] for k in range(8)})
    mapping = map_ranks([f"TP{k}" for k in range(8)], snap, 8)
    assert mapping == {f"TP{k}": (7 - k, 1000 + k) for k in range(8)}


def test_dp_attention_titles_with_extra_components() -> None:
    snap = snapshot(4, {g: [(500 + g, f"sglang::scheduler_DP{g}_TP{g}_EP{g}")] for g in range(4)})
    assert map_ranks(["DP2 TP2 EP2", "DP3 TP3"], snap, 4) == {"DP2 TP2 EP2": (2, 502), "DP3 TP3": (3, 503)}


def test_process_on_several_gpus_goes_where_it_holds_most() -> None:
    snap = GpuSnapshot(
        "nvml",
        (
            GpuInfo(0, procs=(GpuProcess(9, 500 * 2**20, "sglang::scheduler_TP1"),)),
            GpuInfo(1, procs=(GpuProcess(9, 60 * GIB, "sglang::scheduler_TP1"),)),
        ),
    )
    assert map_ranks(["TP1"], snap, 2) == {"TP1": (1, 9)}


def test_same_title_twice_is_ambiguous_so_placement_and_no_pid() -> None:
    # Another user's server on the same host runs its own sglang::scheduler_TP0: never guess a PID.
    snap = snapshot(
        8, {0: [(10, "sglang::scheduler_TP0")], 4: [(99, "sglang::scheduler_TP0")], 1: [(11, "sglang::scheduler_TP1")]}
    )
    assert map_ranks(["TP0", "TP1"], snap, 4) == {"TP0": (0, None), "TP1": (1, 11)}


def test_server_pids_tell_our_rank_from_a_same_titled_bystander() -> None:
    snap = snapshot(8, {0: [(10, "sglang::scheduler_TP0"), (99, "sglang::scheduler_TP0")]})
    assert map_ranks(["TP0"], snap, 8, server_pids=(10, 11, 12)) == {"TP0": (0, 10)}
    assert map_ranks(["TP0"], snap, 8, server_pids=()) == {"TP0": (0, None)}  # unknown: ambiguous again


def test_multi_node_global_ranks_fall_back_to_local_gpu() -> None:
    # Node 1 of a TP16 launch on 8-GPU nodes logs TP8…TP15; names unreadable (another PID namespace).
    mapping = map_ranks([f"TP{k}" for k in range(8, 16)], snapshot(8, {3: [(77, "")]}), 16)
    assert mapping["TP11"] == (3, None)
    assert [mapping[f"TP{k}"][0] for k in range(8, 16)] == list(range(8))


def test_multi_node_titles_carry_global_ranks() -> None:
    snap = snapshot(8, {k - 8: [(300 + k, f"sglang::scheduler_TP{k}")] for k in range(8, 16)})
    assert map_ranks(["TP11"], snap, 16) == {"TP11": (3, 311)}


def test_plain_data_parallel_replicas_take_consecutive_gpus() -> None:
    ranks = ["DP0 TP0", "DP0 TP1", "DP1 TP0", "DP1 TP1"]
    assert {r: g for r, (g, _) in map_ranks(ranks, snapshot(4), 2).items()} == {
        "DP0 TP0": 0,
        "DP0 TP1": 1,
        "DP1 TP0": 2,
        "DP1 TP1": 3,
    }


def test_pipeline_ranks_after_tensor_ranks() -> None:
    ranks = ["PP0 TP0", "PP0 TP1", "PP1 TP0", "PP1 TP1"]
    assert [map_ranks(ranks, snapshot(4), 2)[r][0] for r in ranks] == [0, 1, 2, 3]


def test_tp1_title_has_no_suffix() -> None:
    assert map_ranks(["TP0"], snapshot(1, {0: [(5, "sglang::scheduler")]}), 1) == {"TP0": (0, 5)}


def test_no_gpus_no_mapping() -> None:
    assert map_ranks(["TP0", "TP1"], GpuSnapshot("probe", error="no driver"), 2) == {
        "TP0": (None, None),
        "TP1": (None, None),
    }
    assert placement_gpu((("TP", 3),), 8, 0, False) is None


@given(tp=st.integers(1, 64), gpus=st.integers(1, 16), dp=st.integers(0, 3))
def test_any_size_maps_every_rank_onto_a_present_gpu(tp: int, gpus: int, dp: int) -> None:
    names = [f"DP{dp} TP{k}" if dp else f"TP{k}" for k in range(tp)]
    mapping = map_ranks(names, snapshot(gpus), tp)
    assert set(mapping) == set(names)
    assert all(g is not None and 0 <= g < gpus and pid is None for g, pid in mapping.values())
    if tp <= gpus and not dp:
        assert [mapping[n][0] for n in names] == list(range(tp))  # one node: TPk on GPU k
