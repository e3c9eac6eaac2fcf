"""Tensor-parallel communication overlapped with the GEMMs it feeds, as Transformer Engine's
userbuffers run it (``tp_comm_overlap`` with sequence parallelism).

With sequence parallelism a transformer layer's tensor-parallel traffic is ten all-gathers and
reduce-scatters of the layer's activation (``b s h`` elements), each at one GEMM (a *site*):

* forward: the input gathered for the QKV and first MLP GEMMs (``qkv_fprop``, ``fc1_fprop``), the
  projection's and second MLP GEMM's outputs reduce-scattered (``proj_fprop``, ``fc2_fprop``);
* backward: the output gradient gathered for the projection's and second MLP GEMM's activation
  gradients (``proj_dgrad``, ``fc2_dgrad``), the input gathered again for the QKV and first MLP
  weight gradients during their activation gradients (``qkv_dgrad``, ``fc1_dgrad``: Megatron keeps
  only its sequence shard), and those activation gradients reduce-scattered during the weight
  gradients (``qkv_wgrad``, ``fc1_wgrad``).

Each site overlaps in one of three ways (TransformerEngine ``comm_gemm_overlap``):

* **ring exchange**: the GEMM runs as TP chunks, one per rank's shard, each chunk's exchange with
  the neighbour hidden behind the previous chunk's GEMM (peer-to-peer copies on the copy engines);
* **pipelined**: the GEMM runs as ``num_splits`` chunks, each chunk's reduce-scatter behind the
  next chunk's GEMM, the communication kernel holding ``num_sm`` SMs; with ``set_sm_margin`` the
  GEMM is launched on the rest;
* **bulk**: the collective runs whole beside an independent GEMM of the same backward, its kernel
  holding ``num_sm`` SMs, which the GEMM loses while the collective runs.

The defaults are the published Megatron-Bridge configurations (``comm_overlap.py``) for the
model's hidden size, TP and precision on the GPU family they were tuned for; other shapes take
Transformer Engine's defaults. A workload's ``tp_overlap_sms`` replaces every site's ``num_sm``.
"""
from dataclasses import dataclass

import numpy as np

from simcore.arrays import where

RING, PIPELINE = 0.0, 1.0
SPLITS = 4.0  # a pipelined overlap's GEMM chunks: every published configuration's and Transformer Engine's default


@dataclass(frozen=True)
class Userbuffers:
    """A layer's overlap, arrays over scenario points: whether it is on, and for the sites that vary
    between configurations, the projection's and second MLP GEMM's reduce-scatter (``*_method``
    ring exchange or pipelined over :data:`SPLITS`, the SMs its kernel holds) and the
    SMs each bulk collective holds. The gathers before QKV and the first MLP GEMM (forward) and
    before the projection's and second MLP GEMM's activation gradients are ring exchanges in every
    published configuration."""

    on: np.ndarray
    proj_method: np.ndarray
    proj_sms: np.ndarray
    fc2_method: np.ndarray
    fc2_sms: np.ndarray
    qkv_dgrad_sms: np.ndarray
    fc1_dgrad_sms: np.ndarray
    qkv_wgrad_sms: np.ndarray
    fc1_wgrad_sms: np.ndarray

    def reduce_scatter(self, site: str, tp) -> tuple:
        """(GEMM chunks, SMs held from the GEMM) of the ``proj`` or ``fc2`` forward: a ring exchange
        runs TP chunks with its 1-SM margin, a pipelined overlap its splits on the SMs left."""
        method, sms = getattr(self, f"{site}_method"), getattr(self, f"{site}_sms")
        chunks = where(method == RING, tp, SPLITS)
        return where(self.on, chunks, 1.0), where(self.on, sms, 0.0)


# Megatron-Bridge src/megatron/bridge/training/comm_overlap.py (commit 067f987d; the same objects as
# NeMo's tp_overlap_configs/userbuffers.py), by (family, FP8 GEMMs, hidden size, TP): the projection's
# and second MLP GEMM's forward reduce-scatter (an SM count: pipelined over 4 splits with
# set_sm_margin; "ring": a ring exchange with num_sm 1 and set_sm_margin), then the SMs of the bulk
# overlaps qkv_dgrad, fc1_dgrad, qkv_wgrad and fc1_wgrad (set_sm_margin off in every one).
PUBLISHED = {
    ("hopper", False, 8192, 4): (24, 16, 4, 2, 24, 4),  # userbuffers_bf16_h100_h8192_tp4_mbs1_seqlen8192
    ("hopper", True, 8192, 4): ("ring", "ring", 4, 2, 24, 4),  # userbuffers_fp8_h100_h8192_tp4_mbs1_seqlen8192
    ("hopper", False, 16384, 8): (24, 8, 2, 2, 24, 2),  # userbuffers_bf16_h100_h16384_tp8_cp2_mbs1_seqlen8192
    ("hopper", True, 16384, 8): ("ring", "ring", 2, 2, 24, 2),  # userbuffers_fp8_h100_h16384_tp8_cp2_...
    ("hopper", False, 6144, 2): (16, 24, 8, 4, 16, 16),  # userbuffers_bf16_h100_h6144_tp2_mbs2_seqlen2048
    ("hopper", True, 6144, 2): (16, 24, 8, 4, 16, 16),  # userbuffers_fp8_h100_h6144_tp2_mbs2_seqlen2048
    ("hopper", False, 12288, 4): (24, "ring", 4, 2, 4, 4),  # userbuffers_bf16_h100_h12288_tp4_mbs1_seqlen2048
    ("hopper", True, 12288, 4): ("ring", "ring", 4, 2, 4, 4),  # userbuffers_fp8_h100_h12288_tp4_mbs1_seqlen2048
    ("blackwell", False, 8192, 2): (32, 16, 16, 2, 24, 4),  # userbuffers_bf16_b200_h8192_tp2_mbs1_seqlen8192
    ("blackwell", True, 8192, 2): ("ring", "ring", 4, 2, 24, 4),  # userbuffers_fp8_b200_h8192_tp2_...
    ("blackwell", False, 16384, 4): (32, 8, 8, 2, 24, 2),  # userbuffers_bf16_b200_h16384_tp4_cp2_...
    ("blackwell", True, 16384, 4): ("ring", "ring", 8, 2, 32, 8),  # userbuffers_fp8_b200_h16384_tp4_cp2_...
    ("blackwell", False, 12288, 4): ("ring", "ring", 4, 2, 16, 8),  # userbuffers_bf16_b200_h12288_tp4_...
    ("blackwell", True, 12288, 4): ("ring", "ring", 4, 2, 16, 8),  # userbuffers_fp8_b200_h12288_tp4_...
    ("blackwell", False, 6144, 2): ("ring", "ring", 8, 2, 32, 8),  # userbuffers_bf16_b200_h6144_tp2_...
    ("blackwell", False, 18432, 8): ("ring", 24, 8, 2, 32, 8),  # userbuffers_bf16_b200_h18432_tp8_...
    ("blackwell", True, 18432, 8): ("ring", "ring", 8, 2, 32, 8),  # userbuffers_fp8_b200_h18432_tp8_...
}
# Transformer Engine's defaults where no published configuration matches (pytorch/module/base.py,
# get_default_config): pipelined reduce-scatters of 16 SMs over 4 splits with set_sm_margin, bulk
# collectives of 16 SMs (TE also sets set_sm_margin on them, which is not modelled: they share).
DEFAULT = (16, 16, 16, 16, 16, 16)


def userbuffers(on, family_key: str, fp8: bool, hidden, tp, sms_override) -> Userbuffers:
    """The overlap a layer runs: the published configuration for its family, precision, hidden size
    and TP, else Transformer Engine's defaults; ``sms_override`` (NaN: none) replaces every SM
    count but the ring exchanges' one."""
    def number(value):
        """A configuration's SM count, NaN for a ring-exchange reduce-scatter."""
        return np.nan if value == "ring" else float(value)

    values = [np.asarray(number(v)) for v in DEFAULT]
    for (family, is_fp8, size, degree), config in PUBLISHED.items():
        if family == family_key and is_fp8 == fp8:
            match = (hidden == size) & (tp == degree)
            values = [where(match, number(v), old) for v, old in zip(config, values)]
    override = np.asarray(sms_override, float)

    def sms(value):
        return where(np.isnan(override), value, override)

    def method_and_sms(value):
        return where(np.isnan(value), RING, PIPELINE), where(np.isnan(value), 1.0, sms(value))

    (proj_method, proj_sms), (fc2_method, fc2_sms) = method_and_sms(values[0]), method_and_sms(values[1])
    return Userbuffers(on=np.asarray(on), proj_method=proj_method, proj_sms=proj_sms, fc2_method=fc2_method,
                       fc2_sms=fc2_sms, qkv_dgrad_sms=sms(values[2]), fc1_dgrad_sms=sms(values[3]),
                       qkv_wgrad_sms=sms(values[4]), fc1_wgrad_sms=sms(values[5]))


def ring_gather_exposed_s(comm_s, gemm_s, tp):
    """A ring-exchange all-gather beside its GEMM's TP chunks: each of the t - 1 exchanges hides
    behind one chunk's GEMM (the first chunk is the rank's own), so what shows is
    (t - 1) max(0, c / (t - 1) - g / t)."""
    steps = np.maximum(tp - 1, 1.0)
    return steps * np.maximum(comm_s / steps - gemm_s / np.maximum(tp, 1.0), 0.0)


def reduce_scatter_exposed_s(comm_s, gemm_s, chunks, method, final_reduce_s):
    """A GEMM's output reduce-scattered chunk by chunk behind the next chunk's GEMM: the last
    chunk's share shows, and any chunk's that outlasts its GEMM chunk; a ring exchange also ends
    with a reduction of the received chunks that nothing hides (``final_reduce_s``)."""
    per_chunk = comm_s / chunks
    hidden_behind = np.maximum(chunks - 1, 0.0) * np.maximum(per_chunk - gemm_s / chunks, 0.0)
    return per_chunk + hidden_behind + where(method == RING, final_reduce_s, 0.0)


def bulk_s(comm_s, gemm_s, sm_share):
    """(exposed time, SM cost) of a bulk collective beside an independent GEMM: what outlasts the
    GEMM shows, and the GEMM loses ``sm_share`` of its SMs while the collective runs."""
    return np.maximum(comm_s - gemm_s, 0.0), sm_share * np.minimum(comm_s, gemm_s)
