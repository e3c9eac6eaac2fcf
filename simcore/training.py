"""Training: a step's time from its operators, memory per GPU, and scaling efficiency.

A transformer's step (:func:`transformer_step`) is built from one layer's operators
(:mod:`simcore.transformer`) and the communication of its layout:

* per layer and micro-batch: tensor-parallel allreduces (or, with sequence parallelism, a
  reduce-scatter and an all-gather of the same volume), 2 forward and 2 backward, 2 more when the
  whole forward is recomputed; context parallelism's ring exchange of keys and values (forward once,
  backward keys, values and their gradients), hidden behind the attention it feeds; expert
  parallelism's dispatch and combine all-to-alls (2 forward, 2 backward, 2 more with full
  recomputation);
* per micro-batch and virtual stage: the activation sent to the next pipeline stage and the
  gradient sent back, split over the tensor-parallel ranks (Megatron-LM's scatter/gather);
* per step: the pipeline schedule, 1F1B or interleaved (Narayanan et al. SC21 2.2): ``m`` micro-batches
  at the slowest stage's pace plus a bubble of ``(p - 1) / v`` mean stage times; the optimizer step
  (Adam reads and writes fp32 weights, moments and gradients: :data:`ADAM_BYTES_PER_PARAM`) on the
  rank's share of the weights; the data-parallel gradient reduction left exposed after what
  backward compute hides.

Memory per GPU follows Korthikanti et al. 2022 (arXiv:2205.05198), generalised to grouped-query
attention, gated MLPs and MoE: see :func:`activation_bytes_per_layer`.
"""
from dataclasses import dataclass

import numpy as np

from simcore import collectives
from simcore.transformer import Device, Layout, Model, layer_times_s

MEMORY_TERMS = ("weights", "gradients", "optimizer states", "activations")
# Adam with fp32 master weights: reads weight, gradient, m and v (16 bytes), writes weight, m and v
# (12) and the bf16 copy (2), and the gradient-norm clip reads the gradient once more (4).
ADAM_BYTES_PER_PARAM = 34.0
# Without gradient-accumulation fusion, every micro-batch's weight gradients (bf16/fp16, 2 bytes
# read) are added to the main gradients (read and written at ``grad_bytes`` each) in a separate
# pass (Megatron-LM's main_grad hook; Megatron later fused it into the weight-gradient GEMM).
WGRAD_BYTES = 2.0
# Vocabulary-parallel cross-entropy per logit: the bf16 logits read, an fp32 exponent written and
# read back forward (10 bytes), the fp32 softmax read and the bf16 gradient written backward (6).
CROSS_ENTROPY_BYTES_PER_LOGIT = 16.0
RECOMPUTE = ("none", "selective", "full")


@dataclass(frozen=True)
class TrainingParams:
    """Calibrated training constants.

    dp_overlap_fraction: share of the last micro-batch's backward that bucketed gradient
        reduction can hide behind (gradients become ready layer by layer; the first buckets
        wait). Estimate, 0.8.
    sm_collective_overlap: share of the overlapped time an SM-based collective (NCCL) actually
        hides, its kernels competing with compute for SMs and memory bandwidth. Basis: FF Fig. 8,
        where Torch DDP (VGG16) hides almost nothing and Torch FSDP (GPT2-medium) some; 0.2 (a
        calibration on one system: the FF NCCL series are marked as its calibration points).
    hbm_usable_fraction: share of HBM a framework can allocate (allocator, CUDA context). 0.9.
    """

    dp_overlap_fraction: float = 0.8
    sm_collective_overlap: float = 0.2
    hbm_usable_fraction: float = 0.9


@dataclass(frozen=True)
class Link:
    """A path between ranks as collectives see it: achievable bus bandwidth per GPU one way
    (GB/s) and per-step latency (s)."""

    bw_gbyte_s: np.ndarray
    latency_s: np.ndarray

    def allreduce_s(self, size_bytes, ranks):
        return np.where(ranks > 1, collectives.ring_allreduce_time_s(size_bytes, ranks, self.bw_gbyte_s,
                                                                     self.latency_s), 0.0)

    def ring_s(self, size_bytes, ranks):
        """All-to-all, all-gather or reduce-scatter of ``size_bytes`` per rank in all."""
        return np.where(ranks > 1, collectives.ring_collective_time_s(size_bytes, ranks, self.bw_gbyte_s,
                                                                      self.latency_s), 0.0)

    def send_s(self, size_bytes):
        return self.latency_s + size_bytes / (self.bw_gbyte_s * collectives.GB)


def pick_link(inside_domain, scaleup: Link, network: Link) -> Link:
    """The scale-up link where a group fits inside the scale-up domain, else the network."""
    return Link(np.where(inside_domain, scaleup.bw_gbyte_s, network.bw_gbyte_s),
                np.where(inside_domain, scaleup.latency_s, network.latency_s))


STEP_LABELS = ("forward", "backward", "recomputation", "optimizer", "pipeline bubble", "tensor-parallel traffic",
               "context-parallel traffic", "pipeline traffic", "expert all-to-all", "exposed data-parallel traffic",
               "host data preprocessing")


def _stage(parts: dict, layers_dense, layers_moe):
    """Per-micro-batch forward and backward of a stage's layers (dense and MoE apart)."""
    forward = layers_dense * parts["dense_f"] + layers_moe * parts["moe_layer_f"]
    backward = layers_dense * parts["dense_b"] + layers_moe * parts["moe_layer_b"]
    recompute = layers_dense * parts["recompute_dense"] + layers_moe * parts["recompute_moe"]
    return forward, backward, recompute


def _layer_parts(ops: dict, layout: Layout) -> dict:
    """One layer's forward, backward and recomputed forward per micro-batch, dense and MoE."""
    full, selective = layout.recompute == 2, layout.recompute == 1
    attention_f = ops["attention_gemm_f"] + ops["attention_f"] + ops["memory_f"]
    attention_b = ops["attention_gemm_b"] + ops["attention_b"] + ops["memory_b"]
    dense_f, moe_f = attention_f + ops["mlp_f"], attention_f + ops["moe_f"]
    return {
        "dense_f": dense_f, "dense_b": attention_b + ops["mlp_b"],
        "moe_layer_f": moe_f, "moe_layer_b": attention_b + ops["moe_b"],
        "recompute_dense": np.where(full, dense_f, np.where(selective, ops["attention_f"], 0.0)),
        "recompute_moe": np.where(full, moe_f, np.where(selective, ops["attention_f"], 0.0)),
    }


def _layer_traffic_s(model: Model, layout: Layout, ops: dict, tp_link: Link, cp_link: Link, ep_link: Link) -> dict:
    """One layer's exposed communication per micro-batch: TP's allreduces (or SP's reduce-scatter
    and all-gather), CP's key/value ring beyond what attention hides, EP's dispatch and combine."""
    h, t = model.hidden, layout.tp
    tokens = layout.micro_batch * model.seq / layout.cp
    full = layout.recompute == 2
    activation_bytes = tokens * h * layout.act_bytes
    kv_bytes = tokens * 2 * model.kv_heads_per_rank(t) * model.head_dim * layout.act_bytes
    cp_pass = cp_link.send_s(kv_bytes) * (layout.cp - 1)
    cp_exposed = np.where(layout.cp > 1, np.maximum(cp_pass - ops["attention_f"], 0.0)
                          + np.maximum(2 * cp_pass - ops["attention_b"], 0.0)
                          + np.where(full, np.maximum(cp_pass - ops["attention_f"], 0.0), 0.0), 0.0)
    dispatched = np.where(layout.sp, tokens / t, tokens) * model.top_k * h * layout.act_bytes
    return {"tokens": tokens, "activation_bytes": activation_bytes,
            "tp_s": (4 + 2 * full) * tp_link.allreduce_s(activation_bytes, t), "cp_s": cp_exposed,
            "ep_s": np.where(model.experts > 0, (4 + 2 * full) * ep_link.ring_s(dispatched, layout.ep), 0.0)}


def _stages(model: Model, layout: Layout, device: Device, ops: dict, pp, virtual_stages, pp_link: Link,
            traffic: dict) -> tuple[dict, dict, dict]:
    """The first, a middle and the last pipeline stage per micro-batch. The first holds the embedding
    and the leading (dense) layers of an MoE, the last the output layer and the loss; the layers
    split evenly, a stage holding at most ceil(l / p)."""
    parts = _layer_parts(ops, layout)
    per_stage = np.ceil(model.layers / pp)
    moe_on = model.experts > 0
    dense_total = model.layers - model.moe_layers
    first_dense = np.minimum(dense_total, per_stage)
    rest_dense = np.where(pp > 1, (dense_total - first_dense) / np.maximum(pp - 1, 1), 0.0)
    out_f, out_b = ops["output_f"], ops["output_b"]
    loss = traffic["tokens"] * model.vocab / layout.tp * CROSS_ENTROPY_BYTES_PER_LOGIT / device.hbm_bytes_s
    embedding = traffic["tokens"] * model.hidden * layout.act_bytes * 4 / device.hbm_bytes_s
    pp_send = np.where(pp > 1, 2 * virtual_stages * pp_link.send_s(traffic["activation_bytes"] / layout.tp), 0.0)

    def stage(dense_of_moe_model, extra_f, extra_b):
        dense_layers = np.where(moe_on, dense_of_moe_model, per_stage)
        moe = per_stage - dense_layers
        forward, backward, recompute = _stage(parts, dense_layers, moe)
        comm = {"tensor-parallel traffic": per_stage * traffic["tp_s"],
                "context-parallel traffic": per_stage * traffic["cp_s"],
                "expert all-to-all": moe * traffic["ep_s"], "pipeline traffic": pp_send}
        return {"forward": forward + extra_f, "backward": backward + extra_b, "recomputation": recompute,
                **comm, "_comm": sum(comm.values())}

    single = pp == 1
    first = stage(first_dense, embedding + np.where(single, out_f + loss / 2, 0.0),
                  embedding + np.where(single, out_b + loss / 2, 0.0))
    return first, stage(rest_dense, 0.0, 0.0), stage(rest_dense, out_f + loss / 2, out_b + loss / 2)


def _slowest(stages: tuple[dict, dict, dict], pp):
    """Each stage's time per micro-batch (NaN for a stage the pipeline lacks: a middle one exists
    from p = 3, a last one apart from the first from p = 2), a reader of the slowest stage's
    figures, and the mean stage time."""
    def total(s):
        return s["forward"] + s["backward"] + s["recomputation"] + s["_comm"]

    exists = np.stack(np.broadcast_arrays(True, pp >= 3, pp >= 2), axis=-1)
    stage_s = np.where(exists, np.stack(np.broadcast_arrays(*(total(s) for s in stages)), axis=-1), np.nan)
    slowest = np.argmax(np.where(exists, stage_s, -np.inf), axis=-1)
    first = int(slowest.flat[0])
    if np.ndim(slowest) == 0 or not np.any(slowest != first):  # one stage is the slowest everywhere
        pick = lambda key: np.asarray(stages[first][key])  # noqa: E731
    else:
        pick = lambda key: np.choose(slowest, np.broadcast_arrays(*(s[key] for s in stages)))  # noqa: E731
    mean_stage_s = np.where(pp == 1, stage_s[..., 0], (stage_s[..., 0] + np.nan_to_num(stage_s[..., 2])
                                                       + np.maximum(pp - 2, 0) * np.nan_to_num(stage_s[..., 1]))
                            / np.maximum(pp, 1))
    return stage_s, pick, mean_stage_s


STAGE_PARTS = ("forward", "backward", "recomputation", "tensor-parallel traffic", "context-parallel traffic",
               "expert all-to-all", "pipeline traffic")


def transformer_step(*, model: Model, layout: Layout, device: Device, pp, virtual_stages, micro_batches,
                     tp_link: Link, cp_link: Link, ep_link: Link, pp_link: Link, optimizer_shards,
                     grad_accumulation_fused, grad_bytes) -> dict:
    """Per-step times of a transformer on the slowest pipeline stage, before data parallelism.

    Returns ``parts`` (seconds per step, keyed by :data:`STEP_LABELS`' first nine), ``stage_s``
    (per micro-batch, each stage: first, middle, last; NaN for a stage the pipeline does not have),
    ``backward_s`` (the last micro-batch's backward on that stage: the window for gradient
    reduction) and ``compute_s``.
    """
    ops = layer_times_s(model, layout, device)
    traffic = _layer_traffic_s(model, layout, ops, tp_link, cp_link, ep_link)
    stage_s, pick, mean_stage_s = _slowest(_stages(model, layout, device, ops, pp, virtual_stages, pp_link, traffic),
                                           pp)
    step_parts = {key: micro_batches * pick(key) for key in STAGE_PARTS}
    step_parts["pipeline bubble"] = (pp - 1) / virtual_stages * mean_stage_s
    local_params = optimizer_shards["dense"] + optimizer_shards["experts"]
    accumulate = np.where(grad_accumulation_fused, 0.0, local_params * (WGRAD_BYTES + 2 * grad_bytes)
                          / device.hbm_bytes_s)
    step_parts["backward"] = step_parts["backward"] + micro_batches * accumulate
    updated = (optimizer_shards["dense"] / optimizer_shards["dense_shards"]
               + optimizer_shards["experts"] / optimizer_shards["expert_shards"])
    step_parts["optimizer"] = updated * ADAM_BYTES_PER_PARAM / device.hbm_bytes_s
    return {
        "parts": step_parts,
        "stage_s": stage_s,
        "backward_s": pick("backward") + pick("recomputation") + accumulate,
        "compute_s": sum(step_parts[k] for k in ("forward", "backward", "recomputation")),
    }


def activation_bytes_per_layer(model: Model, layout: Layout, moe_layer) -> np.ndarray:
    """Activations one layer keeps for backward, per micro-batch, on one rank (bytes).

    Korthikanti et al. 2022, per token with 2-byte activations: norms' inputs 2h + 2h, the QKV and
    first-MLP inputs 2h + 2h, two dropout masks h + h (these 10 h are repeated on every TP rank
    unless sequence parallelism splits them), Q and K 2(a + kv) d, V 2 kv d, the projection's input
    2 a d, the MLP's activation input 2 f (x2 gated) and second input 2 f, and without a fused
    attention kernel the scores 5 a s (softmax output, dropout mask and output), all / t (a rank
    keeps at least one key/value head). For MHA
    and f = 4h: s b h (34 + 5 a s / h), the paper's form. Selective recomputation drops the score
    term; full recomputation keeps only the layer's input 2 h (/ t with SP). A MoE layer keeps the
    MLP part for each of its top-k token-expert pairs (x imbalance) and its shared experts.
    """
    tokens = layout.micro_batch * model.seq / layout.cp
    t = layout.tp
    scale = layout.act_bytes / 2
    h, d = model.hidden, model.head_dim
    replicated = np.where(layout.sp, 1 / t, 1.0) * 10 * h
    kv = model.kv_heads_per_rank(t)
    attention = (2 * model.heads / t + 2 * kv) * d + 2 * kv * d + 2 * model.heads * d / t
    scores = np.where(layout.flash | (layout.recompute >= 1), 0.0, 5 * model.heads * model.seq / t)

    def mlp(width):
        return (2 * width * np.where(model.gated, 2.0, 1.0) + 2 * width) / t

    copies = model.top_k * model.imbalance + model.shared_experts
    mlp_terms = np.where(moe_layer, copies * mlp(model.expert_ffn), mlp(model.ffn))
    kept = tokens * scale * (replicated + attention + scores + mlp_terms)
    layer_input = tokens * scale * 2 * h * np.where(layout.sp, 1 / t, 1.0)
    return np.where(layout.recompute == 2, layer_input, kept)


def activation_bytes_first_stage(model: Model, layout: Layout, pp, virtual_stages, micro_batches) -> np.ndarray:
    """Activations the busiest rank holds: the first stage keeps min(p, m) micro-batches in flight of
    its l / p layers under 1F1B, times (1 + (p - 1) / (p v)) when interleaved (Korthikanti 2022,
    section 4.2.3); with full recomputation one layer's activations are rebuilt at a time on top."""
    dense = activation_bytes_per_layer(model, layout, False)
    has_moe = model.experts > 0
    moe = activation_bytes_per_layer(model, layout, True) if np.asarray(has_moe).any() else dense
    per_stage = np.ceil(model.layers / pp)
    dense_layers = np.where(has_moe, np.minimum(model.layers - model.moe_layers, per_stage), per_stage)
    stage = dense_layers * dense + (per_stage - dense_layers) * moe
    in_flight = np.minimum(pp, micro_batches)
    interleave = np.where(virtual_stages > 1, 1 + (pp - 1) / (pp * virtual_stages), 1.0)
    full = layout.recompute == 2
    rebuilt = 0.0
    if np.asarray(full).any():  # one layer's activations rebuilt at a time on top of the kept inputs
        kept = Layout(**{**layout.__dict__, "recompute": np.zeros_like(layout.recompute)})
        rebuilt = np.where(full, activation_bytes_per_layer(model, kept, has_moe), 0.0)
    return stage * in_flight * interleave + rebuilt


def memory_per_gpu_bytes(*, dense_params, expert_params, tp, pp, ep, dp, zero_stage, weight_bytes,
                         grad_bytes, optimizer_bytes_per_param, activation_bytes):
    """Per-GPU HBM footprint by term, stacked along the last axis in ``MEMORY_TERMS`` order.

    Dense weights split over TP x PP, experts over TP x PP x EP; ZeRO stage 1/2/3 shards optimizer
    states / gradients / weights over the copies of each: DP for dense weights, DP / EP for experts.
    """
    dense, experts = dense_params / (tp * pp), expert_params / (tp * pp * ep)
    dense_shards, expert_shards = dp, np.maximum(dp / ep, 1.0)

    def sharded(bytes_per_param, stage):
        return (dense * bytes_per_param / np.where(zero_stage >= stage, dense_shards, 1.0)
                + experts * bytes_per_param / np.where(zero_stage >= stage, expert_shards, 1.0))

    return np.stack(np.broadcast_arrays(sharded(weight_bytes, 3), sharded(grad_bytes, 2),
                                        sharded(optimizer_bytes_per_param, 1), activation_bytes), axis=-1)


def memory_verdict(terms_bytes, hbm_gb, params: TrainingParams = TrainingParams()):
    """(fits, total bytes, index of the dominant term into ``MEMORY_TERMS``)."""
    total = terms_bytes.sum(axis=-1)
    return total <= hbm_gb * 1e9 * params.hbm_usable_fraction, total, np.argmax(terms_bytes, axis=-1)


def exposed_dp_s(dp_comm_s, window_s, on_copy_engines, params: TrainingParams = TrainingParams()):
    """Data-parallel traffic left after what ``window_s`` of compute hides: a copy-engine
    collective (HFReduce) hides behind ``dp_overlap_fraction`` of it, an SM-based one (NCCL) only
    ``sm_collective_overlap`` of that."""
    hideable = params.dp_overlap_fraction * window_s
    hidden = np.where(on_copy_engines, hideable, hideable * params.sm_collective_overlap)
    return np.maximum(dp_comm_s - hidden, 0.0)


def assemble_step(parts: dict, exposed_dp, data_s):
    """Step time, its parts stacked in ``STEP_LABELS`` order and the index of the largest; host
    preprocessing is a floor under the GPU time and binds when it is longer."""
    gpu_s = sum(parts.values()) + exposed_dp
    total = np.maximum(gpu_s, data_s)
    ordered = [parts.get(label, 0.0) for label in STEP_LABELS[:-2]] + [exposed_dp, np.maximum(data_s - gpu_s, 0.0)]
    stacked = np.stack(np.broadcast_arrays(*ordered), axis=-1)
    bound = np.where(data_s > gpu_s, len(STEP_LABELS) - 1, np.argmax(stacked[..., :-1], axis=-1))
    return total, stacked, bound


def weak_scaling_efficiency(step_s, reference_step_s):
    """T(n0) / T(n): same work per GPU."""
    return np.asarray(reference_step_s) / np.asarray(step_s)


def strong_scaling_efficiency(gpus, step_s, reference_gpus, reference_step_s):
    """n0 T(n0) / (n T(n)): same total work."""
    return np.asarray(reference_gpus) * np.asarray(reference_step_s) / (np.asarray(gpus) * np.asarray(step_s))
