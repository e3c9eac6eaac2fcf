"""Training: a step's time from its operators, memory per GPU, and scaling efficiency.

A transformer's step (:func:`transformer_step`) is built from one layer's operators
(:mod:`simcore.formulas.transformer`) and the communication of its layout:

* per layer and micro-batch: tensor-parallel allreduces (or, with sequence parallelism, a
  reduce-scatter and an all-gather of the same volume), 2 forward and 2 backward, 2 more when the
  whole forward is recomputed; context parallelism's ring exchange of keys and values (forward once,
  backward keys, values and their gradients), hidden behind the attention it feeds; expert
  parallelism's dispatch and combine all-to-alls (2 forward, 2 backward, 2 more with full
  recomputation) over where the expert group sits (:class:`Dispatch`), each optionally overlapped
  with compute (:func:`overlapped_s`);
* per micro-batch and virtual stage: the activation sent to the next pipeline stage and the
  gradient sent back, split over the tensor-parallel ranks (Megatron-LM's scatter/gather);
* per step: ``m`` micro-batches at the slowest stage's pace plus the schedule's bubble (1F1B,
  interleaved, ZB-H1 or DualPipe: :func:`pipeline_bubble_s`); the optimizer step
  (Adam reads and writes fp32 weights, moments and gradients: :data:`ADAM_BYTES_PER_PARAM`) on the
  rank's share of the weights; the data-parallel gradient reduction left exposed after what
  backward compute hides.

Memory per GPU follows Korthikanti et al. 2022 (arXiv:2205.05198), generalised to grouped-query
attention, MLA, gated MLPs and MoE: see :func:`activation_bytes_per_layer`.
"""
from dataclasses import dataclass

import numpy as np

from simcore.arrays import where
from simcore.formulas import collectives
from simcore.formulas.host import Host, exposed_host_s, host_forward_s, layer_launches, synchronized_s, te_modules
from simcore.formulas.overlap import bulk_s, reduce_scatter_exposed_s, ring_gather_exposed_s
from simcore.formulas.transformer import Device, Layout, Model, layer_times_s, moe_dispatch_tokens

GIB = 2**30
MEMORY_TERMS = ("weights", "gradients", "optimizer states", "activations")
# Adam with fp32 master weights: reads weight, gradient, m and v (16 bytes), writes weight, m and v
# (12) and the bf16 copy (2), and the gradient-norm clip reads the gradient once more (4).
ADAM_BYTES_PER_PARAM = 34.0
# Without gradient-accumulation fusion, every micro-batch's weight gradients (bf16/fp16, 2 bytes
# read) are added to the main gradients (read and written at ``grad_bytes`` each) in a separate
# pass (Megatron-LM's main_grad hook; Megatron later fused it into the weight-gradient GEMM).
WGRAD_BYTES = 2.0
# Vocabulary-parallel cross-entropy per logit (forward, backward), in Megatron-LM's separate PyTorch
# operations: the bf16 logits read, an fp32 exponent written and read back forward (10 bytes), the fp32
# softmax read and the bf16 gradient written backward (6). Fused in one kernel (Transformer Engine's):
# the logits read once forward for their maximum, sum of exponents and target (2), read and the
# gradient written backward (4).
CROSS_ENTROPY_BYTES_PER_LOGIT = {False: (10.0, 6.0), True: (2.0, 4.0)}
RECOMPUTE = ("none", "selective", "full")
# Bytes per logit the loss holds on the last pipeline stage while its micro-batch's backward starts (its
# vocabulary split over TP). Unfused (Megatron-LM's vocab-parallel cross-entropy, megatron/core/fusions and
# tensor_parallel/cross_entropy.py; TorchTitan's F.cross_entropy on logits.float()): the bf16 logits and
# their fp32 softmax kept for the backward, 2 + 4. Fused (Transformer Engine's parallel cross-entropy): the
# gradient written in place of the bf16 logits, 2.
LOGIT_BYTES = {False: 6.0, True: 2.0}


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
    hbm_reserved_gib: HBM of the device's reported total that no tensor can use, the sum of three
        measurements: the driver's reserve (``nvidia-smi -q`` "Reserved" 454 MiB on an H100 SXM,
        thamada/nvidia-smi nvsim/H100SXMx8_smi.py), the CUDA context (about 300 MB with lazy
        loading, pytorch/pytorch issue 107667) and NCCL's buffers (1.06 GB on 8 x H100 before any
        all-to-all, NVIDIA/nccl issue 1685). No measurement of the caching allocator's
        fragmentation was found, so none is counted.
    """

    dp_overlap_fraction: float = 0.8
    sm_collective_overlap: float = 0.2
    hbm_reserved_gib: float = 454 / 1024 + 0.3e9 / GIB + 1.06e9 / GIB


@dataclass(frozen=True)
class Link:
    """A path between ranks as collectives see it: achievable bus bandwidth per GPU one way
    (GB/s), per-step latency (s), and whether NCCL's LL protocol serves small collectives on it (a
    scale-up link; :func:`collectives.low_latency_allreduce_time_s`, with ``params``' constants):
    a collective then takes the faster protocol, as NCCL's tuner picks it."""

    bw_gbyte_s: np.ndarray
    latency_s: np.ndarray
    low_latency: np.ndarray | bool = False
    params: collectives.CollectiveParams = collectives.CollectiveParams()

    def allreduce_s(self, size_bytes, ranks):
        simple = collectives.ring_allreduce_time_s(size_bytes, ranks, self.bw_gbyte_s, self.latency_s)
        low = collectives.low_latency_allreduce_time_s(size_bytes, ranks, self.bw_gbyte_s, self.params)
        return where(ranks > 1, where(self.low_latency, np.minimum(simple, low), simple), 0.0)

    def ring_s(self, size_bytes, ranks):
        """All-to-all, all-gather or reduce-scatter of ``size_bytes`` per rank in all."""
        simple = collectives.ring_collective_time_s(size_bytes, ranks, self.bw_gbyte_s, self.latency_s)
        low = collectives.low_latency_ring_time_s(size_bytes, ranks, self.bw_gbyte_s, self.params)
        return where(ranks > 1, where(self.low_latency, np.minimum(simple, low), simple), 0.0)

    def send_s(self, size_bytes):
        return self.latency_s + size_bytes / (self.bw_gbyte_s * collectives.GB)


def pick_link(inside_domain, scaleup: Link, network: Link) -> Link:
    """The scale-up link where a group fits inside the scale-up domain, else the network."""
    return Link(where(inside_domain, scaleup.bw_gbyte_s, network.bw_gbyte_s),
                where(inside_domain, scaleup.latency_s, network.latency_s),
                where(inside_domain, scaleup.low_latency, network.low_latency), scaleup.params)


# A step's parts: the result's key (``training.step_parts_s``) and the label a report shows.
STEP_PARTS = {"forward": "forward", "backward": "backward", "recomputation": "recomputation", "optimizer": "optimizer",
              "pipeline_bubble": "pipeline bubble", "comm_sms": "SMs held by overlapped communication",
              "host_launch": "the host launching kernels",
              "stragglers": "waiting for the slowest GPU", "tp_traffic": "tensor-parallel traffic",
              "cp_traffic": "context-parallel traffic", "pp_traffic": "pipeline traffic",
              "ep_all_to_all": "expert all-to-all", "activation_offload": "activation copies to and from the host",
              "dp_exposed": "exposed data-parallel traffic",
              "host_preprocessing": "host data preprocessing"}
STEP_KEYS, STEP_LABELS = tuple(STEP_PARTS), tuple(STEP_PARTS.values())
# What of the compute parts (forward, backward, recomputation) named kernels take, per step on the
# slowest stage (``training.compute_detail_s``): parts of those parts, not added to the step again.
COMPUTE_DETAIL = {"sustained_clock": "the sustained clock below full (FLOP-bound work)",
                  "fp8_quantize": "FP8 and NVFP4 quantization", "grouped_gemm": "grouped expert GEMMs",
                  "moe_permute": "MoE token shuffles", "moe_router": "MoE router kernels"}
# What the data-parallel traffic (``training.dp_allreduce_s``, before any overlap) is made of
# (``training.dp_detail_s``): under ZeRO-3 / FSDP the parameter all-gathers of every micro-batch
# beside the gradients' reduction; the exposed part of both is the step's ``dp_exposed``.
DP_DETAIL = {"param_gather": "parameter all-gathers (ZeRO-3 / FSDP)", "grad_reduce": "gradient reduction",
             "fsdp_calls": "ZeRO-3 / FSDP collective calls (ring latency and host time per call)"}


@dataclass(frozen=True)
class FsdpImplementation:
    """How a ZeRO-3 / FSDP implementation runs the weights' collectives, read from its code.
    ``calls_per_layer``: collectives a layer for each all-gather or reduce-scatter round;
    ``overlaps``: whether a layer's collectives run beside the compute (prefetched a layer ahead);
    ``host_ops_constant``: the fitted constant (:mod:`simcore.fitted`) giving the eager host ops each
    call costs per data-parallel rank (empty: none)."""

    calls_per_layer: float
    overlaps: bool
    host_ops_constant: str = ""


# A transformer layer's weight matrices as Megatron-style code holds them: the fused QKV, the attention
# projection, FC1 (the gate fused in) and FC2. DeepSpeed leaves tensors under its persistence threshold
# (100,000 elements: norms and biases) whole on every rank.
LAYER_WEIGHT_MATRICES = 4.0
FSDP = {
    # PyTorch FSDP2 (torch.distributed.fsdp.fully_shard on each transformer block): one all-gather into a
    # flat buffer a block, the next block's prefetched, one reduce-scatter a block backward.
    "fsdp2": FsdpImplementation(1.0, True),
    # DeepSpeed ZeRO-3 since v0.6 (2022): one coalesced all-gather a submodule (a weight matrix this size),
    # prefetched ahead on its own stream.
    "deepspeed-zero3": FsdpImplementation(LAYER_WEIGHT_MATRICES, True),
    # DeepSpeed v0.3.13-v0.5 (2021, deepspeed/runtime/zero/partition_parameters.py): _allgather_param gathers
    # one parameter at a time after torch.cuda.synchronize(), into a list of one tensor view per rank
    # (flat_tensor.narrow in a Python loop), which PyTorch's list all_gather copies out one rank at a time;
    # _reduce_scatter_gradient likewise. The host ops each rank's view, copy, allocation and hooks cost are
    # fitted (deepspeed_v03_host_ops_per_rank): no microbenchmark times that loop.
    "deepspeed-zero3-v0.3": FsdpImplementation(LAYER_WEIGHT_MATRICES, False, "deepspeed_v03_host_ops_per_rank"),
}
FSDP_IMPLEMENTATIONS = tuple(FSDP)


def fsdp_call_s(ranks, hop_latency_s, host_op_s, host_ops_per_rank):
    """One weight collective's cost beyond its bytes: a ring's (ranks - 1) hops (NCCL's all-gather and
    reduce-scatter are rings) and the implementation's ``host_ops_per_rank`` eager host ops per rank."""
    return (np.maximum(ranks, 1) - 1) * hop_latency_s + host_ops_per_rank * ranks * host_op_s


# The per-layer detail :func:`simcore.formulas.transformer.layer_times_s` gives, by category.
_LAYER_DETAIL = ("quantize", "flop", "grouped", "permute", "router")
# The parts the GPUs spend computing, which the slowest GPU stretches.
COMPUTE_PARTS = ("forward", "backward", "recomputation", "optimizer", "pipeline_bubble", "comm_sms")


SCHEDULES = ("1f1b", "zb-h1", "dualpipe")


@dataclass(frozen=True)
class Dispatch:
    """Where a MoE layer's token dispatch and combine run. The expert-parallel group's ``ep``
    ranks sit ``ranks_in_domain`` to a scale-up domain (or node) over ``domains`` of them; pairs
    for ranks of the same domain move over ``inside`` (the scale-up link, or PCIe), pairs for other
    domains over ``network`` (the GPU's share of the node's NICs).

    ``hierarchical``: a token goes once to each remote domain its experts are in and is forwarded
    inside it (DeepEP, HybridEP; DeepSeek-V3 3.2.2), else every token-expert pair is sent directly
    (NCCL all-to-all). ``max_domains``: node-limited routing, a token's experts in at most M domains
    (NaN: unlimited). ``overlap``: the all-to-all runs beside another micro-batch's compute (DualPipe,
    Megatron-Core's EP overlap) which meanwhile loses ``comm_sm_share`` of its SMs.
    ``dispatch_gbyte_s`` and ``combine_gbyte_s``: the dispatcher's measured rate for the copies
    moved inside a domain (:data:`simcore.formulas.devices.DeviceFamily.dispatcher_gbyte_s`; NaN: the
    link's); ``network_dispatch_gbyte_s`` and ``network_combine_gbyte_s``: its measured rate across
    nodes, counting a copy per token and destination domain, its own included
    (``dispatcher_network_gbyte_s``; NaN: the network link's line rate for the remote copies)."""

    inside: Link
    network: Link
    ranks_in_domain: np.ndarray
    domains: np.ndarray
    hierarchical: bool
    max_domains: np.ndarray
    overlap: bool
    comm_sm_share: np.ndarray
    dispatch_gbyte_s: np.ndarray = np.nan
    combine_gbyte_s: np.ndarray = np.nan
    network_dispatch_gbyte_s: np.ndarray = np.nan
    network_combine_gbyte_s: np.ndarray = np.nan


def dispatch_copies(top_k, ranks_in_domain, domains, hierarchical, max_domains):
    """(copies per token sent over the network, copies moved inside a domain) for one dispatch.

    Experts are spread evenly, so of a token's k pairs k (n - 1) / n are for other domains and
    k (r - 1) / ep for other ranks of its own. Deduplicated (``hierarchical``), a token crosses the
    network once per remote domain it needs: of the n(1 - (1 - 1/n)^k) distinct domains its k
    experts fall in (at most M with node-limited routing), (n - 1) / n are remote; inside each
    domain a copy is forwarded to every expert rank other than the one receiving it, k (r - 1) / r.
    Node-limited routing does not change what a direct all-to-all sends: its k pairs still land
    on other domains (n - 1) / n of the time."""
    n, r = domains, ranks_in_domain
    remote_share = (n - 1) / n
    distinct = n * (1 - (1 - 1 / n) ** top_k)
    if hierarchical:
        return np.fmin(distinct, max_domains) * remote_share, top_k * (r - 1) / r
    return top_k * remote_share, top_k * (r - 1) / (n * r)


def all_to_all_s(bytes_per_copy, copies, dispatch: Dispatch, inside_rate_gbyte_s=np.nan,
                 network_rate_gbyte_s=np.nan):
    """One dispatch or combine: every rank sends its copies at once, the network and the links
    inside the domain in parallel (DeepSeek-V3 3.2.2: IB and NVLink fully overlapped), one latency;
    inside the domain at the dispatcher's measured rate where there is one, else the link's; across
    domains at its measured rate where there is one (which counts, beside the n - 1 remote domains'
    copies, the one its own domain keeps: n / (n - 1) of the remote copies), else the network's."""
    network_copies, inside_copies = copies
    n = dispatch.domains
    measured_s = (network_copies * n / np.maximum(n - 1, 1) * bytes_per_copy
                  / (network_rate_gbyte_s * collectives.GB))
    network_s = where(np.isnan(network_rate_gbyte_s),
                      network_copies * bytes_per_copy / (dispatch.network.bw_gbyte_s * collectives.GB), measured_s)
    inside_bw = where(np.isnan(inside_rate_gbyte_s), dispatch.inside.bw_gbyte_s, inside_rate_gbyte_s)
    inside_s = inside_copies * bytes_per_copy / (inside_bw * collectives.GB)
    latency = where(dispatch.domains > 1, dispatch.network.latency_s, dispatch.inside.latency_s)
    busy = (network_copies + inside_copies) > 0
    return where(busy, latency + np.maximum(network_s, inside_s), 0.0)


def overlapped_s(comm_s, compute_s, comm_sm_share):
    """What communication running beside ``compute_s`` of other work adds to it: the compute loses
    ``comm_sm_share`` of its SMs while the communication runs, so the pair takes
    max(compute + share x comm, comm); never more than the two in series."""
    return np.maximum(comm_sm_share * comm_s, comm_s - compute_s)


def _layer_parts(ops: dict, layout: Layout) -> dict:
    """One layer's forward, backward, recomputed forward and weight-gradient GEMMs (part of the
    backward) per micro-batch, dense and MoE."""
    full, selective = layout.recompute == 2, layout.recompute == 1
    attention_f = ops["attention_gemm_f"] + ops["attention_f"] + ops["memory_f"]
    attention_b = ops["attention_gemm_b"] + ops["attention_b"] + ops["memory_b"]
    dense_f, moe_f = attention_f + ops["mlp_f"], attention_f + ops["moe_f"]
    partial = where(selective, ops["attention_f"], 0.0) + ops["recompute_extra_f"]
    return {
        "dense_f": dense_f, "dense_b": attention_b + ops["mlp_b"],
        "moe_layer_f": moe_f, "moe_layer_b": attention_b + ops["moe_b"],
        "recompute_dense": where(full, dense_f, partial), "recompute_moe": where(full, moe_f, partial),
        "w_dense": ops["attention_gemm_w"] + ops["mlp_w"], "w_moe": ops["attention_gemm_w"] + ops["moe_w"],
    }


def _tp_traffic_s(layout: Layout, ops: dict, device: Device, tp_link: Link, activation_bytes) -> dict:
    """One layer's tensor-parallel traffic per micro-batch, dense and MoE layers apart: ``(exposed
    time, SM cost)``. Without sequence parallelism 4 allreduces (6 with full recomputation). With
    it each of the layer's two blocks (attention, MLP) gathers its input and reduce-scatters its
    output forward, and backward gathers the output gradient, gathers the input again (Megatron
    keeps only its sequence shard) and reduce-scatters the input gradient: 5 all-gathers and
    reduce-scatters a block, 2 more each with full recomputation. Overlapped (``layout.ub``: Transformer
    Engine's userbuffers, :mod:`simcore.formulas.overlap`), each hides behind its GEMM as its site's
    method allows; an MoE layer's MLP runs its collectives apart from the expert GEMMs, exposed."""
    t = layout.tp
    full = layout.recompute == 2
    plain = (4 + 2 * full) * tp_link.allreduce_s(activation_bytes, t)
    if not np.asarray(layout.sp).any():
        return {"dense": (plain, np.zeros(())), "moe": (plain, np.zeros(()))}
    one = tp_link.ring_s(activation_bytes, t)
    block = (5 + 2 * full) * one
    split = where(layout.sp, 2 * block, plain)
    ub = layout.ub
    if ub is None or not np.asarray(ub.on).any():
        return {"dense": (split, np.zeros(())), "moe": (split, np.zeros(()))}
    gemms = ops["overlap"]["gemms"]
    final_reduce = activation_bytes * (1 + 1 / t) / device.hbm_bytes_s

    def overlapped_block(gather, scatter, dgrad_sms, wgrad_sms, margin_f):
        """A block's five collectives beside its two GEMMs (``gather``: the column-parallel one)."""
        g_f, g_b, g_w = gemms[gather]
        s_f, s_b, s_w = gemms[scatter]
        chunks, _ = ub.reduce_scatter(scatter, t)
        method = getattr(ub, f"{scatter}_method")
        forward = ring_gather_exposed_s(one, g_f, t) + reduce_scatter_exposed_s(one, s_f, chunks, method, final_reduce)
        dgrad_exposed, dgrad_sm = bulk_s(one, g_b - g_w, dgrad_sms / device.sm_count)
        wgrad_exposed, wgrad_sm = bulk_s(one, g_w, wgrad_sms / device.sm_count)
        backward = ring_gather_exposed_s(one, s_b - s_w, t) + dgrad_exposed + wgrad_exposed
        return (1 + full) * forward + backward, dgrad_sm + wgrad_sm + (1 + full) * margin_f

    margins = ops["overlap"]
    attention = overlapped_block("qkv", "proj", ub.qkv_dgrad_sms, ub.qkv_wgrad_sms, margins["margin_attention_f"])
    mlp = overlapped_block("fc1", "fc2", ub.fc1_dgrad_sms, ub.fc1_wgrad_sms, margins["margin_mlp_f"])
    on = ub.on
    return {"dense": (where(on, attention[0] + mlp[0], split), where(on, attention[1] + mlp[1], 0.0)),
            "moe": (where(on, attention[0] + block, split), where(on, attention[1], 0.0))}


def _host_exposed_s(model: Model, layout: Layout, ops: dict, parts: dict, host: Host) -> dict:
    """One layer's host time beyond its GPU compute per micro-batch, dense and MoE layers apart
    (:mod:`simcore.formulas.host`): the forward, its Transformer Engine modules at their measured
    time, and the backward with whatever it recomputes (full recomputation the whole forward again,
    selective the attention kernel's launch); a MoE layer's forward split at its dispatcher's host
    synchronization (:func:`simcore.formulas.host.synchronized_s`)."""
    launches = layer_launches(model, layout, host)
    modules = te_modules(model, host)
    recomputed = where(layout.recompute == 2, 1.0, 0.0)
    selective = where(layout.recompute == 1, 1.0, 0.0)

    def exposed(kind, layer):
        forward_s = host_forward_s(launches[f"{kind}_f"], modules[f"{kind}_f"], host)
        backward_s = (launches[f"{kind}_b"] + selective) * host.op_s + recomputed * forward_s
        return (exposed_host_s(forward_s, parts[f"{layer}_f"])
                + exposed_host_s(backward_s, parts[f"{layer}_b"] + parts[f"recompute_{kind}"]))

    # A MoE layer's forward (and a fully recomputed one) waits on the host at its dispatch: attention and
    # router before it, the routed experts after.
    moe_forward_s = host_forward_s(launches["moe_f"], modules["moe_f"], host)
    host_before_s = host_forward_s(launches["moe_f_before_sync"], modules["moe_f_before_sync"], host)
    gpu_before_s = ops["attention_gemm_f"] + ops["attention_f"] + ops["memory_f"] + ops["detail"]["router_f"]
    sync_s = synchronized_s(host_before_s, moe_forward_s - host_before_s, gpu_before_s,
                            parts["moe_layer_f"] - gpu_before_s)
    return {"dense": exposed("dense", "dense"), "moe": exposed("moe", "moe_layer") + (1 + recomputed) * sync_s}


def _layer_traffic_s(model: Model, layout: Layout, ops: dict, parts: dict, device: Device, tp_link: Link,
                     cp_link: Link, dispatch: Dispatch) -> dict:
    """One layer's exposed communication per micro-batch: TP's (:func:`_tp_traffic_s`, with the SMs
    its overlapped collectives take), CP's key/value ring beyond what attention hides, EP's dispatch
    and combine (:func:`all_to_all_s`; overlapped with another micro-batch's MoE layer where
    ``dispatch`` says)."""
    h, t = model.hidden, layout.tp
    tokens = layout.micro_batch * model.seq / layout.cp
    full = layout.recompute == 2
    activation_bytes = tokens * h * layout.act_bytes
    kv_bytes = tokens * (2 * model.kv_heads_per_rank(t) * model.qk_head_dim) * layout.act_bytes
    cp_pass = cp_link.send_s(kv_bytes) * (layout.cp - 1)
    cp_exposed = where(layout.cp > 1, np.maximum(cp_pass - ops["attention_f"], 0.0)
                          + np.maximum(2 * cp_pass - ops["attention_b"], 0.0)
                          + where(full, np.maximum(cp_pass - ops["attention_f"], 0.0), 0.0), 0.0)
    tp = _tp_traffic_s(layout, ops, device, tp_link, activation_bytes)
    copies = dispatch_copies(model.top_k, dispatch.ranks_in_domain, dispatch.domains, dispatch.hierarchical,
                             dispatch.max_domains)
    pair_bytes = h * layout.act_bytes * moe_dispatch_tokens(layout, tokens)
    # Forward a dispatch and a combine; backward each one's gradient, the other's way round (again with
    # full recomputation).
    ep_s = (2 + full) * (all_to_all_s(pair_bytes, copies, dispatch, dispatch.dispatch_gbyte_s,
                                      dispatch.network_dispatch_gbyte_s)
                         + all_to_all_s(pair_bytes, copies, dispatch, dispatch.combine_gbyte_s,
                                        dispatch.network_combine_gbyte_s))
    if dispatch.overlap:
        ep_s = overlapped_s(ep_s, parts["moe_layer_f"] + parts["moe_layer_b"] + parts["recompute_moe"],
                            dispatch.comm_sm_share)
    return {"tokens": tokens, "activation_bytes": activation_bytes, "tp": tp, "cp_s": cp_exposed,
            "ep_s": where(model.experts > 0, ep_s, 0.0)}


def stage_layers(layers, pp, first, last):
    """Layers of the (first, middle, last) pipeline stage. Even: at most ceil(l / p) each. With
    ``first`` and/or ``last`` given (Megatron-LM's --decoder-first/last-pipeline-num-layers; NaN:
    not given) the other stages share the rest evenly."""
    given = np.isfinite(first).astype(float) + np.isfinite(last).astype(float)
    rest = np.maximum(pp - given, 1.0)
    middle = (layers - where(np.isfinite(first), first, 0.0) - where(np.isfinite(last), last, 0.0)) / rest
    even = ~(np.isfinite(first) | np.isfinite(last))
    middle = where(even, np.ceil(layers / pp), middle)
    return where(np.isfinite(first), first, middle), middle, where(np.isfinite(last), last, middle)


def _stages(model: Model, layout: Layout, device: Device, ops: dict, parts: dict, pp, virtual_stages,
            stage_layer_counts, pp_link: Link, traffic: dict, pp_overlap: bool) -> tuple[dict, dict, dict]:
    """The first, a middle and the last pipeline stage per micro-batch. The first holds the embedding
    and the leading (dense) layers of an MoE, the last the output layer, the loss and any MTP
    modules."""
    moe_on = model.experts > 0
    dense_total = model.layers - model.moe_layers
    first_layers, middle_layers, last_layers = stage_layer_counts
    first_dense = np.minimum(dense_total, first_layers)
    rest_dense = where(pp > 1, (dense_total - first_dense) / np.maximum(pp - 1, 1), 0.0)
    out_f, out_b, out_w = ops["output_f"], ops["output_b"], ops["output_w"]
    heads = 1 + model.mtp_layers
    logits_s = traffic["tokens"] * model.vocab / layout.tp / device.hbm_bytes_s
    plain_bytes, fused_bytes = CROSS_ENTROPY_BYTES_PER_LOGIT[False], CROSS_ENTROPY_BYTES_PER_LOGIT[True]
    loss_f, loss_b = (logits_s * where(layout.cross_entropy_fused, fused, plain)
                      for plain, fused in zip(plain_bytes, fused_bytes))
    embedding = traffic["tokens"] * model.hidden * layout.act_bytes * 4 / device.hbm_bytes_s
    pp_send = where(pp > 1, 2 * virtual_stages * pp_link.send_s(traffic["activation_bytes"] / layout.tp), 0.0)

    def stage(layers, dense_of_moe_model, mtp, head):
        dense_layers = where(moe_on, dense_of_moe_model, layers)
        moe = layers - dense_layers + where(moe_on, mtp, 0.0)  # an MTP module: one layer of the last kind
        dense_layers = dense_layers + where(moe_on, 0.0, mtp)
        forward = dense_layers * parts["dense_f"] + moe * parts["moe_layer_f"] + head * heads * (out_f + loss_f)
        backward = dense_layers * parts["dense_b"] + moe * parts["moe_layer_b"] + head * heads * (out_b + loss_b)
        recompute = dense_layers * parts["recompute_dense"] + moe * parts["recompute_moe"]
        wgrad = dense_layers * parts["w_dense"] + moe * parts["w_moe"] + head * heads * out_w
        send = overlapped_s(pp_send, forward + backward, 0.0) if pp_overlap else pp_send
        detail = {f"_{kind}": _stage_detail(ops["detail"], kind, dense_layers, moe, layout.recompute == 2)
                  for kind in _LAYER_DETAIL}
        selective_core = where(layout.recompute == 1, (dense_layers + moe) * ops["attention_f"], 0.0)
        detail["_flop"] = detail["_flop"] + selective_core + head * heads * (out_f + out_b)
        comm = {"tp_traffic": dense_layers * traffic["tp"]["dense"][0] + moe * traffic["tp"]["moe"][0],
                "comm_sms": dense_layers * traffic["tp"]["dense"][1] + moe * traffic["tp"]["moe"][1],
                "cp_traffic": (dense_layers + moe) * traffic["cp_s"],
                "host_launch": dense_layers * traffic["host"]["dense"] + moe * traffic["host"]["moe"],
                "ep_all_to_all": moe * traffic["ep_s"], "pp_traffic": send}
        return {"forward": forward, "backward": backward, "recomputation": recompute, "_w": wgrad, **comm,
                "_comm": sum(comm.values()), **detail}

    single = where(pp == 1, 1.0, 0.0)
    first = stage(first_layers, first_dense, single * model.mtp_layers, single)
    first["forward"] = first["forward"] + embedding
    first["backward"] = first["backward"] + embedding
    return first, stage(middle_layers, rest_dense, 0.0, 0.0), stage(last_layers, rest_dense, model.mtp_layers, 1.0)


def _stage_detail(detail: dict, kind: str, dense_layers, moe_layers, full_recompute):
    """A stage's time per micro-batch in one category of named kernels (``detail``, by layer kind and
    direction; grouped GEMMs and shuffles only in MoE layers), a fully recomputed forward again."""
    def layers(direction):
        dense = detail.get(f"{kind}_dense_{direction}", 0.0)
        moe = detail.get(f"{kind}_moe_{direction}", detail.get(f"{kind}_{direction}"))
        return sum(count * value for count, value in ((dense_layers, dense), (moe_layers, moe))
                   if np.ndim(value) or value != 0)

    forward = layers("f")
    return forward + layers("b") + (where(full_recompute, forward, 0.0) if np.ndim(forward) or forward else 0.0)


def _slowest(stages: tuple[dict, dict, dict], pp, dualpipe: bool):
    """Each stage's time per micro-batch (NaN for a stage the pipeline lacks: a middle one exists
    from p = 3, a last one apart from the first from p = 2), a reader of the slowest stage's
    figures, and the mean stage time. Under DualPipe a rank holds stage i and stage p - 1 - i and
    runs half the micro-batches on each, so the first rank's figures are the mean of the first and
    last stages'."""
    if dualpipe:
        first, middle, last = stages
        paired = {key: (first[key] + last[key]) / 2 for key in first}
        stages = (paired, middle, paired)

    def total(s):
        return s["forward"] + s["backward"] + s["recomputation"] + s["_comm"]

    first_s, middle_s, last_s = (total(s) for s in stages)
    stage_s = [first_s, where(pp >= 3, middle_s, np.nan), where(pp >= 2, last_s, np.nan)]
    slowest = np.argmax(np.stack(np.broadcast_arrays(first_s, where(pp >= 3, middle_s, -np.inf),
                                                     where(pp >= 2, last_s, -np.inf))), axis=0)
    first = int(slowest.flat[0])
    if np.ndim(slowest) == 0 or not np.any(slowest != first):  # one stage is the slowest everywhere
        pick = lambda key: np.asarray(stages[first][key])  # noqa: E731
    else:
        pick = lambda key: np.choose(slowest, np.broadcast_arrays(*(s[key] for s in stages)))  # noqa: E731

    middles = np.maximum(pp - 2, 0)

    def mean(of):
        """The mean over the pipeline's stages of ``of(stage)``: the first, p - 2 middle ones and the last."""
        first_v, middle_v, last_v = (of(s) for s in stages)
        return where(pp == 1, first_v, (first_v + last_v + middles * where(pp >= 3, middle_v, 0.0))
                        / np.maximum(pp, 1))

    means = {"stage": mean(total), "w": mean(lambda s: s["_w"]),
             "compute_b": mean(lambda s: s["backward"] + s["recomputation"]), "comm": mean(lambda s: s["_comm"])}
    return stage_s, pick, means


def pipeline_bubble_s(schedule: str, pp, virtual_stages, means: dict):
    """Idle time per step of the slowest rank, from the mean stage's per-micro-batch times (F + B
    with B the whole backward, W its weight-gradient GEMMs): 1F1B (p - 1)(F + B), interleaved over
    v virtual stages (p - 1)(F + B) / v (Narayanan et al. SC21 2.2.2); ZB-H1 (p - 1)(F + B - 2W)
    (Qi et al., ICLR 2024); DualPipe (p/2 - 1)(F&B + B - 3W), F&B the overlapped forward and
    backward pair, their compute (deepseek-ai/DualPipe README; DeepSeek-V3 report Table 2)."""
    stage, w = means["stage"], means["w"]
    if schedule == "zb-h1":
        return (pp - 1) * np.maximum(stage - 2 * w, 0.0)
    if schedule == "dualpipe":
        compute = stage - means["comm"]
        return np.maximum(pp / 2 - 1, 0.0) * np.maximum(compute + means["compute_b"] - 3 * w, 0.0)
    return (pp - 1) / virtual_stages * stage


def in_flight_micro_batches(schedule: str, pp, virtual_stages, micro_batches, rank=0.0):
    """Micro-batches whose activations pipeline rank ``rank`` holds at the peak, in units of its
    layers' activations for one micro-batch, its layers spread evenly over its chunks
    (:func:`held_layer_passes` places them): the forward passes its schedule runs before its first
    backward, plus the one in flight, never more than the step's micro-batches. 1F1B and ZB-H1:
    p - r; interleaved over v chunks (Megatron-Core's schedules.py, get_pp_rank_microbatches):
    2 (p - r - 1) + (v - 1) p warm-up chunk passes, each 1 / v of the rank's layers, so rank 0 holds
    p (1 + (p - 1) / (p v)) (Korthikanti et al. 2022, 4.2.3) when the step has that many micro-batches,
    and no more than the m it has; DualPipe p + 1 (its README's table)."""
    if schedule == "dualpipe":
        return np.minimum(pp + 1, micro_batches)
    plain = pp - rank
    interleaved = (2 * (pp - rank - 1) + (virtual_stages - 1) * pp + 1) / virtual_stages
    return np.minimum(where(virtual_stages > 1, interleaved, plain), micro_batches)


def held_layer_passes(schedule: str, pp, virtual_stages, micro_batches, rank, layers, short_chunk, shortfall):
    """Layer passes (one layer's activations for one micro-batch) pipeline rank ``rank`` holds at the
    peak. Interleaved over v chunks the rank's forwards run p micro-batches on chunk 0, then p on
    chunk 1, and so on round the chunks (Megatron-Core's schedules.py, microbatch group size p), so
    the 2 (p - r - 1) + (v - 1) p + 1 forwards held at the peak fall unevenly: chunk 0 holds the most
    (rank 0, p = 16, v = 2: 31 micro-batches on chunk 0, 16 on chunk 1). Each chunk holds 1 / v of
    a full rank's layers but chunk ``short_chunk``, which has ``shortfall`` fewer (a first stage's
    layers come off its first chunk, the first virtual stage; a last stage's off its last). Other
    schedules hold :func:`in_flight_micro_batches` times the rank's ``layers``."""
    v = np.asarray(virtual_stages, float)
    plain = layers * in_flight_micro_batches(schedule, pp, v, micro_batches, rank)
    if schedule == "dualpipe" or not np.any(v > 1):
        return plain
    full_chunk = (layers + shortfall) / v
    forwards = np.minimum(2 * (pp - rank - 1) + (v - 1) * pp + 1, micro_batches * v)
    rounds = np.floor(forwards / (pp * v))
    rest = forwards - rounds * pp * v

    def count(chunk):
        return np.minimum(rounds * pp + np.clip(rest - chunk * pp, 0.0, pp), micro_batches)

    # The chunks before floor(rest / p) ran one more group of p, the next a partial one, the rest none.
    ahead = np.minimum(np.floor(rest / pp), v)
    partial = where(ahead < v, count(ahead), 0.0)
    total = (ahead * np.minimum(rounds * pp + pp, micro_batches) + partial
             + np.maximum(v - ahead - 1, 0.0) * np.minimum(rounds * pp, micro_batches))
    held = full_chunk * total
    if np.any(shortfall > 0):
        held = held - shortfall * count(short_chunk)
    return where(v > 1, held, plain)


STAGE_PARTS = ("forward", "backward", "recomputation", "comm_sms", "host_launch", "tp_traffic", "cp_traffic",
               "ep_all_to_all", "pp_traffic")


def transformer_step(*, model: Model, layout: Layout, device: Device, pp, virtual_stages, micro_batches,
                     schedule: str, stage_layer_counts, tp_link: Link, cp_link: Link, dispatch: Dispatch,
                     pp_link: Link, optimizer_shards, grad_accumulation_fused, grad_bytes, host: Host) -> dict:
    """Per-step times of a transformer on the slowest pipeline stage, before data parallelism.

    Returns ``parts`` (seconds per step, keyed by :data:`STEP_KEYS` but for the stragglers, the
    exposed data-parallel traffic and host preprocessing, which the job adds), ``stage_s``
    (per micro-batch, a list of the stages: first, middle, last; NaN for a stage the pipeline does not have),
    ``backward_s`` (the last micro-batch's backward on that stage: the window for gradient
    reduction), ``compute_s`` and ``detail`` (per step on that stage: FP8 quantization, FLOP-bound
    work, grouped expert GEMMs, token shuffles and router kernels inside the compute parts, by
    :data:`_LAYER_DETAIL`). DualPipe overlaps the pipeline sends with compute as well as the
    all-to-all (``dispatch.overlap``).
    """
    ops = layer_times_s(model, layout, device)
    parts = _layer_parts(ops, layout)
    traffic = _layer_traffic_s(model, layout, ops, parts, device, tp_link, cp_link, dispatch)
    traffic["host"] = _host_exposed_s(model, layout, ops, parts, host)
    dualpipe = schedule == "dualpipe"
    stages = _stages(model, layout, device, ops, parts, pp, virtual_stages, stage_layer_counts, pp_link, traffic,
                     dualpipe)
    stage_s, pick, means = _slowest(stages, pp, dualpipe)
    step_parts = {key: micro_batches * pick(key) for key in STAGE_PARTS}
    step_parts["pipeline_bubble"] = pipeline_bubble_s(schedule, pp, virtual_stages, means)
    local_params = optimizer_shards["dense"] + optimizer_shards["experts"]
    accumulate = where(grad_accumulation_fused, 0.0, local_params * (WGRAD_BYTES + 2 * grad_bytes)
                          / device.hbm_bytes_s)
    step_parts["backward"] = step_parts["backward"] + micro_batches * accumulate
    updated = (optimizer_shards["dense"] / optimizer_shards["dense_shards"]
               + optimizer_shards["experts"] / optimizer_shards["expert_shards"])
    # FP8 weights: cast once a step, as any tensor (Transformer Engine caches them over the micro-batches).
    weight_casts = where(layout.fp8, local_params * layout.fp8_cast_bytes, 0.0)
    step_parts["optimizer"] = (updated * ADAM_BYTES_PER_PARAM + weight_casts) / device.hbm_bytes_s
    return {
        "parts": step_parts,
        "detail": {kind: micro_batches * pick(f"_{kind}") if any(np.ndim(stage[f"_{kind}"]) or stage[f"_{kind}"]
                                                                 for stage in stages) else np.zeros(())
                   for kind in _LAYER_DETAIL},
        "stage_s": stage_s,
        "backward_s": pick("backward") + pick("recomputation") + accumulate,
        "compute_s": sum(step_parts[k] for k in ("forward", "backward", "recomputation")),
    }


def activation_bytes_per_layer(model: Model, layout: Layout, moe_layer) -> np.ndarray:
    """Activations one layer keeps for backward, per micro-batch, on one rank (bytes).

    Korthikanti et al. 2022, per token with 2-byte activations: norms' inputs 2h + 2h, the QKV and
    first-MLP inputs 2h + 2h, two dropout masks h + h (these 10 h are repeated on every TP rank
    unless sequence parallelism splits them; a Llama-style, gated layer trains without dropout and
    keeps no masks: PyTorch's dropout at p = 0 returns its input), Q and K 2(a + kv) d, V 2 kv d,
    the projection's input 2 a d, the MLP's activation input 2 f (x2 gated) and second input 2 f, and without a fused
    attention kernel the scores 5 a s (softmax output, dropout mask and output), all / t (a rank
    keeps at least one key/value head). For MHA and f = 4h: s b h (34 + 5 a s / h), the paper's
    form. With MLA: the query and key/value up-projections' inputs 2 r_q + 2 r_kv (replicated),
    Q and K 2 a d_qk / t each, V and the projection's input 2 a d_v / t each. Selective
    recomputation drops the score term; full recomputation keeps only the layer's input 2 h (/ t
    with SP). A MoE layer keeps, for each of its top-k token-expert pairs (x imbalance, experts split
    over ETP), the permuted token 2 h and the MLP part, and the MLP part of its shared experts (over
    TP). The recompute modules (DeepSeek-V3 3.2.3; Megatron-Core's layernorm and mla_up_proj) drop
    the norms' outputs (the QKV and first-MLP inputs) and MLA's up-projected Q, K and V; with FP8
    caching (DeepSeek-V3 3.3.2) every kept weight-GEMM input takes 1 byte instead of 2.
    """
    tokens = layout.micro_batch * model.seq / layout.cp
    t = layout.tp
    scale = layout.act_bytes / 2
    gemm_in = where(layout.fp8 & layout.fp8_cache, 1.0, 2.0)  # bytes of a kept GEMM input, 16-bit units
    h, d = model.hidden, model.head_dim
    norm_outputs = where(layout.recompute_norms, 0.0, 2 * gemm_in * h)
    dropout_masks = where(model.gated, 0.0, 2 * h)  # Llama-style layers train without dropout
    replicated = where(layout.sp, 1 / t, 1.0) * (4 * h + dropout_masks + norm_outputs)
    kv = model.kv_heads_per_rank(t)
    standard = (2 * model.heads / t + 2 * kv) * d + 2 * kv * d + gemm_in * model.heads * d / t
    up_projected = where(layout.recompute_up_proj, 0.0, 4 * model.qk_head_dim + 2 * model.v_head_dim)
    latent = (gemm_in * (model.q_lora_rank + model.kv_lora_rank)
              + model.heads / t * (up_projected + gemm_in * model.v_head_dim))
    attention = where(model.mla, latent, standard)
    scores = where(layout.flash | (layout.recompute >= 1), 0.0, 5 * model.heads * model.keys / t)

    def mlp(width, split):
        return (2 * width * where(model.gated, 2.0, 1.0) + gemm_in * width) / split

    # Each token-expert pair also keeps its permuted copy of the token, the first expert GEMM's input.
    routed = model.top_k * model.imbalance * (gemm_in * h + mlp(model.expert_ffn, layout.etp)) * layout.etp / t
    mlp_terms = where(moe_layer, routed + model.shared_experts * mlp(model.expert_ffn, t), mlp(model.ffn, t))
    kept = tokens * scale * (replicated + attention + scores + mlp_terms)
    layer_input = tokens * scale * 2 * h * where(layout.sp, 1 / t, 1.0)
    return where(layout.recompute == 2, layer_input, kept)


def activation_bytes_peak(model: Model, layout: Layout, schedule: str, pp, virtual_stages, micro_batches,
                          stage_layer_counts) -> np.ndarray:
    """Activations the busiest rank holds: of the first stage (rank 0, with the leading dense layers
    of an MoE), the first middle one (rank 1) and the last (rank p - 1, or rank 0 without a
    pipeline), the most of its layer passes held (:func:`held_layer_passes`) times its mean layer's
    activations, the last with one micro-batch's logits as its loss keeps them
    (:func:`logits_bytes`); with full recomputation one layer's activations are rebuilt at a time on
    top."""
    dense = activation_bytes_per_layer(model, layout, False)
    has_moe = model.experts > 0
    moe = activation_bytes_per_layer(model, layout, True) if np.asarray(has_moe).any() else dense
    first_layers, middle_layers, last_layers = stage_layer_counts
    dense_total = model.layers - model.moe_layers
    first_dense = np.minimum(dense_total, first_layers)
    rest_dense = where(pp > 1, (dense_total - first_dense) / np.maximum(pp - 1, 1), 0.0)

    def held(layers, dense_layers, rank, short_chunk):
        dense_layers = where(has_moe, np.minimum(dense_layers, layers), layers)
        per_layer = (dense_layers * dense + (layers - dense_layers) * moe) / np.maximum(layers, 1.0)
        shortfall = np.maximum(middle_layers - layers, 0.0)
        return per_layer * held_layer_passes(schedule, pp, virtual_stages, micro_batches, rank, layers,
                                             short_chunk, shortfall)

    logits = logits_bytes(model, layout)
    peak = held(first_layers, first_dense, 0.0, 0.0) + where(pp == 1, logits, 0.0)
    peak = np.maximum(peak, where(pp >= 3, held(middle_layers, rest_dense, 1.0, 0.0), 0.0))
    peak = np.maximum(peak, where(pp >= 2, held(last_layers, rest_dense, pp - 1, virtual_stages - 1) + logits, 0.0))
    full = layout.recompute == 2
    rebuilt = 0.0
    if np.asarray(full).any():  # one layer's activations rebuilt at a time on top of the kept inputs
        kept = Layout(**{**layout.__dict__, "recompute": np.zeros_like(layout.recompute)})
        rebuilt = where(full, activation_bytes_per_layer(model, kept, has_moe), 0.0)
    return peak + rebuilt


def logits_bytes(model: Model, layout: Layout) -> np.ndarray:
    """One micro-batch's logits on a rank as its loss holds them: its tokens (over CP) times its share
    of the vocabulary (over TP) times :data:`LOGIT_BYTES` (fused or not)."""
    per_logit = where(layout.cross_entropy_fused, LOGIT_BYTES[True], LOGIT_BYTES[False])
    return layout.micro_batch * model.seq / layout.cp * model.vocab / layout.tp * per_logit


def offloaded_activation_bytes(peak_bytes, layer_bytes, offloaded_layers, stage_layers):
    """Activations a rank holds when ``offloaded_layers`` of its ``stage_layers`` send theirs to host
    memory (Megatron-Core's cpu_offloading_num_layers): the rest of the peak, plus two layers' worth
    in HBM while they copy (one going out, one coming back)."""
    kept = 1 - offloaded_layers / np.maximum(stage_layers, 1.0)
    return peak_bytes * kept + where(offloaded_layers > 0, 2 * layer_bytes, 0.0)


def offload_exposed_s(offloaded_bytes, host_link_gbyte_s, forward_s, backward_s):
    """Time per micro-batch an activation offload adds: the offloaded layers' activations go out over
    the GPU's host link (one way, copy engines) during the forward and come back during the backward,
    each hidden behind that pass's compute; what outlasts it shows."""
    copy_s = offloaded_bytes / (host_link_gbyte_s * 1e9)
    return np.maximum(copy_s - forward_s, 0.0) + np.maximum(copy_s - backward_s, 0.0)


def memory_per_gpu_bytes(*, dense_params, expert_params, tp, pp, ep, etp, dp, expert_dp, zero_stage, weight_bytes,
                         grad_bytes, optimizer_bytes_per_param, activation_bytes, copies=1.0):
    """Per-GPU HBM footprint by term, stacked along the first axis in ``MEMORY_TERMS`` order.

    Dense weights split over TP x PP, experts over ETP x PP x EP; ZeRO stage 1/2/3 shards optimizer
    states / gradients / weights over the copies of each: ``dp`` for dense weights (the data-parallel
    x context-parallel ranks, which hold the same weights: Megatron-Core's distributed optimizer shards
    over its dp_cp group, TorchTitan's FSDP over dp_shard x cp), ``expert_dp`` for experts.
    ``copies``: stages a rank holds the weights and gradients of (DualPipe: 2; their gradients are
    summed before one optimizer step).
    """
    dense, experts = dense_params / (tp * pp), expert_params / (etp * pp * ep)

    def sharded(bytes_per_param, stage):
        return (dense * bytes_per_param / where(zero_stage >= stage, dp, 1.0)
                + experts * bytes_per_param / where(zero_stage >= stage, expert_dp, 1.0))

    return np.stack(np.broadcast_arrays(copies * sharded(weight_bytes, 3), copies * sharded(grad_bytes, 2),
                                        sharded(optimizer_bytes_per_param, 1), activation_bytes))


def allocatable_gib(hbm_gib, params: TrainingParams = TrainingParams()):
    """HBM a training job can allocate: the device's reported total less the fixed reserve."""
    return hbm_gib - params.hbm_reserved_gib


def memory_verdict(terms_bytes, hbm_gib, params: TrainingParams = TrainingParams()):
    """(fits, total bytes, index of the dominant term into ``MEMORY_TERMS``): the terms against
    :func:`allocatable_gib` (an unknown capacity, NaN, fits everything)."""
    total = terms_bytes.sum(axis=0)
    fits = ~(total > allocatable_gib(hbm_gib, params) * GIB)
    return fits, total, np.argmax(terms_bytes, axis=0)


def exposed_dp_s(dp_comm_s, window_s, on_copy_engines, params: TrainingParams = TrainingParams()):
    """Data-parallel traffic left after what ``window_s`` of compute hides: a copy-engine
    collective (HFReduce) hides behind ``dp_overlap_fraction`` of it, an SM-based one (NCCL) only
    ``sm_collective_overlap`` of that."""
    hideable = params.dp_overlap_fraction * window_s
    hidden = where(on_copy_engines, hideable, hideable * params.sm_collective_overlap)
    return np.maximum(dp_comm_s - hidden, 0.0)


def beside_collective_s(hidden_s, on_copy_engines, gemm_slowdown):
    """Extra compute time while an SM-based collective runs hidden beside it for ``hidden_s``: the
    compute runs ``gemm_slowdown`` slower meanwhile (the family's measurement; NaN: none). A
    copy-engine collective (HFReduce) holds no SMs and slows nothing."""
    return where(on_copy_engines | np.isnan(gemm_slowdown), 0.0, gemm_slowdown * hidden_s)


def assemble_step(parts: dict, exposed_dp, data_s):
    """Step time, its parts in ``STEP_KEYS`` order (broadcast to one shape) and the index of the
    largest; host preprocessing is a floor under the GPU time and binds when it is longer."""
    gpu_s = sum(parts.values()) + exposed_dp
    total = np.maximum(gpu_s, data_s)
    ordered = np.broadcast_arrays(*(parts.get(key, 0.0) for key in STEP_KEYS[:-2]), exposed_dp,
                                  np.maximum(data_s - gpu_s, 0.0))
    bound = where(data_s > gpu_s, len(STEP_LABELS) - 1, np.argmax(np.stack(ordered[:-1]), axis=0))
    return total, ordered, bound


def weak_scaling_efficiency(step_s, reference_step_s):
    """T(n0) / T(n): same work per GPU."""
    return np.asarray(reference_step_s) / np.asarray(step_s)


def strong_scaling_efficiency(gpus, step_s, reference_gpus, reference_step_s):
    """n0 T(n0) / (n T(n)): same total work."""
    return np.asarray(reference_gpus) * np.asarray(reference_step_s) / (np.asarray(gpus) * np.asarray(step_s))
