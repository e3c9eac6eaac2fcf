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
from dataclasses import dataclass, replace

import numpy as np

from simcore.arrays import distinct_points, where
from simcore.formulas.attention import attention_shares
from simcore.formulas.overlap import Userbuffers

# GEMM tiles a cuBLAS/CUTLASS kernel choice ranges over (rows x columns of the output per CTA).
# The largest fills one SM's tensor cores and registers; smaller tiles fit several CTAs per SM.
GEMM_TILES = ((256, 128), (128, 256), (128, 128), (128, 64), (64, 128), (64, 64))
LARGEST_TILE_ELEMENTS = 256 * 128
# A tile of at least 128 x 128 keeps the tensor cores fed from shared memory: its arithmetic
# intensity Tm Tn / (Tm + Tn) is 64 elements per loaded element; smaller tiles reach the large-GEMM
# rate scaled by their intensity against that (NVIDIA, "Matrix Multiplication Background" user guide,
# tile quantization and tile size trade-offs).
FULL_RATE_TILE_INTENSITY = 128 * 128 / (128 + 128)
# Points from which gemm_passes looks for repeated GEMM shapes (below, the search costs more than it saves).
DISTINCT_SHAPES_FROM = 256
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
    inner dimension enters through the roofline (:func:`gemm_time_s`).

    A tile's use is m n / (rows Tm cols Tn) x CTAs / (waves x slots) x intensity; with CTAs = rows
    cols batch and slots = SMs x CTAs per SM, where every tile's Tm Tn x CTAs per SM is
    ``LARGEST_TILE_ELEMENTS``, it is m n batch / (SMs x LARGEST_TILE_ELEMENTS) x intensity / waves:
    only the waves differ between tiles, so the loop over the six tiles holds one array per GEMM.
    """
    m, n = np.asarray(m, float), np.asarray(n, float)
    sm, batch = np.asarray(sm_count, float), np.asarray(batch, float)
    rows = {tile_m: np.maximum(np.ceil(m / tile_m), 1) for tile_m in {tile[0] for tile in GEMM_TILES}}
    cols = {tile_n: np.maximum(np.ceil(n / tile_n), 1) for tile_n in {tile[1] for tile in GEMM_TILES}}
    best = 0.0
    for (tile_m, tile_n), ctas_per_sm, intensity in zip(GEMM_TILES, CTAS_PER_SM, TILE_INTENSITY):
        waves = np.maximum(np.ceil(rows[tile_m] * cols[tile_n] * batch / (sm * ctas_per_sm)), 1)
        best = np.maximum(best, intensity / waves)
    return gemm_fraction * (m * n * batch / (sm * LARGEST_TILE_ELEMENTS)) * best


@dataclass(frozen=True)
class Device:
    """One accelerator as the operators see it (arrays broadcasting over scenarios).

    peak_flops: dense peak of the weight GEMMs' precision at full clock x the sustained clock factor;
    attention_peak_flops: the same for attention (bf16 when the weight GEMMs run in FP8, else as
        peak_flops), with ``attention_gemm_fraction`` the large-GEMM share at that precision;
    attention_kernel: the fused attention kernel's row of measured rates
        (:data:`simcore.formulas.attention.SHARES`), times ``attention_scale`` (1: as measured; a
        trace's calibration otherwise), each share held at the peak;
    gemm_operand_bytes: bytes per GEMM operand element (4 TF32, 1 FP8, else 2);
    hbm_bytes_s: peak HBM bandwidth x the family's achievable share;
    grouped_gemm_fraction: the large-GEMM share a grouped GEMM (MoE experts, one kernel over the
        rank's experts) reaches with one group, and ``grouped_eight_ratio`` its share with eight
        groups over that (NaN, 1: not measured, the dense share).
    """

    peak_flops: np.ndarray
    attention_peak_flops: np.ndarray
    sm_count: np.ndarray
    gemm_fraction: np.ndarray
    attention_gemm_fraction: np.ndarray
    attention_kernel: np.ndarray
    gemm_operand_bytes: np.ndarray
    hbm_bytes_s: np.ndarray
    grouped_gemm_fraction: np.ndarray = np.nan
    grouped_eight_ratio: np.ndarray = 1.0
    attention_scale: np.ndarray = 1.0


def grouped_gemm_fraction(device: Device, groups):
    """The large-GEMM share of a grouped GEMM over ``groups`` experts: the measured one-group share,
    falling geometrically to the eight-group share at 8 groups and held beyond (read by log2 of the
    groups); the dense share where the family has no grouped measurement."""
    steps = np.clip(np.log2(np.maximum(groups, 1.0)), 0.0, 3.0) / 3
    grouped = device.grouped_gemm_fraction * np.asarray(device.grouped_eight_ratio) ** steps
    return where(np.isnan(grouped), device.gemm_fraction, grouped)


def gemm_time_s(m, n, k, device: Device, batch=1.0, attention=False, chunks=1.0, held_sms=0.0):
    """Roofline time of a GEMM: max(FLOPs / achieved rate, bytes moved / HBM rate); ``attention``
    for the unfused attention core's batched GEMMs (at the attention precision).

    ``chunks``: the rows run as that many GEMMs one after another (Transformer Engine's ring-exchange
    and pipelined overlaps split a GEMM so that each chunk's communication hides behind the next
    chunk's compute), each quantised into tiles and waves on its own and each reading the whole
    weight. ``held_sms``: SMs a communication kernel holds while the GEMM runs (userbuffers'
    ``num_sm`` with ``set_sm_margin``): the GEMM's waves are dealt over the rest, at their share of
    the peak."""
    peak = device.attention_peak_flops if attention else device.peak_flops
    fraction = device.attention_gemm_fraction if attention else device.gemm_fraction
    operand_bytes = where(attention, np.maximum(device.gemm_operand_bytes, 2.0), device.gemm_operand_bytes)
    flops = 2 * m * n * k * batch
    sms = device.sm_count - held_sms
    efficiency = gemm_efficiency(m / chunks, n, sms, fraction, batch) * sms / device.sm_count
    moved = where(flops > 0, operand_bytes * (m * k + chunks * k * n + m * n) * batch, 0.0)
    compute_s = np.divide(flops, peak * efficiency, out=np.zeros(np.broadcast_shapes(np.shape(flops),
                                                                                     np.shape(efficiency),
                                                                                  np.shape(peak))),
                          where=flops > 0)
    return np.maximum(compute_s, moved / device.hbm_bytes_s)


@dataclass(frozen=True)
class Split:
    """How a weight GEMM's passes run beside tensor-parallel communication (Transformer Engine's
    userbuffers overlaps): the forward and the activation gradient as ``forward_chunks`` and
    ``dgrad_chunks`` GEMMs one after another over the rows (a ring exchange: TP chunks; a pipelined
    overlap: its splits), the forward on the SMs its communication leaves (``forward_held_sms``: a
    pipelined reduce-scatter's ``num_sm`` with ``set_sm_margin``). A bulk overlap's SMs are charged
    where its collective's time is known (:func:`simcore.formulas.training.tp_overlap_s`). The
    default: one GEMM on every SM."""

    forward_chunks: object = 1.0
    forward_held_sms: object = 0.0
    dgrad_chunks: object = 1.0


WHOLE = Split()


def gemm_passes(shapes, device: Device, attention=False, splits=None):
    """(forward, backward, weight-gradient) times of several weight GEMMs in one vectorized call.

    ``shapes``: (m, n, k, batch) per GEMM. Forward is C[m, n] = A[m, k] B[k, n]; backward is the
    activation gradient dX[m, k] = dY[m, n] W^T and the weight gradient dW[k, n] = X^T dY, each with
    its own shape; the third time is the weight gradient alone (the part a zero-bubble schedule
    defers). ``splits``: a :class:`Split` per GEMM (default: whole GEMMs on every SM). The GEMMs are
    stacked on a trailing axis, so the cost does not grow with their number."""
    count = len(shapes)
    splits = splits or [WHOLE] * count
    width = 7
    values = [v for shape, split in zip(shapes, splits)
              for v in (*shape, split.forward_chunks, split.forward_held_sms, split.dgrad_chunks)]
    values += list(device.__dict__.values())
    lead = np.broadcast_shapes(*(np.shape(v) for v in values))
    distinct = None
    if len(lead) == 1 and lead[0] >= DISTINCT_SHAPES_FROM:
        # A grid's points repeat a few layouts: time each distinct set of shapes (and device) once.
        varying = [i for i, v in enumerate(values) if np.ndim(v)]
        distinct = distinct_points([np.broadcast_to(values[i], lead) for i in varying])
        if distinct is not None:
            for row, i in enumerate(varying):
                values[i] = distinct[0][row]
            lead = distinct[0].shape[1:]
    if lead:
        columns = [np.broadcast_to(np.asarray(v, float), lead) for v in values[:width * count]]
        m, n, k, batch, f_chunks, f_held, d_chunks = (np.stack(columns[i::width], axis=-1) for i in range(width))
    else:  # one scenario point: each column is a row of plain numbers
        m, n, k, batch, f_chunks, f_held, d_chunks = (np.array(values[i:width * count:width], float)
                                                      for i in range(width))
    rows = np.concatenate([m, m, k], axis=-1)
    cols = np.concatenate([n, k, n], axis=-1)
    inner = np.concatenate([k, n, m], axis=-1)
    expanded = Device(**{name: np.asarray(value)[..., None] for name, value in zip(device.__dict__,
                                                                                  values[width * count:])})
    times = gemm_time_s(rows, cols, inner, expanded, batch=np.concatenate([batch] * 3, axis=-1), attention=attention,
                        chunks=np.concatenate([f_chunks, d_chunks, np.ones_like(m)], axis=-1),
                        held_sms=np.concatenate([f_held, np.zeros_like(m), np.zeros_like(m)], axis=-1))
    forward, activation_grad, weight_grad = times[..., :count], times[..., count:2 * count], times[..., 2 * count:]
    if distinct is not None:
        inverse = distinct[1]
        return [(forward[inverse, i], (activation_grad[:, i] + weight_grad[:, i])[inverse], weight_grad[inverse, i])
                for i in range(count)]
    return [(forward[..., i], activation_grad[..., i] + weight_grad[..., i], weight_grad[..., i]) for i in range(count)]


@dataclass(frozen=True)
class Model:
    """A decoder-only transformer (arrays). ``experts`` = 0 for a dense model.

    Attention is multi-head or grouped-query (``kv_heads``), or multi-head latent attention (MLA,
    DeepSeek-V2/V3) where ``kv_lora_rank`` > 0: queries through a ``q_lora_rank`` bottleneck (0: a
    full projection), keys and values up-projected per head from a ``kv_lora_rank`` latent, each
    query and key head ``head_dim`` + ``rope_head_dim`` wide (the decoupled rotary part, one key head
    shared by all), each value head ``v_head_dim``. ``window`` limits the keys a query sees (sliding
    window; NaN: the whole sequence). ``mtp_layers`` multi-token prediction modules (DeepSeek-V3)
    each add one layer of the model's last kind and a 2h x h projection, sharing the embedding and
    the output head."""

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
    q_lora_rank: np.ndarray
    kv_lora_rank: np.ndarray
    rope_head_dim: np.ndarray
    v_head_dim: np.ndarray
    window: np.ndarray
    mtp_layers: np.ndarray

    @property
    def moe_layers(self):
        return where(self.experts > 0, self.layers - self.dense_layers, 0.0)

    @property
    def mlp_matrices(self):
        return where(self.gated, 3.0, 2.0)

    @property
    def mla(self):
        return self.kv_lora_rank > 0

    @property
    def qk_head_dim(self):
        return self.head_dim + self.rope_head_dim

    @property
    def keys(self):
        """Keys a query attends to (the model-FLOPs convention: all of them, causal or not)."""
        return np.fmin(self.seq, self.window)

    def kv_heads_per_rank(self, tp):
        """Key/value heads a TP rank holds: kv / t, or one replicated head when kv < t (Megatron-LM);
        with MLA every query head has its own key and value (up-projected from the latent)."""
        return where(self.mla, self.heads / tp, np.maximum(self.kv_heads / tp, 1.0))

    def attention_gemm_shapes(self, tokens, tp):
        """(rows, columns, inner) of a rank's attention weight GEMMs: QKV and the output projection;
        with MLA the query down- and up-projections, the key/value down-projection (latent and rotary
        key, replicated on every TP rank as Megatron-Core does) and up-projection, and the output.
        Unused GEMMs of the other kind have zero columns; without MLA anywhere only the first two."""
        h, heads = self.hidden, self.heads / tp
        mla = self.mla
        q_down = where(mla & (self.q_lora_rank > 0), self.q_lora_rank, 0.0)
        q_in = where(q_down > 0, q_down, h)
        qkv_cols = where(mla, heads * self.qk_head_dim, (heads + 2 * self.kv_heads_per_rank(tp)) * self.head_dim)
        standard = [(tokens, qkv_cols, q_in, 1.0), (tokens, h, heads * self.v_head_dim, 1.0)]
        if not np.asarray(mla).any():
            return standard
        return standard + [
            (tokens, q_down, h, 1.0), (tokens, where(mla, self.kv_lora_rank + self.rope_head_dim, 0.0), h, 1.0),
            (tokens, where(mla, heads * (self.head_dim + self.v_head_dim), 0.0), self.kv_lora_rank, 1.0),
        ]

    def attention_params_per_layer(self):
        """Attention weights of one layer (all TP ranks): MHA/GQA h (a + 2 kv) d + a d h; MLA
        h r_q + r_q a (d + d_r) + h (r_kv + d_r) + r_kv a (d + d_v) + a d_v h + r_q + r_kv (norms)."""
        h, a = self.hidden, self.heads
        standard = h * (a + 2 * self.kv_heads) * self.head_dim + a * self.head_dim * h
        q = where(self.q_lora_rank > 0, h * self.q_lora_rank + self.q_lora_rank * a * self.qk_head_dim,
                     h * a * self.qk_head_dim)
        latent = (h * (self.kv_lora_rank + self.rope_head_dim)
                  + self.kv_lora_rank * a * (self.head_dim + self.v_head_dim)
                  + a * self.v_head_dim * h + self.q_lora_rank + self.kv_lora_rank)
        return where(self.mla, q + latent, standard)


def parameter_counts(model: Model) -> dict:
    """Parameters by part. Per layer: attention (:meth:`Model.attention_params_per_layer`), MLP (2 or
    3) h f, plus the SC21 biases and norms 13 h; embeddings V h (twice untied) and, GPT-style, a
    position table s h; MoE layers hold E routed and S shared experts of width f_e and a router h E.
    Totals: ``total`` (the main model, as published), ``active`` (per token, embeddings included),
    ``experts`` (routed,
    all layers, MTP's too), ``embedding``, ``mtp`` (the multi-token prediction modules: their layer
    and 2h x h projection), ``model_layers_total`` (``total`` + ``mtp``: what the GPUs hold).
    """
    h, mats = model.hidden, model.mlp_matrices
    attention = model.attention_params_per_layer()
    norms_biases = 13 * h
    dense_mlp = mats * h * model.ffn
    expert = mats * h * model.expert_ffn
    moe_mlp = model.experts * expert + model.shared_experts * expert + h * model.experts
    dense_layers = model.layers - model.moe_layers
    embedding = model.vocab * h * where(model.tied, 1.0, 2.0) + where(model.gated, 0.0, model.seq * h)
    routed = model.moe_layers * model.experts * expert
    total = (embedding + model.layers * (attention + norms_biases) + dense_layers * dense_mlp
             + model.moe_layers * moe_mlp)
    active = total - model.moe_layers * (model.experts - model.top_k) * expert
    last_mlp = where(model.experts > 0, moe_mlp, dense_mlp)
    mtp = model.mtp_layers * (attention + norms_biases + last_mlp + 2 * h * h)
    mtp_routed = where(model.experts > 0, model.mtp_layers * model.experts * expert, 0.0)
    return {"total": total, "active": active, "experts": routed + mtp_routed, "embedding": embedding, "mtp": mtp,
            "model_layers_total": total + mtp}


def _layer_forward_flops(model: Model):
    """Forward FLOPs per token of one (dense, MoE) layer: 2 per weight of each GEMM a token passes
    through, and the attention scores and values 2 k a (d_qk + d_v) over the k keys a query sees."""
    h = model.hidden
    attention = 2 * (model.attention_params_per_layer() - where(model.mla, model.q_lora_rank + model.kv_lora_rank,
                                                                   0.0))
    attention = attention + 2 * model.keys * model.heads * (model.qk_head_dim + model.v_head_dim)
    dense = attention + 2 * model.mlp_matrices * h * model.ffn
    moe = (attention + 2 * model.mlp_matrices * h * model.expert_ffn * (model.top_k + model.shared_experts)
           + 2 * h * model.experts)
    return dense, moe


def model_flops_per_token(model: Model) -> np.ndarray:
    """Model FLOPs per token, forward and backward (3 x the forward's): every layer
    (:func:`_layer_forward_flops`; the attention core counted whole, the Megatron-LM and PaLM
    convention, causal or not), the output layer 2 h V, and each MTP module's layer, projection
    2 h x 2h and output head."""
    h = model.hidden
    dense, moe = _layer_forward_flops(model)
    last = where(model.experts > 0, moe, dense)
    forward = (model.layers * dense + model.moe_layers * (moe - dense) + 2 * h * model.vocab
               + model.mtp_layers * (last + 4 * h * h + 2 * h * model.vocab))
    return 3 * forward


def recompute_flops_per_token(model: Model, recompute, model_flops=None) -> np.ndarray:
    """Extra forward FLOPs per token that recomputation adds: full, every layer's forward; selective,
    the attention core (Korthikanti et al. 2022). ``recompute``: 0 none, 1 selective, 2 full;
    ``model_flops``: :func:`model_flops_per_token` when the caller has it."""
    model_flops = model_flops_per_token(model) if model_flops is None else model_flops
    layer_forward = model_flops / 3 - 2 * model.hidden * model.vocab * (1 + model.mtp_layers)
    scores = ((model.layers + model.mtp_layers) * 2 * model.keys * model.heads
              * (model.qk_head_dim + model.v_head_dim))
    return np.select([recompute == 2, recompute == 1], [layer_forward, scores], 0.0)


@dataclass(frozen=True)
class Layout:
    tp: np.ndarray
    sp: np.ndarray
    cp: np.ndarray
    ep: np.ndarray
    etp: np.ndarray  # expert tensor parallelism (Megatron-Core's MoE parallel folding)
    micro_batch: np.ndarray
    recompute: np.ndarray  # 0 none, 1 selective, 2 full
    flash: np.ndarray
    fused: np.ndarray  # fused element-wise kernels (Megatron-LM) or one pass per operation
    act_bytes: np.ndarray  # bytes per activation element: 2 (bf16/fp16, fp8 GEMMs too) or 4 (tf32)
    fp8: np.ndarray  # the weight GEMMs run in FP8 (Transformer Engine's casts around them)
    recompute_norms: np.ndarray  # norms recomputed in backward, their outputs not kept
    recompute_up_proj: np.ndarray  # MLA up-projections recomputed in backward, only the latents kept
    fp8_cache: np.ndarray  # the weight GEMMs' inputs kept in FP8 (1 byte) for backward
    fp8_cast_bytes: np.ndarray = 0.0  # bytes moved per element quantized for FP8 GEMMs (fp8_cast_bytes())
    ub: Userbuffers | None = None  # tensor-parallel communication overlapped with the GEMMs (None: not)
    rope_fused: np.ndarray = True  # rotary embedding in one kernel per tensor (Transformer Engine's fused_rope)
    cross_entropy_fused: np.ndarray = True  # the loss in one fused kernel (Transformer Engine's)
    dispatcher_permutes: np.ndarray = False  # the MoE dispatcher permutes inside its kernels (DeepEP, HybridEP)
    router_fused: np.ndarray = False  # the MoE router's score, top-k and aux-loss steps fused (moe_router_fusion)


def _tokens(model: Model, layout: Layout):
    """(tokens a rank's GEMMs see, tokens its norms and dropouts see) in one micro-batch."""
    tokens = layout.micro_batch * model.seq / layout.cp
    return tokens, where(layout.sp, tokens / layout.tp, tokens)


def attention_times_s(model: Model, layout: Layout, device: Device):
    """(forward, backward) time of the attention core of one layer on one rank.

    Fused (FlashAttention, cuDNN): 2 b (s/cp) k a (d_qk + d_v) / t FLOPs forward over the k keys a
    query sees, halved by a causal mask when the whole sequence is seen (a sliding window shorter
    than it is already causal); the backward pass recomputes the scores, 2.5 x the forward's FLOPs;
    each at the kernel's measured rate for the rank's sequence chunk (s / cp, or the window), the
    heads' width and the mask (:func:`simcore.formulas.attention.attention_shares`). Unfused
    (Megatron-LM 2021): batched GEMMs Q K^T and P V per head, and the score matrices through HBM, in
    elements moved per score (the 1-byte dropout mask counts half): fused scale-mask-softmax and
    dropout 4.5 forward and 5.5 backward; one pass per operation (scale, mask, softmax, dropout) 9
    and 9.5.
    """
    tokens, _ = _tokens(model, layout)
    heads = model.heads / layout.tp
    whole = model.causal & (model.keys >= model.seq)
    causal = where(whole, 0.5, 1.0)
    flash_forward_flops = 2 * tokens * model.keys * heads * (model.qk_head_dim + model.v_head_dim) * causal
    width = (model.qk_head_dim + model.v_head_dim) / 2
    forward_share, backward_share = (np.minimum(share * device.attention_scale, 1.0) for share in attention_shares(
        device.attention_kernel, width, np.fmin(model.seq / layout.cp, model.keys), whole))
    flash_f = flash_forward_flops / (device.attention_peak_flops * forward_share)
    flash_b = 2.5 * flash_forward_flops / (device.attention_peak_flops * backward_share)
    if np.asarray(layout.flash).all():
        return flash_f, flash_b
    batch = layout.micro_batch * heads
    rows = model.seq / layout.cp
    (qk_f, qk_b, _), (pv_f, pv_b, _) = gemm_passes([(rows, model.keys, model.qk_head_dim, batch),
                                                    (rows, model.v_head_dim, model.keys, batch)], device,
                                                   attention=True)
    scores = batch * rows * model.keys * layout.act_bytes / device.hbm_bytes_s
    unfused_f = qk_f + pv_f + scores * where(layout.fused, 4.5, 9.0)
    unfused_b = qk_b + pv_b + scores * where(layout.fused, 5.5, 9.5)
    return where(layout.flash, flash_f, unfused_f), where(layout.flash, flash_b, unfused_b)


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
    biases = where(model.gated, 0.0, 1.0)
    fused = layout.fused
    norms_f, norms_b = 2 * 2.0, 2 * 3.0
    memory_f = norms_f + where(fused, 2 * 3.5, 2 * (2.0 * biases + 2.5 + 3.0))
    memory_b = norms_b + where(fused, 2 * 2.5, 2 * (1.0 * biases + 2.5))
    act_f = where(model.gated, where(fused, 3.0, 5.0), 2.0 + where(fused, 0.0, 2.0 * biases))
    act_b = where(model.gated, where(fused, 5.0, 8.0), 3.0 + where(fused, 0.0, biases))
    split_f = where(fused, 0.0, 2.0 * biases)
    split_b = where(fused, 0.0, biases)
    return memory_f, memory_b, act_f, act_b, split_f, split_b


def rope_elements(model: Model, layout: Layout):
    """Elements moved per token on one rank by rotary embedding, forward (backward the same): the
    rank's query and key heads (MLA: only their decoupled rotary part, one key head), each read and
    written once by a fused kernel (2 moves), or by Megatron-Core's unfused form in five passes (x cos,
    the half rotation's negation and concatenation, x sin, the sum: 10). Llama-style models only."""
    heads = model.heads / layout.tp
    rotated = where(model.mla, (heads + 1) * model.rope_head_dim,
                    (heads + model.kv_heads_per_rank(layout.tp)) * model.head_dim)
    return where(model.gated, rotated * where(layout.rope_fused, 2.0, 10.0), 0.0)


FP8_RECIPES = ("delayed", "tensorwise", "blockwise", "mxfp8")
# Scale bytes per element a quantized copy carries: one FP32 scale per 128 elements (blockwise, 1 x 128
# tiles), one E8M0 scale per 32 (MXFP8); per-tensor recipes one scale for the whole tensor.
FP8_SCALE_BYTES = {"delayed": 0.0, "tensorwise": 0.0, "blockwise": 4 / 128, "mxfp8": 1 / 32}


def fp8_cast_bytes(recipe: str, native_columnwise) -> np.ndarray:
    """Bytes moved per element to quantize a tensor for FP8 GEMMs (Transformer Engine, docs/features/
    low_precision_training, "Handling transposes", commit d0067d0d): the 16-bit tensor read (2), and
    written once for row-wise use and once, transposed, for column-wise use (the weight gradient's
    operands; 1 byte each, with the recipe's scales), both in one kernel, the amax reduced inside it
    (delayed scaling takes the scale from past amaxes). Where the tensor cores read FP8 column-wise
    (``native_columnwise``: Blackwell) a per-tensor recipe writes one copy for both; MXFP8's and
    blockwise scales run along one axis, so they keep two. Current (tensorwise) scaling needs the
    tensor's amax before it casts: one more read (2)."""
    copies = where(native_columnwise & (recipe in ("delayed", "tensorwise")), 1.0, 2.0)
    amax_pass = 2.0 if recipe == "tensorwise" else 0.0
    return 2.0 + amax_pass + copies * (1.0 + FP8_SCALE_BYTES[recipe])


# NVFP4 (NVIDIA's recipe, arXiv:2509.25149): 4-bit E2M1 elements (half a byte) with one E4M3 scale per
# 16-element block, and one FP32 scale per tensor.
NVFP4_OPERAND_BYTES = 0.5 + 1 / 16


def nvfp4_cast_bytes() -> float:
    """Bytes moved per element to quantize a tensor for NVFP4 GEMMs: the 16-bit tensor read for its
    amax (the per-tensor scale must be known before any block is cast: 2), read again (2) and written
    row-wise and, transposed, column-wise (FP4 tensor cores read both operands along K), each copy
    half a byte with its block scales. The random Hadamard transform on the weight gradient's
    operands and stochastic rounding of the gradients run inside the cast kernel (Transformer Engine's
    fused kernels) and move no more bytes."""
    return 2.0 + 2.0 + 2.0 * NVFP4_OPERAND_BYTES


# MXFP4 (the OCP microscaling format, AMD CDNA 4's and NVIDIA Blackwell's FP4): 4-bit E2M1 elements with one
# E8M0 scale per 32-element block (OCP Microscaling Formats (MX) v1.0, 2023), no per-tensor scale.
MXFP4_OPERAND_BYTES = 0.5 + 1 / 32


def mxfp4_cast_bytes() -> float:
    """Bytes moved per element to quantize a tensor for MXFP4 GEMMs: the 16-bit tensor read once (each
    block's scale is its own amax, found inside the cast kernel: no per-tensor pass) and written row-wise
    and, transposed, column-wise (the block scales run along one axis), each copy half a byte with its
    scales."""
    return 2.0 + 2.0 * MXFP4_OPERAND_BYTES


def fp8_cast_s(shapes, layout: Layout, device: Device):
    """(forward, backward) HBM time of the FP8 casts around GEMMs of ``shapes`` (m, n, k, batch):
    each GEMM's input (m x k) forward and its output gradient (m x n) backward, where the GEMMs run
    in FP8, at the recipe's :func:`fp8_cast_bytes` each (weights are cast once a step, Transformer
    Engine caching them over the micro-batches: counted with the optimizer)."""
    if not np.asarray(layout.fp8).any():
        return np.zeros(()), np.zeros(())
    inputs = sum(m * k * batch for m, n, k, batch in shapes)
    outputs = sum(m * n * batch for m, n, k, batch in shapes)
    forward = inputs * layout.fp8_cast_bytes / device.hbm_bytes_s
    backward = outputs * layout.fp8_cast_bytes / device.hbm_bytes_s
    return where(layout.fp8, forward, 0.0), where(layout.fp8, backward, 0.0)


def moe_dispatch_tokens(layout: Layout, tokens):
    """Tokens a rank routes in one micro-batch: its share of the TP group's (Megatron-Core runs MoE
    layers sequence-parallel when TP > 1, so each TP rank routes b s / (cp t) tokens)."""
    return tokens / layout.tp


def moe_mlp_times_s(model: Model, layout: Layout, device: Device, tokens, per_element, act_f, act_b):
    """(forward, backward, weight-gradient, FP8 casts forward, backward, detail) of a MoE layer's MLP on
    one rank (detail: the grouped expert GEMMs' forward and backward, one pass of token shuffles, and
    all its GEMMs forward and backward): the router, the routed experts' token-expert pairs as a
    grouped GEMM over the rank's experts (the busiest rank's: x imbalance) at the family's grouped share
    (:func:`grouped_gemm_fraction`), the shared experts, and their activations.

    Experts fold over the attention's ranks (Megatron-Core's MoE parallel folding): an expert-
    parallel group of ``ep`` ranks, each expert split over ``etp`` ranks. A rank receives the pairs
    its experts are routed from the ``ep`` ranks' tokens, ``etp`` x (its dispatched tokens) x top-k
    on average. Zero when no scenario point has experts."""
    zero = np.zeros(())
    if not np.asarray(model.experts > 0).any():
        return zero, zero, zero, zero, zero, {key: zero for key in ("grouped_f", "grouped_b", "permute", "router_f",
                                                                    "router_b", "gemm_f", "gemm_b")}
    h = model.hidden
    pairs = moe_dispatch_tokens(layout, tokens) * layout.etp * model.top_k * model.imbalance
    local_experts = np.maximum(model.experts / layout.ep, 1.0)
    per_expert = pairs * layout.ep / np.maximum(model.experts, 1.0)
    e_width = model.expert_ffn / layout.etp
    e_cols = (model.mlp_matrices - 1) * e_width
    shared_tokens = tokens * np.maximum(model.shared_experts, 1.0)
    s_width = model.expert_ffn / layout.tp
    shapes = [(per_expert, e_cols, h, local_experts), (per_expert, h, e_width, local_experts),
              (shared_tokens, (model.mlp_matrices - 1) * s_width, h, 1.0), (shared_tokens, h, s_width, 1.0),
              (tokens, np.maximum(model.experts, 1.0), h, 1.0)]
    if np.isnan(device.grouped_gemm_fraction).all():  # no grouped measurement: every GEMM at the dense share
        passes = gemm_passes(shapes, device)
    else:
        grouped = replace(device, gemm_fraction=grouped_gemm_fraction(device, local_experts))
        passes = gemm_passes(shapes[:2], grouped) + gemm_passes(shapes[2:], device)
    shared = model.shared_experts > 0
    keep = (1.0, 1.0, shared, shared, 1.0)
    forward, backward, wgrad = (sum(where(k, part[i], 0.0) for part, k in zip(passes, keep)) for i in range(3))
    expert_act = (pairs * e_width + tokens * model.shared_experts * s_width) * per_element
    cast_f, cast_b = fp8_cast_s(shapes[:4], layout, device)
    permute = moe_permute_s(model, layout, tokens, pairs, per_element)
    router_f, router_b = moe_router_s(model, layout, tokens, device)
    moe = model.experts > 0
    detail = {"grouped_f": passes[0][0] + passes[1][0], "grouped_b": passes[0][1] + passes[1][1],
              "permute": permute, "router_f": router_f, "router_b": router_b, "gemm_f": forward, "gemm_b": backward}
    return (*(where(moe, value, 0.0) for value in (forward + expert_act * act_f + permute + router_f,
                                                   backward + expert_act * act_b + permute + router_b, wgrad,
                                                   cast_f, cast_b)),
            {key: where(moe, value, 0.0) for key, value in detail.items()})


# Bytes the MoE router's steps after its gating GEMM move per routed token and expert, forward and
# backward, its scores in FP32 (moe_router_dtype fp32), read from Megatron-Core's TopKRouter
# (megatron/core/transformer/moe/router.py and moe_utils.topk_softmax_with_capacity, commit 005742ff).
# Unfused, each step is its own kernel over the [tokens, experts] scores: the score function, the expert
# bias, group-limited top-k (group scores, their top-k, the mask), top-k, the probabilities and the
# routing map scattered into zeroed [tokens, experts] tensors, then again for the auxiliary loss (its
# scores, normalised, top-k, map, the loss's sums): about 22 passes of 4 bytes forward, 8 backward
# (the scatters' and score functions' gradients). Fused (Transformer Engine's fused router kernels), one
# kernel reads the logits and writes the probabilities and the map, one the aux-loss scores, and their
# backward reads two tensors and writes one each.
ROUTER_BYTES_UNFUSED = (88.0, 32.0)
ROUTER_BYTES_FUSED = (4.0 + 4.0 + 1.0 + 4.0 + 4.0, 2 * 12.0)


def moe_router_s(model: Model, layout: Layout, tokens, device: Device):
    """(forward, backward) HBM time of a MoE layer's router kernels after its gating GEMM (the GEMM is
    among the layer's GEMMs): :data:`ROUTER_BYTES_UNFUSED` or, with the router fused,
    :data:`ROUTER_BYTES_FUSED` per routed token and expert."""
    elements = moe_dispatch_tokens(layout, tokens) * np.maximum(model.experts, 1.0)
    forward, backward = (where(layout.router_fused, fused, unfused) * elements / device.hbm_bytes_s
                         for fused, unfused in zip(ROUTER_BYTES_FUSED, ROUTER_BYTES_UNFUSED))
    return forward, backward


def moe_permute_s(model: Model, layout: Layout, tokens, pairs, per_element):
    """HBM time of one pass (forward; backward moves the gradients back the same way) of a MoE
    layer's token shuffles around an all-to-all dispatcher (Megatron-Core's MoEAlltoAllTokenDispatcher):
    the permute reads each routed token and writes its top-k copies, the expert side sorts the
    received pairs by expert (each read and written), and the combine undoes both: (2 t + 2 t k + 4 p) h
    elements for t routed tokens and p received pairs. A dispatcher that permutes inside its
    communication kernels (DeepEP, HybridEP) has none apart: its measured rates include them."""
    routed = moe_dispatch_tokens(layout, tokens)
    elements = (2 * routed + 2 * routed * model.top_k + 4 * pairs) * model.hidden
    return where(layout.dispatcher_permutes, 0.0, elements * per_element)


def _overlap_splits(ub: Userbuffers | None, shapes, mlp_shapes, attention_shapes, t):
    """The layer's GEMM shapes (the MLP's two, the output layer, attention's) and how each runs
    beside TP communication (:class:`Split`; None without an overlap). With one, the two pipelined
    GEMMs are added once more on every SM (the last two shapes), to tell the SMs their
    reduce-scatter holds apart as time."""
    if ub is None:
        return shapes, None
    gathered = where(ub.on, t, 1.0)
    proj, fc2 = ub.reduce_scatter("proj", t), ub.reduce_scatter("fc2", t)
    splits = ([Split(gathered), Split(fc2[0], fc2[1], gathered), WHOLE, Split(gathered),
               Split(proj[0], proj[1], gathered)] + [WHOLE] * (len(attention_shapes) - 2)
              + [Split(fc2[0]), Split(proj[0])])
    return shapes + [mlp_shapes[1], attention_shapes[1]], splits


def layer_times_s(model: Model, layout: Layout, device: Device) -> dict:
    """Per-layer, per-micro-batch compute times on one rank (dense and MoE layers apart):
    ``attention_gemm_f``/``_b`` (QKV and projection, or MLA's five), ``mlp_f``/``_b`` (the dense MLP
    with its activation), ``attention_f``/``_b`` (the core), ``memory_f``/``memory_b`` (norms,
    activation, dropout, residual, rotary embedding, FP8 casts: HBM-bound), the same for a MoE layer's MLP as
    ``moe_f``/``moe_b``, the last stage's output layer GEMM as ``output_f``/``output_b``, the
    weight-gradient part of each backward as ``*_w`` (what zero-bubble schedules defer), and with a
    TP overlap (``layout.ub``) ``overlap``: the QKV, projection and MLP GEMMs' own times and the time
    the pipelined reduce-scatters' SMs take from the forward (left out of ``*_f``), and ``detail``:
    what of those times is FP8 quantization, FLOP-bound work (weight GEMMs and the attention
    core), grouped expert GEMMs and MoE token shuffles, dense and MoE layers apart, forward and
    backward (:data:`simcore.formulas.training.COMPUTE_DETAIL`)."""
    tokens, replicated_tokens = _tokens(model, layout)
    h, t = model.hidden, layout.tp
    up_cols = (model.mlp_matrices - 1) * model.ffn / t
    attention_shapes = model.attention_gemm_shapes(tokens, t)
    mlp_shapes = [(tokens, up_cols, h, 1.0), (tokens, h, model.ffn / t, 1.0)]
    shapes = mlp_shapes + [(tokens, model.vocab / t, h, 1.0)] + attention_shapes
    shapes, splits = _overlap_splits(layout.ub, shapes, mlp_shapes, attention_shapes, t)
    passes = gemm_passes(shapes, device, splits=splits)
    overlap = {}
    if layout.ub is not None:
        *passes, free_fc2, free_proj = passes
        overlap = {"gemms": {"qkv": passes[3], "proj": passes[4], "fc1": passes[0], "fc2": passes[1]},
                   "margin_mlp_f": passes[1][0] - free_fc2[0], "margin_attention_f": passes[4][0] - free_proj[0]}
    mlp = [passes[0][i] + passes[1][i] for i in range(3)]
    out_f, out_b, out_w = passes[2]
    attention_gemm = [sum(p[i] for p in passes[3:]) for i in range(3)]
    if overlap:
        mlp[0] = mlp[0] - overlap["margin_mlp_f"]
        attention_gemm[0] = attention_gemm[0] - overlap["margin_attention_f"]
    attention_f, attention_b = attention_times_s(model, layout, device)
    memory_f, memory_b, act_f, act_b, split_f, split_b = elementwise_elements(model, layout)
    per_element = layout.act_bytes / device.hbm_bytes_s
    activation = tokens * per_element * model.ffn / t
    replicated = replicated_tokens * per_element
    qkv_bias = tokens * per_element * attention_shapes[0][1]
    attention_cast_f, attention_cast_b = fp8_cast_s(attention_shapes, layout, device)
    mlp_cast_f, mlp_cast_b = fp8_cast_s(mlp_shapes, layout, device)
    rope = rope_elements(model, layout) * tokens * per_element
    moe_f, moe_b, moe_w, moe_cast_f, moe_cast_b, moe_detail = moe_mlp_times_s(model, layout, device, tokens,
                                                                              per_element, act_f, act_b)
    detail = _layer_detail((attention_gemm[0] + attention_f, attention_gemm[1] + attention_b), mlp,
                           (attention_cast_f, attention_cast_b), (mlp_cast_f, mlp_cast_b), (moe_cast_f, moe_cast_b),
                           moe_detail)
    return {
        "attention_gemm_f": attention_gemm[0], "attention_gemm_b": attention_gemm[1],
        "attention_gemm_w": attention_gemm[2],
        "mlp_f": mlp[0] + activation * act_f + mlp_cast_f, "mlp_b": mlp[1] + activation * act_b + mlp_cast_b,
        "mlp_w": mlp[2],
        "attention_f": attention_f, "attention_b": attention_b,
        "memory_f": replicated * memory_f * h + qkv_bias * split_f + attention_cast_f + rope,
        "memory_b": replicated * memory_b * h + qkv_bias * split_b + attention_cast_b + rope,
        "moe_f": moe_f + moe_cast_f, "moe_b": moe_b + moe_cast_b, "moe_w": moe_w,
        "output_f": out_f, "output_b": out_b, "output_w": out_w,
        "recompute_extra_f": _recomputed_modules_s(model, layout, passes[3:], replicated * h),
        "overlap": overlap, "detail": detail,
    }


def _layer_detail(attention_flop, mlp, attention_cast, mlp_cast, moe_cast, moe_detail) -> dict:
    """A layer's named kernels by category, dense and MoE apart, forward and backward
    (:func:`layer_times_s`'s ``detail``): FP8 quantization, FLOP-bound work (the weight GEMMs and the
    attention core), the grouped expert GEMMs, the token shuffles and the router's kernels."""
    return {
        "quantize_dense_f": attention_cast[0] + mlp_cast[0], "quantize_dense_b": attention_cast[1] + mlp_cast[1],
        "quantize_moe_f": attention_cast[0] + moe_cast[0], "quantize_moe_b": attention_cast[1] + moe_cast[1],
        "flop_dense_f": attention_flop[0] + mlp[0], "flop_dense_b": attention_flop[1] + mlp[1],
        "flop_moe_f": attention_flop[0] + moe_detail["gemm_f"], "flop_moe_b": attention_flop[1] + moe_detail["gemm_b"],
        "grouped_f": moe_detail["grouped_f"], "grouped_b": moe_detail["grouped_b"],
        "permute_f": moe_detail["permute"], "permute_b": moe_detail["permute"],
        "router_f": moe_detail["router_f"], "router_b": moe_detail["router_b"],
    }


def _recomputed_modules_s(model: Model, layout: Layout, attention_passes, hidden_pass_s):
    """Forward work the backward repeats for the recompute modules, per layer and micro-batch: MLA's
    query and key/value up-projection GEMMs (the first and fifth attention GEMMs), and the layer's two
    RMSNorms, each reading and writing its tokens' hidden vectors (``hidden_pass_s``: one HBM pass)."""
    up_proj = attention_passes[0][0] + (attention_passes[4][0] if len(attention_passes) > 4 else 0.0)
    return (where(layout.recompute_up_proj & model.mla, up_proj, 0.0)
            + where(layout.recompute_norms, 2 * 2 * hidden_pass_s, 0.0))
