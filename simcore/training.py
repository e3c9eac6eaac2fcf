"""Training: FLOPs, parameters, HBM footprint and step time under DP/FSDP/TP/PP/EP.

FLOPs (Megatron-LM, Narayanan et al. SC21, appendix): per token a transformer costs
6 P + 12 l h s model FLOPs (weights and attention scores, forward + backward), and with full
activation recomputation 8 P + 16 l h s hardware FLOPs. MoE counts activated parameters only. A
CNN is described by its forward FLOPs per sample (training = 3x).

Memory per GPU: weights, gradients and Adam states (12 bytes per parameter: fp32 master copy, m
and v) split by TP x PP (and EP for experts), with ZeRO stage 1/2/3 sharding optimizer /
gradients / weights over DP; activations per Korthikanti et al. (2022): s b h (34 + 5 a s / h)
bytes per layer, divided by TP with sequence parallelism, and 2 s b h per layer with full
recomputation; the first pipeline stage holds PP micro-batches, so l layers' worth in all.

Step time: compute at the achieved GEMM rate x the workload's compute efficiency, plus the
pipeline bubble (p - 1)/(v m) (SC21 2.2), plus tensor-parallel and expert all-to-all traffic on
the critical path, plus the part of the data-parallel traffic that backward compute cannot hide.
A copy-engine allreduce (HFReduce) hides behind compute without taking SMs; an SM-based one
(NCCL) hides only ``sm_collective_overlap`` of its overlapped time.
"""
from dataclasses import dataclass

import numpy as np


MEMORY_TERMS = ("weights", "gradients", "optimizer states", "activations")


@dataclass(frozen=True)
class TrainingParams:
    """Calibrated training constants.

    backward_share: backward / (forward + backward) compute, 2/3 (backward = 2 x forward).
    dp_overlap_fraction: share of backward time that gradient communication can hide behind
        (gradients become ready layer by layer; the first buckets wait). Estimate, 0.8.
    sm_collective_overlap: share of the overlapped time an SM-based collective (NCCL) actually
        hides, its kernels competing with compute for SMs and memory bandwidth. Basis: FF Fig. 8,
        where Torch DDP (VGG16) hides almost nothing and Torch FSDP (GPT2-medium) some; 0.2 puts
        both series within 15% (a calibration on one system, checked against all nine points).
    hbm_usable_fraction: share of HBM a framework can allocate (allocator, CUDA context). 0.9.
    startup_base_s, startup_s_per_rank: job start-up (rendezvous, communicator set-up). Basis:
        Ascend 10k-card talk, 20-30 minutes for 10k ranks: 60 s + 0.15 s per rank.
    """

    backward_share: float = 2 / 3
    dp_overlap_fraction: float = 0.8
    sm_collective_overlap: float = 0.2
    hbm_usable_fraction: float = 0.9
    startup_base_s: float = 60.0
    startup_s_per_rank: float = 0.15


def transformer_params(layers, hidden, seq_len, vocab):
    """Dense decoder parameters: 12 l h^2 (1 + 13/(12 h) + (V + s)/(12 l h)) (SC21)."""
    l, h = np.asarray(layers, float), np.asarray(hidden, float)
    return 12 * l * h**2 * (1 + 13 / (12 * h) + (np.asarray(vocab) + np.asarray(seq_len)) / (12 * l * h))


def transformer_flops_per_token(active_params, layers, hidden, seq_len, recompute=False):
    """Model FLOPs per token, and hardware FLOPs when activations are recomputed."""
    attention = 12 * np.asarray(layers) * np.asarray(hidden) * np.asarray(seq_len)
    model = 6 * np.asarray(active_params) + attention
    hardware = np.where(recompute, 8 * np.asarray(active_params) + attention * 4 / 3, model)
    return model, hardware


def memory_per_gpu_bytes(*, dense_params, expert_params, tp, pp, ep, dp, zero_stage, weight_bytes,
                         grad_bytes, optimizer_bytes_per_param, activation_bytes):
    """Per-GPU HBM footprint by term, stacked along the last axis in ``MEMORY_TERMS`` order."""
    local = dense_params / (tp * pp) + expert_params / (tp * pp * ep)
    weights = local * weight_bytes / np.where(zero_stage >= 3, dp, 1)
    grads = local * grad_bytes / np.where(zero_stage >= 2, dp, 1)
    optimizer = local * optimizer_bytes_per_param / np.where(zero_stage >= 1, dp, 1)
    return np.stack(np.broadcast_arrays(weights, grads, optimizer, activation_bytes), axis=-1)


def transformer_activation_bytes(layers, hidden, heads, seq_len, micro_batch, tp, recompute, flash_attention=True):
    """Activations held by the busiest GPU (first pipeline stage, 1F1B): l layers' worth.

    FlashAttention (Dao et al. 2022) never stores the a x s x s score matrices, dropping 5 a s / h.
    """
    s, b, h = np.asarray(seq_len, float), np.asarray(micro_batch, float), np.asarray(hidden, float)
    scores = np.where(flash_attention, 0.0, 5 * np.asarray(heads) * s / h)
    full = s * b * h * (34 + scores) / tp
    return np.asarray(layers) * np.where(recompute, 2 * s * b * h, full)


def memory_verdict(terms_bytes, hbm_gb, params: TrainingParams = TrainingParams()):
    """(fits, total bytes, index of the dominant term into ``MEMORY_TERMS``)."""
    total = terms_bytes.sum(axis=-1)
    return total <= hbm_gb * 1e9 * params.hbm_usable_fraction, total, np.argmax(terms_bytes, axis=-1)


STEP_LABELS = ("compute", "pipeline bubble", "tensor-parallel traffic", "expert all-to-all",
               "exposed data-parallel traffic", "host data preprocessing")


def step_time_s(*, compute_s, pp, virtual_stages, micro_batches, tp_comm_s, ep_comm_s, dp_comm_s,
                dp_overlap_window_s, dp_on_copy_engines, data_s, params: TrainingParams = TrainingParams()):
    """Step time, its parts (stacked in ``STEP_LABELS`` order) and the index of the largest part;
    host preprocessing is a floor under the GPU time and binds when it is longer.

    ``dp_overlap_window_s`` is the compute that data-parallel traffic may run under: backward for
    DDP-style gradient allreduce, the whole step for FSDP.
    """
    bubble = compute_s * (pp - 1) / (virtual_stages * micro_batches)
    hideable = params.dp_overlap_fraction * dp_overlap_window_s
    hidden = np.where(dp_on_copy_engines, hideable, hideable * params.sm_collective_overlap)
    exposed_dp = np.maximum(dp_comm_s - hidden, 0.0)
    gpu_s = compute_s + bubble + tp_comm_s + ep_comm_s + exposed_dp
    total = np.maximum(gpu_s, data_s)
    parts = np.stack(np.broadcast_arrays(compute_s, bubble, tp_comm_s, ep_comm_s, exposed_dp,
                                         np.maximum(data_s - gpu_s, 0.0)), axis=-1)
    bound = np.where(data_s > gpu_s, len(STEP_LABELS) - 1, np.argmax(parts[..., :-1], axis=-1))
    return total, parts, bound


def startup_time_s(ranks, params: TrainingParams = TrainingParams()):
    return params.startup_base_s + params.startup_s_per_rank * np.asarray(ranks)


def weak_scaling_efficiency(step_s, reference_step_s):
    """T(n0) / T(n): same work per GPU."""
    return np.asarray(reference_step_s) / np.asarray(step_s)


def strong_scaling_efficiency(gpus, step_s, reference_gpus, reference_step_s):
    """n0 T(n0) / (n T(n)): same total work."""
    return np.asarray(reference_gpus) * np.asarray(reference_step_s) / (np.asarray(gpus) * np.asarray(step_s))


