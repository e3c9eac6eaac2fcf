"""Layer-level transformer timing: the operators of one layer and one micro-batch, from device facts.

Every function takes arrays that broadcast over scenario points. The layers of a pipeline stage
are identical, so one layer is timed and multiplied out; loops here run over the few operators or
GEMM tile shapes, never over scenarios or layers.

Shapes follow Megatron-LM's splits (Narayanan et al., SC21; Korthikanti et al. 2022): a micro-batch
of ``b`` sequences of ``s`` tokens is split over context parallelism (``s / cp`` tokens per rank);
tensor parallelism splits heads and MLP columns (``a / t`` heads, ``f / t`` columns); with sequence
parallelism the norms, dropouts and residuals run on ``b s / (cp t)`` tokens instead of being
repeated on every tensor-parallel rank. Expert parallelism spreads ``E`` routed experts over ``ep``
ranks; each rank computes ``b s / cp x top_k`` token-expert pairs on average, times the
load-imbalance factor for the busiest rank.

Model conventions (documented in docs/engine.md): a gated MLP (three matrices, SwiGLU) is
Llama-style (RMSNorm, rotary positions, no learned position table); an ungated one is GPT-style
(two LayerNorms, a GeLU MLP, a learned position table). Both count the SC21 13 h biases and norm
weights per layer so that GPT-3's parameter count matches the paper.
"""
from dataclasses import dataclass

import numpy as np

# GEMM tiles a cuBLAS/CUTLASS kernel choice ranges over (rows x columns of the output per CTA).
# The largest fills one SM's tensor cores and registers; smaller tiles fit several CTAs per SM.
GEMM_TILES = ((256, 128), (128, 256), (128, 128), (128, 64), (64, 128), (64, 64))
LARGEST_TILE_ELEMENTS = 256 * 128
# A tile of at least 128 x 128 keeps the tensor cores fed from shared memory: its arithmetic
# intensity Tm Tn / (Tm + Tn) is 64 elements per loaded element; smaller tiles reach the large-GEMM
# rate scaled by their intensity against that (NVIDIA, "Matrix Multiplication Background" user guide,
# tile quantization and tile size trade-offs).
FULL_RATE_TILE_INTENSITY = 128 * 128 / (128 + 128)
TILE_M = np.array([tile[0] for tile in GEMM_TILES], float)
TILE_N = np.array([tile[1] for tile in GEMM_TILES], float)
CTAS_PER_SM = LARGEST_TILE_ELEMENTS // (TILE_M * TILE_N)
TILE_INTENSITY = np.minimum(1.0, TILE_M * TILE_N / (TILE_M + TILE_N) / FULL_RATE_TILE_INTENSITY)


def gemm_efficiency(m, n, sm_count, gemm_fraction, batch=1.0):
    """Achieved / peak for a (batched) GEMM C[m, n] = A[m, k] B[k, n], before the memory roofline.

    For each candidate tile: tile quantisation (the padded share of the last row and column of
    tiles), wave quantisation (CTAs over ``sm_count`` x CTAs-per-SM slots: a partly filled last
    wave idles the rest), and the tile's arithmetic intensity; the kernel picked is the best one,
    as cuBLAS's heuristics aim to. ``gemm_fraction`` is the family's large-GEMM share of peak; the
    inner dimension enters through the roofline (:func:`gemm_time_s`). The tiles are a trailing
    axis, so one call covers every tile of every scenario point.
    """
    m, n = np.asarray(m, float)[..., None], np.asarray(n, float)[..., None]
    sm, batch = np.asarray(sm_count, float)[..., None], np.asarray(batch, float)[..., None]
    rows, cols = np.maximum(np.ceil(m / TILE_M), 1), np.maximum(np.ceil(n / TILE_N), 1)
    ctas = rows * cols * batch
    slots = sm * CTAS_PER_SM
    waves = np.maximum(np.ceil(ctas / slots), 1)
    use = m * n / (rows * TILE_M * cols * TILE_N) * ctas / (waves * slots) * TILE_INTENSITY
    best = use.max(axis=-1)
    return gemm_fraction * best


@dataclass(frozen=True)
class Device:
    """One accelerator as the operators see it (arrays broadcasting over scenarios).

    peak_flops: dense peak of the weight GEMMs' precision at full clock x the sustained clock factor;
    attention_peak_flops: the same for attention (bf16 when the weight GEMMs run in FP8, else as
        peak_flops), with ``attention_gemm_fraction`` the large-GEMM share at that precision;
    gemm_operand_bytes: bytes per GEMM operand element (4 TF32, 1 FP8, else 2);
    hbm_bytes_s: peak HBM bandwidth x the family's achievable share.
    """

    peak_flops: np.ndarray
    attention_peak_flops: np.ndarray
    sm_count: np.ndarray
    gemm_fraction: np.ndarray
    attention_gemm_fraction: np.ndarray
    attention_fraction: np.ndarray
    gemm_operand_bytes: np.ndarray
    hbm_bytes_s: np.ndarray


def gemm_time_s(m, n, k, device: Device, batch=1.0, attention=False):
    """Roofline time of a GEMM: max(FLOPs / achieved rate, bytes moved / HBM rate); ``attention``
    for the unfused attention core's batched GEMMs (at the attention precision)."""
    peak = device.attention_peak_flops if attention else device.peak_flops
    fraction = device.attention_gemm_fraction if attention else device.gemm_fraction
    operand_bytes = np.where(attention, np.maximum(device.gemm_operand_bytes, 2.0), device.gemm_operand_bytes)
    flops = 2 * m * n * k * batch
    efficiency = gemm_efficiency(m, n, device.sm_count, fraction, batch)
    moved = operand_bytes * (m * k + k * n + m * n) * batch
    compute_s = np.divide(flops, peak * efficiency, out=np.zeros(np.broadcast_shapes(np.shape(flops),
                                                                                     np.shape(efficiency),
                                                                                  np.shape(peak))),
                          where=flops > 0)
    return np.maximum(compute_s, moved / device.hbm_bytes_s)


def gemm_passes(shapes, device: Device, attention=False):
    """(forward, backward) times of several weight GEMMs in one vectorized call.

    ``shapes``: (m, n, k, batch) per GEMM. Forward is C[m, n] = A[m, k] B[k, n]; backward is the
    activation gradient dX[m, k] = dY[m, n] W^T and the weight gradient dW[k, n] = X^T dY, each with
    its own shape. The GEMMs are stacked on a trailing axis, so the cost does not grow with their
    number."""
    lead = np.broadcast_shapes(*(np.shape(v) for shape in shapes for v in shape))
    columns = [np.broadcast_to(np.asarray(v, float), lead) for shape in shapes for v in shape]
    m, n, k, batch = (np.stack(columns[i::4], axis=-1) for i in range(4))
    rows = np.concatenate([m, m, k], axis=-1)
    cols = np.concatenate([n, k, n], axis=-1)
    inner = np.concatenate([k, n, m], axis=-1)
    expanded = Device(**{name: np.asarray(value)[..., None] for name, value in device.__dict__.items()})
    times = gemm_time_s(rows, cols, inner, expanded, batch=np.concatenate([batch] * 3, axis=-1), attention=attention)
    count = len(shapes)
    forward, activation_grad, weight_grad = times[..., :count], times[..., count:2 * count], times[..., 2 * count:]
    return [(forward[..., i], activation_grad[..., i] + weight_grad[..., i]) for i in range(count)]


@dataclass(frozen=True)
class Model:
    """A decoder-only transformer (arrays). ``experts`` = 0 for a dense model."""

    layers: np.ndarray
    hidden: np.ndarray
    heads: np.ndarray
    kv_heads: np.ndarray
    head_dim: np.ndarray
    ffn: np.ndarray
    gated: np.ndarray
    vocab: np.ndarray
    tied: np.ndarray
    seq: np.ndarray
    causal: np.ndarray
    experts: np.ndarray
    top_k: np.ndarray
    expert_ffn: np.ndarray
    shared_experts: np.ndarray
    dense_layers: np.ndarray
    imbalance: np.ndarray

    @property
    def moe_layers(self):
        return np.where(self.experts > 0, self.layers - self.dense_layers, 0.0)

    @property
    def mlp_matrices(self):
        return np.where(self.gated, 3.0, 2.0)

    def kv_heads_per_rank(self, tp):
        """Key/value heads a TP rank holds: kv / t, or one replicated head when kv < t (Megatron-LM)."""
        return np.maximum(self.kv_heads / tp, 1.0)


def parameter_counts(model: Model) -> dict:
    """Parameters by part. Per layer: attention h (a + 2 kv) d + a d h, MLP (2 or 3) h f, plus the
    SC21 biases and norms 13 h; embeddings V h (twice untied) and, GPT-style, a position table s h;
    MoE layers hold E routed and S shared experts of width f_e and a router h E.
    Totals: ``total``, ``active`` (per token), ``experts`` (routed, all layers), ``embedding``.
    """
    h, mats = model.hidden, model.mlp_matrices
    attention = h * (model.heads + 2 * model.kv_heads) * model.head_dim + model.heads * model.head_dim * h
    norms_biases = 13 * h
    dense_mlp = mats * h * model.ffn
    expert = mats * h * model.expert_ffn
    moe_mlp = model.experts * expert + model.shared_experts * expert + h * model.experts
    dense_layers = model.layers - model.moe_layers
    embedding = model.vocab * h * np.where(model.tied, 1.0, 2.0) + np.where(model.gated, 0.0, model.seq * h)
    routed = model.moe_layers * model.experts * expert
    total = (embedding + model.layers * (attention + norms_biases) + dense_layers * dense_mlp
             + model.moe_layers * moe_mlp)
    active = total - model.moe_layers * (model.experts - model.top_k) * expert
    return {"total": total, "active": active, "experts": routed, "embedding": embedding}


def model_flops_per_token(model: Model) -> np.ndarray:
    """Model FLOPs per token, forward and backward (3 x the forward's): 2 FLOPs per weight of every
    GEMM a token passes through, the attention scores and values 4 s a d per layer (counted whole,
    the Megatron-LM and PaLM convention, causal or not), and the output layer 2 h V."""
    h = model.hidden
    attention_gemms = 2 * (h * (model.heads + 2 * model.kv_heads) * model.head_dim + model.heads * model.head_dim * h)
    dense_mlp = 2 * model.mlp_matrices * h * model.ffn
    moe_mlp = (2 * model.mlp_matrices * h * model.expert_ffn * (model.top_k + model.shared_experts)
               + 2 * h * model.experts)
    scores = 4 * model.seq * model.heads * model.head_dim
    per_layer = attention_gemms + scores
    forward = (model.layers * per_layer + (model.layers - model.moe_layers) * dense_mlp
               + model.moe_layers * moe_mlp + 2 * h * model.vocab)
    return 3 * forward


def recompute_flops_per_token(model: Model, recompute, model_flops=None) -> np.ndarray:
    """Extra forward FLOPs per token that recomputation adds: full, every layer's forward; selective,
    the attention core (Korthikanti et al. 2022). ``recompute``: 0 none, 1 selective, 2 full;
    ``model_flops``: :func:`model_flops_per_token` when the caller has it."""
    model_flops = model_flops_per_token(model) if model_flops is None else model_flops
    layer_forward = model_flops / 3 - 2 * model.hidden * model.vocab
    scores = model.layers * 4 * model.seq * model.heads * model.head_dim
    return np.select([recompute == 2, recompute == 1], [layer_forward, scores], 0.0)


@dataclass(frozen=True)
class Layout:
    tp: np.ndarray
    sp: np.ndarray
    cp: np.ndarray
    ep: np.ndarray
    micro_batch: np.ndarray
    recompute: np.ndarray  # 0 none, 1 selective, 2 full
    flash: np.ndarray
    fused: np.ndarray  # fused element-wise kernels (Megatron-LM) or one pass per operation
    act_bytes: np.ndarray  # bytes per activation element: 2 (bf16/fp16, fp8 GEMMs too) or 4 (tf32)


def _tokens(model: Model, layout: Layout):
    """(tokens a rank's GEMMs see, tokens its norms and dropouts see) in one micro-batch."""
    tokens = layout.micro_batch * model.seq / layout.cp
    return tokens, np.where(layout.sp, tokens / layout.tp, tokens)


def attention_times_s(model: Model, layout: Layout, device: Device):
    """(forward, backward) time of the attention core of one layer on one rank.

    FlashAttention (Dao 2022/2023): 4 b (s/cp) s a d / t FLOPs forward, halved by a causal mask; the
    backward pass recomputes the scores, 2.5 x the forward's FLOPs; both at the family's fused
    attention share of the attention precision's peak. Unfused (Megatron-LM 2021): batched GEMMs
    Q K^T and P V per head, and the score matrices through HBM, in elements moved per score (the
    1-byte dropout mask counts half): fused scale-mask-softmax and dropout 4.5 forward and 5.5
    backward; one pass per operation (scale, mask, softmax, dropout) 9 and 9.5.
    """
    tokens, _ = _tokens(model, layout)
    heads = model.heads / layout.tp
    d = model.head_dim
    causal = np.where(model.causal, 0.5, 1.0)
    flash_forward_flops = 4 * tokens * model.seq * heads * d * causal
    rate = device.attention_peak_flops * device.attention_fraction
    flash_f, flash_b = flash_forward_flops / rate, 2.5 * flash_forward_flops / rate
    if np.asarray(layout.flash).all():
        return flash_f, flash_b
    batch = layout.micro_batch * heads
    rows = model.seq / layout.cp
    (qk_f, qk_b), (pv_f, pv_b) = gemm_passes([(rows, model.seq, d, batch), (rows, d, model.seq, batch)], device,
                                             attention=True)
    scores = batch * rows * model.seq * layout.act_bytes / device.hbm_bytes_s
    unfused_f = qk_f + pv_f + scores * np.where(layout.fused, 4.5, 9.0)
    unfused_b = qk_b + pv_b + scores * np.where(layout.fused, 5.5, 9.5)
    return np.where(layout.flash, flash_f, unfused_f), np.where(layout.flash, flash_b, unfused_b)


def elementwise_elements(model: Model, layout: Layout):
    """Element-wise HBM traffic per token of one layer, in elements moved (read + written):
    (norms/dropout/residual forward and backward per h, the MLP activation's forward and backward
    per column, and a bias's forward and backward per column of the QKV output).

    Fused (Megatron-LM's kernels): two norms (forward reads and writes h, backward reads two and
    writes one), two bias-dropout-residual steps (reads two, writes one and a 1-byte mask; backward
    reads the gradient and the mask and writes one), and bias-GeLU (one in, one out; backward two
    in, one out) or SwiGLU (two in, one out; backward three in, two out) on the rank's columns.
    Unfused (one kernel per operation, plain PyTorch): every bias add, dropout and residual add is
    its own pass, and SwiGLU's SiLU and product are two. Gated (Llama-style) layers have no biases.
    """
    biases = np.where(model.gated, 0.0, 1.0)
    fused = layout.fused
    norms_f, norms_b = 2 * 2.0, 2 * 3.0
    memory_f = norms_f + np.where(fused, 2 * 3.5, 2 * (2.0 * biases + 2.5 + 3.0))
    memory_b = norms_b + np.where(fused, 2 * 2.5, 2 * (1.0 * biases + 2.5))
    act_f = np.where(model.gated, np.where(fused, 3.0, 5.0), 2.0 + np.where(fused, 0.0, 2.0 * biases))
    act_b = np.where(model.gated, np.where(fused, 5.0, 8.0), 3.0 + np.where(fused, 0.0, biases))
    split_f = np.where(fused, 0.0, 2.0 * biases)
    split_b = np.where(fused, 0.0, biases)
    return memory_f, memory_b, act_f, act_b, split_f, split_b


def moe_mlp_times_s(model: Model, layout: Layout, device: Device, tokens, per_element, act_f, act_b):
    """(forward, backward) of a MoE layer's MLP on one rank: the router, the routed experts' token-expert
    pairs (the busiest rank's: x imbalance) as a batched GEMM over the rank's experts, the shared
    experts, and their activations. Zero when no scenario point has experts."""
    if not np.asarray(model.experts > 0).any():
        return np.zeros(()), np.zeros(())
    h, t = model.hidden, layout.tp
    pairs = tokens * model.top_k * model.imbalance
    local_experts = np.maximum(model.experts / layout.ep, 1.0)
    per_expert = pairs * layout.ep / np.maximum(model.experts, 1.0)
    e_cols = (model.mlp_matrices - 1) * model.expert_ffn / t
    shared_tokens = tokens * np.maximum(model.shared_experts, 1.0)
    (e_up_f, e_up_b), (e_down_f, e_down_b), (s_up_f, s_up_b), (s_down_f, s_down_b), (router_f, router_b) = gemm_passes([
        (per_expert, e_cols, h, local_experts), (per_expert, h, model.expert_ffn / t, local_experts),
        (shared_tokens, e_cols, h, 1.0), (shared_tokens, h, model.expert_ffn / t, 1.0),
        (tokens, np.maximum(model.experts, 1.0), h, 1.0)], device)
    shared = model.shared_experts > 0
    expert_act = (pairs + tokens * model.shared_experts) * per_element * model.expert_ffn / t
    forward = router_f + e_up_f + e_down_f + np.where(shared, s_up_f + s_down_f, 0.0) + expert_act * act_f
    backward = router_b + e_up_b + e_down_b + np.where(shared, s_up_b + s_down_b, 0.0) + expert_act * act_b
    moe = model.experts > 0
    return np.where(moe, forward, 0.0), np.where(moe, backward, 0.0)


def layer_times_s(model: Model, layout: Layout, device: Device) -> dict:
    """Per-layer, per-micro-batch compute times on one rank (dense and MoE layers apart):
    ``attention_gemm_f``/``_b`` (QKV and projection), ``mlp_f``/``_b`` (the dense MLP with its
    activation), ``attention_f``/``_b`` (the core),
    ``memory_f``/``memory_b`` (norms, activation, dropout, residual: HBM-bound), the same for a
    MoE layer's MLP as ``moe_f``/``moe_b`` (router, routed and shared experts), and the last
    stage's output layer GEMM as ``output_f``/``output_b``."""
    tokens, replicated_tokens = _tokens(model, layout)
    h, t = model.hidden, layout.tp
    qkv_cols = (model.heads / t + 2 * model.kv_heads_per_rank(t)) * model.head_dim
    up_cols = (model.mlp_matrices - 1) * model.ffn / t
    (qkv_f, qkv_b), (proj_f, proj_b), (up_f, up_b), (down_f, down_b), (out_f, out_b) = gemm_passes([
        (tokens, qkv_cols, h, 1.0), (tokens, h, model.heads * model.head_dim / t, 1.0), (tokens, up_cols, h, 1.0),
        (tokens, h, model.ffn / t, 1.0), (tokens, model.vocab / t, h, 1.0)], device)
    attention_f, attention_b = attention_times_s(model, layout, device)
    memory_f, memory_b, act_f, act_b, split_f, split_b = elementwise_elements(model, layout)
    per_element = layout.act_bytes / device.hbm_bytes_s
    activation = tokens * per_element * model.ffn / t
    replicated = replicated_tokens * per_element
    qkv_bias = tokens * per_element * qkv_cols

    moe_f, moe_b = moe_mlp_times_s(model, layout, device, tokens, per_element, act_f, act_b)
    dense_mlp_f = up_f + down_f + activation * act_f
    dense_mlp_b = up_b + down_b + activation * act_b
    return {
        "attention_gemm_f": qkv_f + proj_f, "attention_gemm_b": qkv_b + proj_b,
        "mlp_f": dense_mlp_f, "mlp_b": dense_mlp_b,
        "attention_f": attention_f, "attention_b": attention_b,
        "memory_f": replicated * memory_f * h + qkv_bias * split_f,
        "memory_b": replicated * memory_b * h + qkv_bias * split_b,
        "moe_f": moe_f, "moe_b": moe_b,
        "output_f": out_f, "output_b": out_b,
    }
