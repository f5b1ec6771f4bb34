"""GPU memory of one simulated rank, in GiB, phase by phase (an H200 holding a TP shard of a 70B model)."""

from __future__ import annotations

from dataclasses import dataclass

GIB = 2**30
H200_TOTAL_MIB = 143771
TOTAL_GIB = H200_TOTAL_MIB / 1024
MEM_FRACTION_STATIC = 0.87
CONTEXT_GIB = 1.33  # CUDA context, created when the rank picks its device
NCCL_GIB = 1.02  # communicators and buffers after distributed init
MODEL_WEIGHTS_GIB = 132.5  # Llama-3.3-70B in bf16, all ranks together
DRAFT_WEIGHTS_GIB = 4.8
KV_BYTES_PER_TOKEN = 327680  # 80 layers x K,V x 8 KV heads x 128 x 2 bytes, all ranks together
GRAPH_GIB = {
    "target_prefill": 0.92,
    "target_verify": 1.68,
    "target_decode": 1.35,
    "draft_decode": 0.43,
    "draft_extend": 0.31,
}


@dataclass(frozen=True)
class RankMemory:
    """The sizes one rank allocates; rank 0 carries a little extra (the bar, the tokenizer-side buffers)."""

    tp: int
    speculative: bool
    rank: int = 0

    @property
    def context(self) -> float:
        return CONTEXT_GIB + (0.03 if self.rank == 0 else 0.0)

    @property
    def weights(self) -> float:
        return min(MODEL_WEIGHTS_GIB / self.tp, 100.0)

    @property
    def draft_weights(self) -> float:
        return min(DRAFT_WEIGHTS_GIB / self.tp, 2.0) if self.speculative else 0.0

    @property
    def kv_total(self) -> float:
        """What is left for KV after weights, keeping (1 - mem_fraction_static) of the GPU free."""
        used = self.context + NCCL_GIB + self.weights + self.draft_weights
        return max(TOTAL_GIB - used - TOTAL_GIB * (1 - MEM_FRACTION_STATIC), 1.0)

    @property
    def kv_target(self) -> float:
        return self.kv_total * (0.988 if self.speculative else 1.0)

    @property
    def kv_draft(self) -> float:
        return self.kv_total - self.kv_target

    @property
    def tokens(self) -> int:
        per_rank = KV_BYTES_PER_TOKEN / self.tp
        return int(self.kv_target * GIB / per_rank) // 64 * 64


def avail(used_gib: float) -> float:
    """What torch.cuda.mem_get_info reports free, as SGLang prints it (`avail mem=`)."""
    return TOTAL_GIB - used_gib
