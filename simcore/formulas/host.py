"""The host's side of a training step: eager PyTorch launches every kernel from Python, one CPU core
per GPU, and when the GPU runs a layer's kernels faster than the host can launch them the host
bounds that layer (Megatron-LM, docs/discussions/deepseek-v3-gb200-optimization, commit eb0783b6:
"the CPU kernel launch speed cannot keep up with the kernel execution speed on GPU").

Each layer's launches per micro-batch are counted from its structure as Megatron-Core with
Transformer Engine runs it (:func:`layer_launches`), each costing the host the node CPU's measured
time per eager op, and each Transformer Engine module's forward (:func:`te_modules`) its measured
time per module in place of its GEMM's launch; a layer pass takes the longer of its launches and
its GPU compute. CUDA graphs replay a captured scope for one launch. Host-only PyTorch calls
(allocations, autograd bookkeeping) are not counted, so this is a lower bound on the host's time
(docs/engine.md, known misses).
"""
from dataclasses import dataclass

import numpy as np

from simcore.arrays import where

# Host time per eager PyTorch op on an x86 server host, used when the node's CPU has no measurement:
# NVIDIA dgxc-benchmarking microbenchmarks/cpu_overhead (README, v25.10-v25.12), torch.matmul on tiny
# matrices 10,000 times, the mean over its eight sizes on a DGX H100 (Xeon Platinum 8480C): 7.66 us
# (DGX B200, Xeon Platinum 8570: 7.65 us; GB200, Grace: 14.55 us).
X86_HOST_OP_S = 7.66e-6
# Host time of one Transformer Engine module's forward (a BF16 Linear) on an H100 node's Xeon: about 13.5 us
# (NVIDIA/TransformerEngine issue 2053, where Grace takes about 100 us and a plain torch Linear 37 on Grace):
# the Python around the module (recipe and quantizer checks, autograd function setup) beyond its launches.
X86_HOST_MODULE_S = 13.5e-6
TE_MODULE_ISSUE = ("NVIDIA/TransformerEngine issue 2053: a BF16 Linear's forward through Transformer Engine took "
                   "about 13.5 us of CPU on an H100 node (Xeon) and about 100 us on Grace")

# Kernels of a MoE router per layer pass (Megatron-LM's DeepSeek-V3 GB200 write-up, 2.1.4 and 2.2):
# 72 as written, 31 with Transformer Engine's fused router (--moe-router-fusion, TE PR 1883), 17
# with a dispatcher that also fuses the dispatch preprocessing (DeepEP, counted with the fused router;
# HybridEP likewise).
ROUTER_KERNELS = {"plain": 72.0, "fused": 31.0, "dispatcher_fused": 17.0}
DGXC_CPU_OVERHEAD = ("NVIDIA/dgxc-benchmarking microbenchmarks/cpu_overhead README (v25.10-v25.12): torch.matmul "
                     "launch on tiny matrices, mean of eight sizes; DGX H100 (Xeon 8480C) 7.66 us, DGX B200 7.65, "
                     "GB200 (Grace) 14.55")
GB200_WRITE_UP = ("NVIDIA/Megatron-LM docs/discussions/deepseek-v3-gb200-optimization (commit eb0783b6), 2.1.4 and "
                  "2.2: the router's kernels 72, 31 with --moe-router-fusion, 17 with DeepEP's fused preprocessing")
# Megatron-Core's dispatchers, dropless, wait on the host once in each MoE layer's forward for the token
# counts that size the exchange (NVIDIA/Megatron-LM megatron/core/transformer/moe/token_dispatcher.py,
# commit d98e8a64): the all-to-all dispatcher's cuda_sync_point "before_ep_alltoall" (EP > 1), DeepEP's
# tokens_per_expert.sum().item(), HybridEP's buffers sized at run time ("CPU sync") without a token budget.
# The backward reuses the counts.
# Elementwise kernels of rotary embedding per rotated tensor (query, key): Megatron-Core's unfused
# apply_rotary_pos_emb (x cos, the half rotation's negation and concatenation, x sin, their sum: 5);
# fused (Transformer Engine's fused_rope): 1.
ROPE_KERNELS = {True: 1.0, False: 5.0}


@dataclass(frozen=True)
class Host:
    """What the host does for a step. ``op_s``: host seconds per eager launch (the node CPU's
    measurement); ``module_s``: host seconds per Transformer Engine module forward (likewise);
    ``cuda_graphs``: each layer's static parts captured (Megatron-Core's
    --cuda-graph-impl transformer_engine: a dense layer whole; a MoE layer's attention, router,
    dispatch preprocessing and shared experts, the routed experts eager as their token counts change);
    ``router_fused`` and ``permute_fused``: Transformer Engine's fused MoE router and token permute;
    ``dispatcher_fused``: the dispatcher fuses routing's preprocessing (DeepEP, HybridEP)."""

    op_s: np.ndarray
    module_s: np.ndarray
    cuda_graphs: np.ndarray
    router_fused: np.ndarray
    permute_fused: np.ndarray
    dispatcher_fused: bool


def _block_launches(layout, gemms, residual_unfused):
    """(forward, backward) launches around a block of ``gemms`` weight GEMMs: each GEMM once forward
    and twice backward (data and weight gradients), with FP8 one quantization per GEMM input forward
    and per output gradient backward; the block's norm (forward, backward) and residual add (backward:
    the gradient's sum), and its tensor-parallel collectives (with sequence parallelism an all-gather
    and a reduce-scatter forward, three backward; else one allreduce each way)."""
    fp8 = where(layout.fp8, 1.0, 0.0)
    sp = np.asarray(layout.sp, bool)
    collectives_f = where(layout.tp > 1, where(sp, 2.0, 1.0), 0.0)
    collectives_b = where(layout.tp > 1, where(sp, 3.0, 1.0), 0.0)
    forward = gemms * (1 + fp8) + 1 + where(layout.fused, 1.0, residual_unfused) + collectives_f
    backward = gemms * (2 + fp8) + 2 + collectives_b
    return forward, backward


def layer_launches(model, layout, host: Host) -> dict:
    """Kernels one rank launches per layer and micro-batch, eager: ``dense_f``/``dense_b`` and
    ``moe_f``/``moe_b`` (forward, backward with any recomputed forward added by the caller), and with
    CUDA graphs ``graphed`` the same four where each captured scope is one launch; ``moe_f_before_sync``
    those of a MoE layer's forward before its dispatcher's host synchronization (attention and router).

    Attention: QKV and projection (MLA: its four or five GEMMs and two latent norms), rotary embedding
    on the query and key (Llama-style models), the attention kernel (forward 1, backward 2: a
    preprocessing pass and the gradients). Dense MLP: two GEMMs and the activation (fused 1, else 2).
    MoE MLP: the gate GEMM and the router's kernels (:data:`ROUTER_KERNELS`), the dispatch and the
    combine (one kernel each, with the all-to-all dispatcher a token-count exchange more and a
    permute and an unpermute, fused 1 each, else a sort and a gather: 2), the grouped expert GEMMs
    one per local expert (Transformer Engine's GroupedLinear runs one cuBLAS GEMM per expert), their
    activation and FP8 casts, and the shared experts; backward mirrors the routing and doubles the
    GEMMs."""
    gated = np.asarray(model.gated, bool)
    biases = where(gated, 0.0, 1.0)
    residual_unfused = 2.0 + biases
    mla = np.asarray(model.mla, bool)
    attention_gemms = where(mla, where(model.q_lora_rank > 0, 5.0, 4.0), 2.0)
    rope = where(gated, 2 * where(layout.rope_fused, ROPE_KERNELS[True], ROPE_KERNELS[False]), 0.0)
    att_f, att_b = _block_launches(layout, attention_gemms, residual_unfused)
    att_f = att_f + rope + 1 + where(mla, 2.0, 0.0)
    att_b = att_b + rope + 2 + where(mla, 2.0, 0.0)
    activation = where(layout.fused, 1.0, 2.0)
    mlp_f, mlp_b = _block_launches(layout, 2.0, residual_unfused)
    mlp_f, mlp_b = mlp_f + activation, mlp_b + activation

    fp8 = where(layout.fp8, 1.0, 0.0)
    local_experts = np.maximum(model.experts / layout.ep, 1.0)
    router = 1 + where(host.dispatcher_fused, ROUTER_KERNELS["dispatcher_fused"],
                       where(host.router_fused, ROUTER_KERNELS["fused"], ROUTER_KERNELS["plain"]))
    permute = 0.0 if host.dispatcher_fused else 1 + 2 * where(host.permute_fused, 1.0, 2.0)
    routing = router + 2 + permute
    experts_f = 2 * local_experts + 2 * fp8 + activation
    experts_b = 4 * local_experts + 2 * fp8 + activation
    shared = np.minimum(model.shared_experts, 1.0)
    shared_f, shared_b = shared * (2 * (1 + fp8) + activation), shared * (2 * (2 + fp8) + activation)
    moe_f = att_f + 2 + routing + experts_f + shared_f
    moe_b = att_b + 2 + routing + experts_b + shared_b
    eager = {"dense_f": att_f + mlp_f, "dense_b": att_b + mlp_b, "moe_f": moe_f, "moe_b": moe_b,
             "moe_f_before_sync": att_f + router}
    # Graphed: a dense layer is one graph; a MoE layer two (attention; router and shared experts)
    # around its eager routed part (dispatch, combine, permutes, experts).
    graphed = {"dense_f": 1.0, "dense_b": 1.0, "moe_f": 2 + 2 + permute + experts_f,
               "moe_b": 2 + 2 + permute + experts_b, "moe_f_before_sync": 2.0}
    return {key: where(host.cuda_graphs, graphed[key], value) for key, value in eager.items()}


def te_modules(model, host: Host) -> dict:
    """Transformer Engine modules one rank runs forward per layer and micro-batch, eager, as
    Megatron-Core's Transformer Engine spec builds the layer: each attention GEMM's linear (QKV and
    projection; MLA's four or five) and the attention core; a dense MLP's two linears; a MoE MLP's
    two grouped linears over the rank's experts and its shared experts' two (the router's GEMM is a
    plain torch linear). With CUDA graphs the captured scopes replay: a dense layer none, a MoE layer
    its eager routed experts' two."""
    mla = np.asarray(model.mla, bool)
    attention = where(mla, where(model.q_lora_rank > 0, 5.0, 4.0), 2.0) + 1
    shared = 2 * np.minimum(model.shared_experts, 1.0)
    eager = {"dense_f": attention + 2, "moe_f": attention + 2 + shared, "moe_f_before_sync": attention}
    graphed = {"dense_f": 0.0, "moe_f": 2.0, "moe_f_before_sync": 0.0}
    return {key: where(host.cuda_graphs, graphed[key], value) for key, value in eager.items()}


def host_forward_s(launches_f, modules_f, host: Host):
    """Host time of a layer's forward: its launches at the time per op, its Transformer Engine modules
    at the time per module in place of the one launch each is counted with."""
    return launches_f * host.op_s + modules_f * np.maximum(host.module_s - host.op_s, 0.0)


def constant_rows() -> list[dict]:
    """The host model's measured figures, for validation's constants table."""
    return [{"family": "x86 host", "constant": "host_op_us", "value": X86_HOST_OP_S * 1e6, "confidence": "measured",
             "source": DGXC_CPU_OVERHEAD},
            {"family": "x86 host", "constant": "host_module_us", "value": X86_HOST_MODULE_S * 1e6,
             "confidence": "secondary", "source": TE_MODULE_ISSUE},
            *({"family": "MoE router", "constant": f"kernels ({kind})", "value": count, "confidence": "measured",
               "source": GB200_WRITE_UP} for kind, count in ROUTER_KERNELS.items())]


def synchronized_s(host_before_s, host_after_s, gpu_before_s, gpu_after_s):
    """What a host synchronization inside a pass adds to it: the host waits there until the GPU has
    run everything launched before, so each side of it takes the longer of its host and GPU time,
    max(h1, g1) + max(h2, g2), instead of the whole pass's max(h1 + h2, g1 + g2). A MoE layer's
    forward has one: every dispatcher copies the token counts to the host before its all-to-all
    (Megatron-Core's token_dispatcher.py, read at commit d98e8a64: the note above the router's kernels)."""
    return (np.maximum(host_before_s, gpu_before_s) + np.maximum(host_after_s, gpu_after_s)
            - np.maximum(host_before_s + host_after_s, gpu_before_s + gpu_after_s))


def exposed_host_s(host_s, gpu_s):
    """Host time the GPU waits for in one layer pass: the pass's host time beyond the GPU's compute
    for the same pass (the host runs ahead of the GPU only until it is out of work)."""
    return np.maximum(host_s - gpu_s, 0.0)
