"""The training stage: a workload's layout checked against the cluster, its step layer by layer
(or a CNN's from its FLOPs), data parallelism, memory, speed, and time and cost to train (formulas
and sources in :mod:`simcore.formulas.transformer`, :mod:`simcore.formulas.training` and
:mod:`simcore.formulas.collectives`)."""
from dataclasses import dataclass

import numpy as np

from simcore.arrays import label, where
from simcore.document import parse_workload, workload_field_errors
from simcore.errors import ScenarioError
from simcore.formulas import attention, collectives, cost, host, overlap, training, transformer
from simcore.formulas.collectives import CollectiveParams
from simcore.formulas.compute import straggler_slowdown
from simcore.formulas.node import domain_io, nccl_domain, scaleup_domain_gpus
from simcore.formulas.power import HOURS_PER_YEAR
from simcore.formulas.reliability import SECONDS_PER_DAY
from simcore.stages.cluster import constraint

PRECISION_PEAK = {"tf32": "peak_tf32_tflops", "fp16": "peak_fp16_tflops", "bf16": "peak_fp16_tflops",
                  "fp8": "peak_fp8_tflops", "nvfp4": "peak_fp4_tflops", "mxfp4": "peak_fp4_tflops"}
LOW_PRECISIONS = ("fp8", "nvfp4", "mxfp4")  # GEMMs that quantize their operands (BF16 elsewhere)
FP4_PRECISIONS = ("nvfp4", "mxfp4")
INFEASIBLE_REASONS = (
    "",
    "the job needs more GPUs than the cluster has",
    "TP x PP x CP does not divide the job's GPUs",
    "EP x expert TP does not divide TP x CP x DP (the ranks of a pipeline stage)",
    "the global batch is smaller than one micro-batch per data-parallel rank",
    "the global batch does not split evenly into micro-batches",
    "TP is larger than a scale-up domain (a node, or the NVLink rack it belongs to)",
    "PP exceeds the layers (a stage needs a layer)",
    "TP does not divide the attention heads",
    "CP does not divide the sequence",
    "EP does not divide the routed experts (or the model has none)",
    "interleaving needs PP > 1 and at least as many layers as virtual stages on every stage",
    "a CNN trains data-parallel only (TP, PP and CP apply to transformers)",
    "the first and last stages' layers must leave a whole number, at least one, for every other stage",
    "DualPipe needs an even PP of at least 2",
    "zero-bubble and DualPipe schedules take one stage per rank (virtual_stages 1)",
    "node-limited routing (moe_max_domains) cannot exceed the expert-parallel ranks",
    "activation offloading cannot offload more layers than a pipeline stage holds",
    "does not fit in HBM",
)
MEMORY_REASON = len(INFEASIBLE_REASONS) - 1
TOO_FEW_GPUS_REASON = 1  # the job needs more GPUs than the cluster has
UNEVEN_GROUPS, UNEVEN_MICRO_BATCHES = 2, 5  # the reasons a stored workload's own splits can give
# The fields whose values a workload's broken rule quotes, by the field it names.
RULE_FIELDS = {"tp": ("tp", "heads"), "pp": ("pp", "layers"), "cp": ("cp", "seq_len"), "ep": ("ep", "experts"),
               "virtual_stages": ("virtual_stages", "pp", "layers"),
               "first_stage_layers": ("first_stage_layers", "last_stage_layers", "pp", "layers"),
               "moe_max_domains": ("moe_max_domains", "ep"), "global_batch": ("global_batch", "micro_batch"),
               "offload_activation_layers": ("offload_activation_layers", "layers", "pp"),
               "gpus": ("gpus", "tp", "pp", "cp")}
# Where a parallel group's traffic runs; the last: groups that fit a scale-up domain's size but cannot
# all sit whole in the cluster's domains, so some span two and cross the network.
PLACEMENTS = ("none", "scale-up", "PCIe", "network", "network: groups cross scale-up domains")
ACROSS_DOMAINS = 4


def whole_in_domains(reach, domain, job_gpus, cluster_gpus):
    """Whether the job's groups of ``reach`` consecutive GPUs can all sit whole inside scale-up
    domains of ``domain`` GPUs: the domain divides into such groups, or the cluster has domains
    enough for them packed floor(domain / reach) to a domain, the rest of each left idle (1,152
    GPUs in TP 8 x EP 8 groups of 64 need 18 NVL72 racks, not 16)."""
    per_domain = np.maximum(np.floor(domain / reach), 1.0)
    return (domain % reach == 0) | (np.ceil(job_gpus / reach / per_domain) <= np.ceil(cluster_gpus / domain))


def workload_rules(w, stage_layer_counts) -> tuple:
    """(the field to name, the problem per point) of each layout rule the workload alone decides, in
    ``INFEASIBLE_REASONS`` order: the last before memory, after those that need the cluster."""
    transformer = w["kind"] == "transformer"
    heads = w["heads"] if transformer else np.array(np.nan)
    experts = w["experts"]
    first, middle, last = stage_layer_counts
    fewest = np.fmin(np.fmin(first, where(w["pp"] > 2, middle, np.inf)), where(w["pp"] > 1, last, np.inf))
    uneven = np.isfinite(w["first_stage_layers"]) | np.isfinite(w["last_stage_layers"])
    schedule = w["pipeline_schedule"]
    return (
        ("pp", transformer & (w["pp"] > where(np.isnan(w["layers"]), np.inf, w["layers"]))),
        ("tp", transformer & (np.fmod(heads, w["tp"]) > 0)),
        ("cp", transformer & ((w["seq_len"] * w["resolution_scale"] ** 2) % w["cp"] != 0)),
        ("ep", (w["ep"] > 1) & ((experts < 1) | (experts % w["ep"] != 0))),
        ("virtual_stages", (w["virtual_stages"] > 1) & ((w["pp"] < 2) | (fewest < w["virtual_stages"]))),
        ("tp", (not transformer) & ((w["tp"] > 1) | (w["pp"] > 1) | (w["cp"] > 1))),
        ("first_stage_layers", transformer & uneven & ((w["pp"] < 2) | (middle != np.floor(middle)) | (middle < 1)
                                                       | (first < 1) | (last < 1))),
        ("pp", (schedule == "dualpipe") & ((w["pp"] < 2) | (w["pp"] % 2 != 0))),
        ("virtual_stages", (schedule != "1f1b") & (w["virtual_stages"] > 1)),
        ("moe_max_domains", w["moe_max_domains"] > w["ep"]),
        ("offload_activation_layers", (w["offload_activation_layers"] > 0)
         & (np.logical_not(transformer) | (w["offload_activation_layers"] > fewest))),
    )


def workload_errors(workload: dict) -> dict[str, str]:
    """Every rule a workload document breaks on its own, before any cluster is chosen (what a
    stored workload must satisfy), each bad field with its reason: its fields' types and ranges,
    the fields its kind needs, its shape (:func:`simcore.document.workload_field_errors`), the
    layout rules it decides alone, and the splits that no cluster can make whole (a global batch
    in whole micro-batches, a stated GPU count in whole TP x PP x CP groups)."""
    try:
        w = parse_workload(workload, required=False)
    except ScenarioError as error:
        return {error.field.removeprefix("workload."): error.reason}
    errors = workload_field_errors(w)
    if errors:
        return errors
    counts = training.stage_layers(w["layers"], w["pp"], w["first_stage_layers"], w["last_stage_layers"])
    rules = workload_rules(w, counts)
    named = [(name, bad, INFEASIBLE_REASONS[code])
             for code, (name, bad) in enumerate(rules, start=MEMORY_REASON - len(rules))]
    named += [("global_batch", w["global_batch"] % w["micro_batch"] != 0, INFEASIBLE_REASONS[UNEVEN_MICRO_BATCHES]),
              ("gpus", ~np.isnan(w["gpus"]) & (w["gpus"] % (w["tp"] * w["pp"] * w["cp"]) != 0),
               INFEASIBLE_REASONS[UNEVEN_GROUPS])]
    for name, bad, reason in named:
        if np.ndim(bad) == 0 and bool(bad):
            errors.setdefault(name, _quoted(reason, name, w))
    return errors


def _quoted(reason: str, name: str, w: dict) -> str:
    """A broken rule's reason with the values of the fields it relates (one-value fields only)."""
    values = ", ".join(f"{key} {float(w[key]):g}" for key in RULE_FIELDS.get(name, ())
                       if np.ndim(w[key]) == 0 and np.isfinite(w[key]))
    return f"{reason} ({values})" if values else reason


def layout_checks(w, job_gpus, nodes, g, domain, dp, micro_batches, stage_layer_counts):
    """Per-point layout problems as codes into ``INFEASIBLE_REASONS`` (0 = none). A layout that
    cannot suit the model (TP not dividing the heads, CP the sequence, EP the experts, ...) is bad
    input when its fields hold one value each (not a sweep axis): it raises naming the field."""
    rules = (
        (None, job_gpus > nodes * g),
        (None, dp != np.floor(dp)),
        (None, (np.floor(dp) * w["tp"] * w["cp"]) % (w["ep"] * expert_tp(w)) != 0),
        (None, micro_batches < 1),
        (None, micro_batches != np.floor(micro_batches)),
        (None, (w["tp"] > domain) & (w["tp"] > 1)),
    ) + workload_rules(w, stage_layer_counts)
    shape = np.broadcast_shapes(*(np.shape(a) for a in (job_gpus, dp, micro_batches, nodes, w["tp"], w["cp"])))
    reason = np.zeros(shape, np.intp)
    for code, (name, bad) in enumerate(rules, start=1):
        if name is not None and np.ndim(bad) == 0 and bool(bad):
            raise ScenarioError(f"workload.{name}", _quoted(INFEASIBLE_REASONS[code], name, w))
        reason = where(bad & (reason == 0), code, reason)
    return reason


def expert_tp(w):
    """Expert tensor parallelism: the workload's, or TP's (Megatron-Core's default)."""
    return where(np.isnan(w["expert_tp"]), w["tp"], w["expert_tp"])


def transformer_model(w) -> transformer.Model:
    """The workload's transformer with defaults filled (kv heads = heads, head dim = h / a, ...)."""
    heads = w["heads"]
    ffn = where(np.isnan(w["ffn_hidden"]), 4 * w["hidden"], w["ffn_hidden"])
    experts = w["experts"]
    head_dim = where(np.isnan(w["head_dim"]), w["hidden"] / heads, w["head_dim"])
    return transformer.Model(
        layers=w["layers"], hidden=w["hidden"], heads=heads,
        kv_heads=where(np.isnan(w["kv_heads"]), heads, w["kv_heads"]), head_dim=head_dim,
        ffn=ffn, gated=np.array(w["gated_mlp"]), vocab=w["vocab"], tied=np.array(w["tied_embeddings"]),
        seq=w["seq_len"] * w["resolution_scale"] ** 2, causal=np.array(w["causal"]),
        experts=experts, top_k=where(experts > 0, w["moe_top_k"], 0.0),
        expert_ffn=where(experts > 0, where(np.isnan(w["expert_ffn_hidden"]), ffn, w["expert_ffn_hidden"]), 0.0),
        shared_experts=where(experts > 0, w["shared_experts"], 0.0),
        dense_layers=where(experts > 0, w["dense_layers"], 0.0), imbalance=w["moe_imbalance"],
        q_lora_rank=w["q_lora_rank"], kv_lora_rank=w["kv_lora_rank"], rope_head_dim=w["rope_head_dim"],
        v_head_dim=where(np.isnan(w["v_head_dim"]), head_dim, w["v_head_dim"]),
        window=w["attention_window"], mtp_layers=w["mtp_layers"],
    )


def job_domains(w, node, g, job_gpus, cluster_gpus):
    """Scale-up domains the job spans where one spans nodes (0 otherwise): its largest TP, CP or EP
    group that fits a domain packed whole, floor(domain / reach) to a domain (1,024 GPUs in groups
    of 64 take 16 NVL72 racks, not 15), else its GPUs over the domain."""
    domain = scaleup_domain_gpus(node)
    reaches = np.stack(np.broadcast_arrays(w["tp"] * 1.0, w["tp"] * w["cp"], w["ep"] * expert_tp(w)))
    reach = np.max(where(reaches <= domain, reaches, 1.0), axis=0)
    packed = np.floor(domain / reach) * reach
    whole = whole_in_domains(reach, domain, job_gpus, cluster_gpus)
    return where(domain > g, np.ceil(job_gpus / where(whole, packed, domain)), 0.0)


def parallel_links(node, io, family, w, g, dp, job_gpus, cluster_gpus, params: CollectiveParams):
    """Where each parallel group runs: the scale-up link (achievable bus bandwidth from the family's
    nccl-tests share), the PCIe path through the host (half the host link each way), or the
    network (the node's NICs shared by its GPUs), also for groups that fit a domain's size but not
    whole in the cluster's domains (:func:`whole_in_domains`: the slowest spans two, and the step
    waits for it). Returns links and their placement labels."""
    nvlink = w["use_nvlink"]
    topology = node["nvlink_topology"]
    domain = scaleup_domain_gpus(node) if topology == "all-to-all" else (2.0 if topology == "pairs" else 1.0)
    domain = where(nvlink & (node["accelerator"]["scaleup_bw_gbyte_s"] > 0), domain, 1.0)
    scaleup = training.Link(io.scaleup_bw_gbyte_s, params.scaleup_latency_s, True, params)
    pcie = training.Link(io.pcie_bw_gbyte_s / 2, params.hop_latency_s)
    network = training.Link(io.nic_bw_gbyte_s / g, params.hop_latency_s)
    tp, cp, ep = w["tp"], w["cp"], w["ep"]
    # NVLink SHARP reduces in the switches: TP's allreduces (not SP's reduce-scatter and allgather) gain.
    switched = topology == "all-to-all" and node["nvlink_sharp"] and not np.isnan(family.nvls_allreduce_gain)
    sharp_gain = family.nvls_allreduce_gain if switched else 1.0
    tp_scaleup = training.Link(scaleup.bw_gbyte_s * where(w["sequence_parallel"], 1.0, sharp_gain),
                               scaleup.latency_s, True, params)

    def place(span, stride, on_scaleup=scaleup):
        """Group of ``span`` GPUs ``stride`` apart: the first link that holds it."""
        reach = span * stride
        across = (reach <= domain) & ~whole_in_domains(reach, domain, job_gpus, cluster_gpus)
        in_domain = (reach <= domain) & ~across
        in_node = (reach <= g) & ~across
        link = training.pick_link(in_domain, on_scaleup, training.pick_link(in_node, pcie, network))
        code = where(span <= 1, 0, where(in_domain, 1, where(across, ACROSS_DOMAINS, where(in_node, 2, 3))))
        return link, label(PLACEMENTS, code)

    tp_link, tp_where = place(tp, 1, tp_scaleup)
    cp_link, cp_where = place(cp, tp)
    etp = expert_tp(w)
    _, ep_where = place(ep, etp)
    stride = tp * cp * np.maximum(np.floor(dp), 1.0)  # a job too large for the cluster (dp < 1) is infeasible
    pp_link, pp_where = place(where(w["pp"] > 1, 2.0, 1.0), stride)
    # The expert-parallel group: ep ranks etp apart (Megatron-Core's folding), r of them to a scale-up
    # domain (or, without an all-to-all one, a node reached over PCIe), over ep / r domains; a group
    # that cannot sit whole in one spans two, half in each at worst.
    unit = np.maximum(domain, g)
    ranks_in_domain = np.maximum(np.minimum(ep, np.floor(unit / etp)), 1.0)
    ranks_in_domain = where(ep_where == PLACEMENTS[ACROSS_DOMAINS], np.maximum(np.ceil(ep / 2), 1.0),
                               ranks_in_domain)
    on_scaleup = np.minimum(ep * etp, unit) <= domain
    inside = training.pick_link(on_scaleup, scaleup, pcie)
    dispatch = training.Dispatch(
        inside=inside, network=network, ranks_in_domain=ranks_in_domain, domains=np.maximum(ep / ranks_in_domain, 1.0),
        hierarchical=w["moe_dispatcher"] != "alltoall", max_domains=w["moe_max_domains"],
        overlap=w["moe_overlap"] or w["pipeline_schedule"] == "dualpipe", comm_sm_share=comm_sm_share(w, node),
        **dispatcher_rates(family.dispatcher_gbyte_s, w["moe_dispatcher"], on_scaleup, ep),
        **{f"network_{key}": rate for key, rate in dispatcher_rates(family.dispatcher_network_gbyte_s,
                                                                    w["moe_dispatcher"], True, ep).items()})
    links = {"tp": tp_link, "cp": cp_link, "dispatch": dispatch, "pp": pp_link}
    return links, {"tp": tp_where, "cp": cp_where, "ep": ep_where, "pp": pp_where}


def dispatcher_rates(table: dict, dispatcher: str, on_scaleup, ep) -> dict:
    """The dispatcher's measured dispatch and combine rates in a family's ``table`` (inside a scale-up
    domain, or across nodes) at the group's EP size, read geometrically between the measured sizes by
    log2 of the size and held beyond them (NaN where it has none, or where ``on_scaleup`` is false: a
    group whose domain is a node reached over PCIe)."""
    points = table.get(dispatcher)
    if points is None:
        return {"dispatch_gbyte_s": np.nan, "combine_gbyte_s": np.nan}
    sizes, dispatch, combine = (np.log2(np.array(column, float)) for column in zip(*points))
    at = np.log2(np.maximum(np.asarray(ep, float), 1.0))
    return {f"{name}_gbyte_s": where(on_scaleup, 2 ** np.interp(at, sizes, rates), np.nan)
            for name, rates in (("dispatch", dispatch), ("combine", combine))}


def comm_sm_share(w, node):
    """Share of the SMs that overlapped communication kernels take from compute."""
    sms = node["accelerator"]["sm_count"]
    return where(np.isnan(sms), 0.0, np.minimum(w["comm_sms"] / sms, 1.0))


def device_at(acc, family, clock, precision, attention_kernel="default",
              bf16_share=0.0) -> tuple[transformer.Device, np.ndarray]:
    """The accelerator at the workload's GEMM precision (clock-derated peaks, the family's shares,
    the fused attention kernel's measured rates) and that precision's peak in TFLOPS. With NVFP4,
    ``bf16_share`` of the layers run their GEMMs in BF16 (:func:`nvfp4_gemm_fraction`)."""
    peak_tflops = acc[PRECISION_PEAK[precision]]
    if precision == "nvfp4" and family.vendor != "NVIDIA":
        raise ScenarioError("workload.precision", f"NVFP4 is NVIDIA's format (16-element blocks with E4M3 scales): "
                                                  f"the {family.name} family's FP4 is MXFP4 (precision mxfp4)")
    if np.isnan(peak_tflops).any():
        needs = {"nvfp4": " (NVFP4 needs FP4 tensor cores with 16-element block scales: NVIDIA Blackwell and later)",
                 "mxfp4": " (MXFP4 needs FP4 matrix cores with 32-element block scales: AMD CDNA 4, NVIDIA "
                          "Blackwell and later)"}.get(precision, "")
        raise ScenarioError("workload.precision", f"the accelerator has no {precision} peak in the catalogue{needs}")
    gemm_fraction = {"fp8": family.fp8_gemm_fraction, "nvfp4": family.fp4_gemm_fraction,
                     "mxfp4": family.fp4_gemm_fraction}.get(precision, family.gemm_fraction)
    if np.isnan(gemm_fraction):
        raise ScenarioError("workload.precision", f"no measured {precision} GEMM share for the {family.name} family")
    if precision == "nvfp4":
        gemm_fraction = nvfp4_gemm_fraction(family, peak_tflops / acc["peak_fp16_tflops"], bf16_share)
    attention_peak = acc["peak_fp16_tflops"] if precision in LOW_PRECISIONS else peak_tflops
    attention_row = attention.kernel_row(family.key, attention_kernel)
    if attention_row is None:
        raise ScenarioError("workload.attention_kernel",
                            f"no measured {attention_kernel} rates for the {family.name} family")
    hbm = where(np.isnan(acc["memory_bandwidth_gbyte_s"]), family.reference_hbm_gbyte_s,
                   acc["memory_bandwidth_gbyte_s"])
    device = transformer.Device(
        peak_flops=peak_tflops * 1e12 * clock, attention_peak_flops=attention_peak * 1e12 * clock,
        sm_count=where(np.isnan(acc["sm_count"]), family.reference_sm_count, acc["sm_count"]),
        gemm_fraction=np.asarray(gemm_fraction), attention_gemm_fraction=np.asarray(family.gemm_fraction),
        attention_kernel=np.asarray(attention_row), attention_scale=np.asarray(family.attention_scale),
        gemm_operand_bytes=np.asarray({"tf32": 4.0, "fp8": 1.0, "nvfp4": transformer.NVFP4_OPERAND_BYTES,
                                       "mxfp4": transformer.MXFP4_OPERAND_BYTES}.get(precision, 2.0)),
        hbm_bytes_s=hbm * 1e9 * family.hbm_fraction, **grouped_shares(family, precision))
    return device, peak_tflops


def nvfp4_gemm_fraction(family, fp4_over_bf16_peak, bf16_share):
    """The share of the NVFP4 peak a layer stack's GEMMs reach when ``bf16_share`` of its layers stay
    in BF16 (NVIDIA's NVFP4 recipe): the time of a FLOP is (1 - s) / (P4 f4) + s / (P16 f16), which
    over the NVFP4 peak P4 is the share 1 / ((1 - s) / f4 + s (P4 / P16) / f16)."""
    return 1.0 / ((1.0 - bf16_share) / family.fp4_gemm_fraction
                  + bf16_share * fp4_over_bf16_peak / family.gemm_fraction)


def grouped_shares(family, precision) -> dict:
    """The family's measured grouped-GEMM shares at the precision: the FP8 one for FP8 (one figure,
    whatever the groups), for NVFP4 that figure times the NVFP4 over the FP8 dense share (no NVFP4
    grouped GEMM measured: its kernels taken to lose to dense what FP8's do), the BF16 ones by group
    count otherwise (NaN: the dense share)."""
    if precision in LOW_PRECISIONS:
        ratio = family.fp4_gemm_fraction / family.fp8_gemm_fraction if precision in FP4_PRECISIONS else 1.0
        return {"grouped_gemm_fraction": np.asarray(family.fp8_grouped_gemm_fraction * ratio),
                "grouped_eight_ratio": np.asarray(1.0)}
    if precision == "tf32":
        return {"grouped_gemm_fraction": np.asarray(np.nan), "grouped_eight_ratio": np.asarray(1.0)}
    return {"grouped_gemm_fraction": np.asarray(family.grouped_gemm_fraction),
            "grouped_eight_ratio": np.asarray(family.grouped_gemm_fraction_eight / family.grouped_gemm_fraction)}


def host_side(w, node) -> host.Host:
    """What the node's host does for the workload's step (:mod:`simcore.formulas.host`): its CPU's
    measured time per eager launch and per Transformer Engine module (null: an x86 server's) and the
    software features that change them."""
    op_us, module_us = node["host_op_us"], node["host_module_us"]
    return host.Host(op_s=where(np.isnan(op_us), host.X86_HOST_OP_S, op_us * 1e-6),
                     module_s=where(np.isnan(module_us), host.X86_HOST_MODULE_S, module_us * 1e-6),
                     cuda_graphs=np.asarray(w["cuda_graphs"]), router_fused=np.asarray(w["moe_router_fusion"]),
                     permute_fused=np.asarray(w["moe_permute_fusion"]),
                     dispatcher_fused=w["moe_dispatcher"] != "alltoall")


def _transformer_step(w, family, device, links, dp_ranks, m, stage_layer_counts, host_: host.Host,
                      host_link_gbyte_s) -> dict:
    """A transformer's parameters, FLOPs per token and step parts, layer by layer
    (:func:`simcore.formulas.training.transformer_step`)."""
    tp_, pp_, ep_, cp_ = w["tp"], w["pp"], w["ep"], w["cp"]
    etp = expert_tp(w)
    model = transformer_model(w)
    layout = transformer_layout(w, family)
    counts = transformer.parameter_counts(model)
    scale = where(np.isnan(w["params"]), 1.0, w["params"] / counts["total"])
    total_params, expert_params = counts["total"] * scale, counts["experts"] * scale
    held = counts["model_layers_total"] * scale
    model_per_token = transformer.model_flops_per_token(model)
    dense = held - expert_params
    zero = w["zero_stage"] >= 1
    expert_dp = np.maximum(dp_ranks * tp_ * cp_ / (ep_ * etp), 1.0)
    shards = {"dense": dense / (tp_ * pp_), "experts": expert_params / (etp * pp_ * ep_),
              "dense_shards": where(zero, dp_ranks * cp_, 1.0), "expert_shards": where(zero, expert_dp, 1.0)}
    schedule = w["pipeline_schedule"]
    step = training.transformer_step(
        model=model, layout=layout, device=device, pp=pp_, virtual_stages=w["virtual_stages"], micro_batches=m,
        schedule=schedule, stage_layer_counts=stage_layer_counts, tp_link=links["tp"], cp_link=links["cp"],
        dispatch=links["dispatch"], pp_link=links["pp"], optimizer_shards=shards,
        grad_accumulation_fused=np.asarray(w["grad_accumulation_fusion"]), grad_bytes=w["grad_bytes"], host=host_)
    # Activation offloading (training.offloaded_activation_bytes, offload_exposed_s): the busiest stage's
    # layers, each at the larger of a dense and a MoE layer's activations.
    offloaded = w["offload_activation_layers"]
    activations = training.activation_bytes_peak(model, layout, schedule, pp_, w["virtual_stages"], m,
                                                 stage_layer_counts)
    if np.any(offloaded > 0):
        layer_bytes = np.maximum(training.activation_bytes_per_layer(model, layout, False),
                                 training.activation_bytes_per_layer(model, layout, model.experts > 0))
        activations = training.offloaded_activation_bytes(
            activations, layer_bytes, offloaded,
            np.maximum(stage_layer_counts[0], np.maximum(stage_layer_counts[1], stage_layer_counts[2])))
        parts = step["parts"]
        parts["activation_offload"] = m * where(offloaded > 0, training.offload_exposed_s(
            offloaded * layer_bytes, host_link_gbyte_s, parts["forward"] / m,
            (parts["backward"] + parts["recomputation"]) / m), 0.0)
    return {"total_params": total_params, "active": counts["active"] * scale, "expert_params": expert_params,
            "mtp_params": counts["mtp"] * scale, "dense": dense, "expert_dp": expert_dp,
            "local_params": shards["dense"] + shards["experts"], "local_expert_params": shards["experts"],
            "tokens_per_step": w["global_batch"] * model.seq, "model_per_token": model_per_token,
            "hw_per_token": model_per_token + transformer.recompute_flops_per_token(model, layout.recompute,
                                                                                    model_per_token),
            "parts": step["parts"], "detail": step["detail"], "compute_s": step["compute_s"],
            "backward_window": step["backward_s"],
            "activations": activations, "stage_s": step["stage_s"]}


def transformer_layout(w, family) -> transformer.Layout:
    """How the workload lays a transformer layer on a rank: its parallel sizes, recomputation,
    precision, fused kernels, overlap and MoE dispatcher."""
    return transformer.Layout(tp=w["tp"], sp=np.asarray(w["sequence_parallel"]), cp=w["cp"], ep=w["ep"],
                              etp=expert_tp(w), micro_batch=w["micro_batch"],
                              recompute=np.asarray(float(training.RECOMPUTE.index(w["recompute"]))),
                              flash=np.asarray(w["flash_attention"]),
                              act_bytes=np.asarray(4.0 if w["precision"] == "tf32" else 2.0),
                              fused=np.asarray(w["fused_kernels"]), fp8=np.asarray(w["precision"] in LOW_PRECISIONS),
                              recompute_norms=np.asarray(w["recompute_norms"]),
                              recompute_up_proj=np.asarray(w["recompute_mla_up_proj"]),
                              fp8_cache=np.asarray(w["fp8_cached_activations"]),
                              fp8_cast_bytes=fp8_cast_bytes(w, family),
                              ub=tp_overlap(w, family), rope_fused=np.asarray(w["rope_fusion"]),
                              cross_entropy_fused=np.asarray(w["cross_entropy_fusion"]),
                              dispatcher_permutes=np.asarray(w["moe_dispatcher"] != "alltoall"),
                              router_fused=np.asarray(w["moe_router_fusion"]))


def fp8_cast_bytes(w, family):
    """Bytes moved per element the workload's FP8 recipe quantizes (none without FP8 GEMMs; NVFP4's
    cast, :func:`simcore.formulas.transformer.nvfp4_cast_bytes`, on the layers not kept in BF16); MXFP8
    needs tensor cores that scale per 32-element block (Blackwell)."""
    if w["precision"] == "nvfp4":
        return np.asarray(transformer.nvfp4_cast_bytes() * (1.0 - nvfp4_bf16_share(w)))
    if w["precision"] == "mxfp4":
        return np.asarray(transformer.mxfp4_cast_bytes())
    if w["precision"] != "fp8":
        return np.asarray(0.0)
    if w["fp8_recipe"] == "mxfp8" and not family.fp8_columnwise:
        raise ScenarioError("workload.fp8_recipe", f"MXFP8 needs block-scaled FP8 tensor cores (Blackwell); "
                                                   f"the {family.name} family has none")
    return np.asarray(transformer.fp8_cast_bytes(w["fp8_recipe"], family.fp8_columnwise))


def tp_overlap(w, family):
    """The workload's tensor-parallel overlap (:func:`simcore.formulas.overlap.userbuffers`), None when
    it asks for none. As Megatron-Bridge does, it is off where TP is 1 or sequence parallelism is off."""
    if not w["tp_comm_overlap"]:
        return None
    on = w["sequence_parallel"] & (w["tp"] > 1)
    return overlap.userbuffers(on, family.key, w["precision"] in LOW_PRECISIONS, w["hidden"], w["tp"],
                               w["tp_overlap_sms"])


def nvfp4_bf16_share(w):
    """The share of a transformer's layers whose GEMMs stay in BF16 under NVFP4 (0: every one in NVFP4)."""
    return np.minimum(w["nvfp4_bf16_layers"] / np.maximum(w["layers"], 1), 1.0)


def _cnn_step(w, family, device, job_gpus, dp_ranks, m) -> dict:
    """A CNN's step parts from its forward time (data-parallel only: the layout checks refuse TP,
    PP and CP); a full recomputation is one more forward of the three passes."""
    total_params = w["params"]
    recompute_share = where(w["recompute"] == "full", 1 / 3, 0.0)
    forward_s = _cnn_forward_s(w, family, device, job_gpus)
    parts = {"forward": forward_s, "backward": 2 * forward_s, "recomputation": forward_s * recompute_share * 3,
             "optimizer": total_params * training.ADAM_BYTES_PER_PARAM / where(
                 w["zero_stage"] >= 1, dp_ranks, 1.0) / device.hbm_bytes_s}
    model_per_token = 3 * w["flops_per_sample_forward"]
    return {"total_params": total_params, "active": total_params, "expert_params": np.array(0.0),
            "mtp_params": np.array(0.0), "dense": total_params, "expert_dp": dp_ranks, "local_params": total_params,
            "local_expert_params": np.array(0.0),
            "tokens_per_step": w["global_batch"],
            "model_per_token": model_per_token, "hw_per_token": model_per_token * (1 + recompute_share),
            "parts": parts, "compute_s": parts["forward"] + parts["backward"] + parts["recomputation"],
            "detail": {"flop": parts["forward"] + parts["backward"] + parts["recomputation"]},
            "backward_window": parts["backward"] / m,
            "activations": w["activation_bytes_per_sample"] * w["micro_batch"], "stage_s": None}


def _data_parallel(w, node, io, g, nccl_unit, dp_ranks, step, m, params, family, stage_layers,
                   host_op_s) -> tuple[np.ndarray, object, np.ndarray, np.ndarray, dict]:
    """Gradient reduction over the DP (x CP) group by HFReduce or NCCL, the ZeRO-3 weight traffic
    (over NCCL, a transformer's layer by layer as its implementation runs it: ``stage_layers`` the
    slowest stage's layers, 0 for a CNN), what of it the step's compute does not hide, and how much
    longer that compute runs beside the hidden part: (the traffic's time before overlap, the
    reduction's result, exposed time, compute slowdown time, the traffic by kind)."""
    tp_, cp_ = w["tp"], w["cp"]
    reduce_ranks = dp_ranks * cp_
    hfreduce = w["collective"] == "hfreduce"
    all_ok = node["nvlink_topology"] == "all-to-all"
    # NCCL over an all-to-all scale-up domain larger than a node treats the domain as the node.
    unit = g if hfreduce else nccl_unit
    unit_io = domain_io(io, g, unit)
    if hfreduce:
        # HFReduce sums an NVLink pair first only if both GPUs hold the same gradients (no TP).
        dp_nodes, dp_io = _group_io(io, unit_io, unit, reduce_ranks, unit / tp_)
        pair_reduce = (node["nvlink_topology"] == "pairs") & w["use_nvlink"] & (tp_ == 1)
        ar = collectives.hfreduce(step["local_params"] * w["grad_bytes"], dp_nodes, dp_io, nvlink=pair_reduce,
                                  cross_zone=w["cross_zone"], params=params.collectives)
        dp_s = where(reduce_ranks > 1, ar.time_s, 0.0)
    else:
        # Megatron-Core reduces the experts' gradients apart from the rest (their own buffers, over the
        # expert-data-parallel group: ranks holding the same experts, EP x expert-TP apart), so a domain
        # holds domain / (EP x ETP) of that group's ranks, each reaching the others over its own NIC.
        nvlink = all_ok & w["use_nvlink"]
        dense_bytes = (step["local_params"] - step["local_expert_params"]) * w["grad_bytes"]
        dp_nodes, dp_io = _group_io(io, unit_io, unit, reduce_ranks, unit / tp_)
        ar = collectives.nccl_allreduce(dense_bytes, dp_nodes, dp_io, nvlink_all_to_all=nvlink,
                                        params=params.collectives)
        dp_s = where(reduce_ranks > 1, ar.time_s, 0.0)
        has_experts = step["local_expert_params"] > 0
        if np.any(has_experts):  # a dense model's points skip the experts' collective altogether
            expert_ranks = step["expert_dp"]
            expert_nodes, expert_io = _group_io(io, unit_io, unit, expert_ranks,
                                                np.floor(unit / (w["ep"] * expert_tp(w))))
            experts = collectives.nccl_allreduce(np.maximum(step["local_expert_params"] * w["grad_bytes"], 1.0),
                                                 expert_nodes, expert_io, nvlink_all_to_all=nvlink,
                                                 params=params.collectives)
            dp_s = dp_s + where((expert_ranks > 1) & has_experts, experts.time_s, 0.0)
    # ZeRO-3 / FSDP: every micro-batch allgathers the weights for forward and again for backward (and
    # for a fully recomputed forward) and reduce-scatters the gradients, all of which can hide behind the
    # whole step's compute instead of the last backward alone. With NCCL each moves half an allreduce's
    # traffic; HFReduce has only the allreduce (every GPU's whole buffer down to the host and back), so
    # each gather or reduce-scatter built on it costs a whole allreduce.
    fsdp = w["zero_stage"] >= 3
    gathers = 2 + (w["recompute"] == "full")
    per_collective = 1.0 if hfreduce else 0.5
    gather_s = where(fsdp, m * per_collective * dp_s * gathers * w["weight_bytes"] / w["grad_bytes"], 0.0)
    dp_s = where(fsdp, m * per_collective * dp_s, dp_s) + gather_s
    nccl_fsdp = fsdp & np.logical_not(hfreduce) & (stage_layers > 0) & (reduce_ranks > 1)
    calls_s, overlaps = _fsdp_calls(w, nccl_fsdp, reduce_ranks, m * (gathers + 1) * stage_layers, host_op_s, params)
    # Prefetched a layer ahead, each round's first layer (the reduce-scatter's last) has no compute beside it.
    unhidden_s = where(nccl_fsdp & overlaps, (dp_s + calls_s) / np.maximum(stage_layers, 1), 0.0)
    window_s = where(fsdp, where(overlaps, step["compute_s"], 0.0),
                     where(w["overlap_grad_reduce"], step["backward_window"], 0.0))
    exposed_s = training.exposed_dp_s(dp_s + calls_s - unhidden_s, window_s, hfreduce, params.training) + unhidden_s
    detail = {"param_gather": gather_s, "grad_reduce": dp_s - gather_s, "fsdp_calls": calls_s}
    return (dp_s + calls_s, ar, exposed_s,
            training.beside_collective_s(dp_s + calls_s - exposed_s, hfreduce, family.overlap_gemm_slowdown), detail)


def _group_io(io, unit_io, unit, ranks, per_unit) -> tuple[np.ndarray, collectives.NodeIO]:
    """A data-parallel group of ``ranks`` ranks with ``per_unit`` of them to each scale-up domain (or node)
    of ``unit`` GPUs, as collectives see it: its domains, and a domain's I/O shared with the domain's other
    groups of the kind (each of them its share of the NICs and host memory)."""
    per_node = np.maximum(np.minimum(ranks, per_unit), 1)
    shards = unit / per_node
    return np.ceil(ranks / per_node), collectives.NodeIO(
        gpus_per_node=per_node, nic_bw_gbyte_s=unit_io.nic_bw_gbyte_s / shards,
        host_mem_bw_gbyte_s=unit_io.host_mem_bw_gbyte_s / shards, pcie_bw_gbyte_s=io.pcie_bw_gbyte_s,
        root_port_bw_gbyte_s=io.root_port_bw_gbyte_s, shared_root_ports=io.shared_root_ports,
        p2p_bw_gbyte_s=io.p2p_bw_gbyte_s, scaleup_bw_gbyte_s=io.scaleup_bw_gbyte_s, numa_domains=io.numa_domains)


def _fsdp_calls(w, nccl_fsdp, ranks, layer_rounds, host_op_s, params):
    """ZeRO-3 / FSDP over NCCL as its implementation runs it (:data:`training.FSDP`; a choice is one
    value for every point): each of ``layer_rounds`` (a stage's layers times the micro-batches' gathers
    and reduce-scatter) takes ``calls_per_layer`` collectives, each costing a ring's latency and the
    implementation's host ops per rank (:func:`training.fsdp_call_s`). Returns (the calls' time,
    whether the traffic may hide behind compute: always where these calls are not modelled, so that
    HFReduce and a CNN keep their whole-step window)."""
    implementation = training.FSDP[w["fsdp_implementation"]]
    host_ops = params.fitted[implementation.host_ops_constant] if implementation.host_ops_constant else 0.0
    call_s = training.fsdp_call_s(ranks, params.collectives.hop_latency_s, host_op_s, host_ops)
    return (where(nccl_fsdp, layer_rounds * implementation.calls_per_layer * call_s, 0.0),
            np.logical_not(nccl_fsdp) | implementation.overlaps)


def _preprocessing_s(w, node, job_nodes):
    """Host-side preprocessing (video/diffusion workloads): CPU-seconds per sample over the cores."""
    samples_per_node = w["global_batch"] / job_nodes
    preprocessing = (w["preprocess_s_per_sample"] > 0) & (not w["preprocess_cached"])
    if (preprocessing & np.isnan(node["cpu_cores"])).any():
        raise ScenarioError("cluster.node.cpu_cores", "is needed when the workload preprocesses on the host")
    return where(preprocessing, samples_per_node * w["preprocess_s_per_sample"] / node["cpu_cores"], 0.0)


def _memory(w, step, dp_ranks, hbm_gib, params) -> dict:
    """Memory per GPU by term against the HBM the device reports (simcore.formulas.training.memory_per_gpu_bytes)."""
    terms = training.memory_per_gpu_bytes(
        dense_params=step["dense"], expert_params=step["expert_params"], tp=w["tp"], pp=w["pp"], ep=w["ep"],
        etp=expert_tp(w), dp=dp_ranks * w["cp"], expert_dp=step["expert_dp"], zero_stage=w["zero_stage"],
        weight_bytes=w["weight_bytes"], grad_bytes=w["grad_bytes"],
        optimizer_bytes_per_param=w["optimizer_bytes_per_param"], activation_bytes=step["activations"],
        copies=2.0 if w["pipeline_schedule"] == "dualpipe" else 1.0)
    fits, total, dominant = training.memory_verdict(terms, hbm_gib, params.training)
    return {
        "fits": fits,
        "per_gpu_gib": total / training.GIB,
        "hbm_gib": hbm_gib,
        "allocatable_gib": training.allocatable_gib(hbm_gib, params.training),
        **{f"{name.replace(' ', '_')}_gib": terms[i] / training.GIB
           for i, name in enumerate(training.MEMORY_TERMS)},
        "dominant_term": label(training.MEMORY_TERMS, dominant),
    }


@dataclass(frozen=True)
class TrainedJob:
    """What the training stage hands the reliability and cost stages, arrays over scenario points:
    the job's ``gpus`` and ``nodes``, the scale-up ``domains`` its groups span (0 where domains are
    nodes), ``tokens_per_step`` (samples for a CNN), ``checkpoint_bytes`` (B) one save writes,
    ``feasible`` where the layout runs and fits, and ``fault_factor``, the job's own faults as a
    multiple of the profile's per-GPU rate."""

    gpus: np.ndarray
    nodes: np.ndarray
    domains: np.ndarray
    tokens_per_step: np.ndarray
    checkpoint_bytes: np.ndarray
    feasible: np.ndarray
    fault_factor: np.ndarray


def train(p, params, family, clock, io, node, acc, g, nodes) -> tuple[dict, TrainedJob]:
    """The job's step: a transformer layer by layer (simcore.formulas.training.transformer_step), a CNN from
    its FLOPs at the family's convolution share (or a measured forward time); then data
    parallelism, memory, MFU and HFU. Returns the result's training section and the job's figures
    for the reliability and cost stages."""
    w = p["workload"]
    job_gpus = where(np.isnan(w["gpus"]), nodes * g, w["gpus"])
    job_nodes = np.ceil(job_gpus / g)
    dp = job_gpus / (w["tp"] * w["pp"] * w["cp"])
    dp_ranks = np.maximum(np.floor(dp), 1)
    micro_batches = w["global_batch"] / (dp_ranks * w["micro_batch"])
    nccl_unit = nccl_domain(node, w, g)
    stage_layer_counts = training.stage_layers(w["layers"], w["pp"], w["first_stage_layers"], w["last_stage_layers"])
    reason = layout_checks(w, job_gpus, nodes, g, nccl_unit, dp, micro_batches, stage_layer_counts)
    m = np.maximum(np.floor(micro_batches), 1)
    device, peak_tflops = device_at(acc, family, clock, w["precision"], w["attention_kernel"], nvfp4_bf16_share(w))
    links, placement = parallel_links(node, io, family, w, g, dp, job_gpus, nodes * g, params.collectives)
    host_ = host_side(w, node)
    if w["kind"] == "transformer":
        step = _transformer_step(w, family, device, links, dp_ranks, m, stage_layer_counts, host_, io.pcie_bw_gbyte_s)
        stage_layers = np.maximum(np.maximum(stage_layer_counts[0], stage_layer_counts[1]), stage_layer_counts[2])
    else:
        step = _cnn_step(w, family, device, job_gpus, dp_ranks, m)
        stage_layers = 0.0
    dp_s, ar, exposed_dp, beside_dp_s, dp_detail = _data_parallel(w, node, io, g, nccl_unit, dp_ranks, step, m, params,
                                                                  family, stage_layers, host_.op_s)
    step["parts"]["comm_sms"] = step["parts"].get("comm_sms", 0.0) + beside_dp_s
    computing = sum(step["parts"].get(key, 0.0) for key in training.COMPUTE_PARTS)
    step["parts"]["stragglers"] = straggler_slowdown(family.rate_spread, job_gpus) * computing
    step_s, step_parts, step_bound = training.assemble_step(step["parts"], exposed_dp,
                                                          _preprocessing_s(w, node, job_nodes))
    memory = _memory(w, step, dp_ranks, acc["memory_gib"], params)
    fits = memory["fits"]
    feasible = (reason == 0) & fits
    out = {
        "feasible": feasible,
        "infeasible_reason": label(INFEASIBLE_REASONS, where((reason == 0) & ~fits, MEMORY_REASON, reason)),
        "gpus": job_gpus, "nodes": job_nodes, "dp": np.floor(dp), "micro_batches": micro_batches,
        **_speed(step, step_s, step_parts, step_bound, feasible, job_gpus, peak_tflops),
        "compute_detail_s": compute_detail(step["detail"], clock, feasible),
        "dp_allreduce_s": dp_s,
        "dp_detail_s": {key: where(feasible, dp_detail[key], np.nan) for key in training.DP_DETAIL},
        "dp_allreduce_bound": ar.binding,
        "memory": memory,
    }
    if step["stage_s"] is not None:  # a transformer: its stages, where its groups run, its FLOPs per token
        out["stage_time_s"] = {name: where(feasible, stage_s, np.nan)
                               for name, stage_s in zip(("first", "middle", "last"), step["stage_s"])}
        out["placement"] = placement
        out["flops_per_token"] = step["model_per_token"]
    checkpoint_bytes = where(np.isnan(w["checkpoint_bytes"]),
                                step["total_params"] * (w["weight_bytes"] + w["optimizer_bytes_per_param"]),
                                w["checkpoint_bytes"])
    return out, TrainedJob(gpus=job_gpus, nodes=job_nodes, domains=job_domains(w, node, g, job_gpus, nodes * g),
                           tokens_per_step=step["tokens_per_step"], checkpoint_bytes=checkpoint_bytes,
                           feasible=feasible, fault_factor=w["job_fault_factor"])


def compute_detail(detail: dict, clock, feasible) -> dict:
    """What named kernels take of the step's compute parts (:data:`training.COMPUTE_DETAIL`): the time
    the sustained clock adds to the FLOP-bound work (its time at the sustained clock x (1 - clock):
    kernels bound by HBM count as FLOP-bound, so an upper bound), the FP8 quantizations, the grouped
    expert GEMMs, the MoE token shuffles and router kernels (NaN where the job cannot run)."""
    zero = np.zeros(())
    values = {"sustained_clock": detail["flop"] * (1 - clock), "fp8_quantize": detail.get("quantize", zero),
              "grouped_gemm": detail.get("grouped", zero), "moe_permute": detail.get("permute", zero),
              "moe_router": detail.get("router", zero)}
    return {key: where(feasible, values[key], np.nan) for key in training.COMPUTE_DETAIL}


def _speed(step, step_s, step_parts, step_bound, feasible, job_gpus, peak_tflops) -> dict:
    """Parameters, FLOPs per step, step time and its parts, MFU, HFU, TFLOPS per GPU and tokens per
    second (NaN where the job cannot run)."""
    model_flops = step["model_per_token"] * step["tokens_per_step"]
    hw_flops = step["hw_per_token"] * step["tokens_per_step"]
    everywhere = bool(feasible.all())

    def nan_if_infeasible(values):
        """NaN where the job cannot run, broadcast with ``feasible`` (``values`` itself when it runs everywhere)."""
        if not everywhere:
            return where(feasible, values, np.nan)
        if np.ndim(feasible) == 0 or np.shape(feasible) == np.shape(values):
            return values
        return np.broadcast_to(values, np.broadcast_shapes(np.shape(values), np.shape(feasible)))

    peak = peak_tflops * 1e12
    return {
        "params": step["total_params"],
        "active_params": step["active"],
        "expert_params": step["expert_params"],
        "mtp_params": step["mtp_params"],
        "model_flops_per_step": model_flops,
        "hardware_flops_per_step": hw_flops,
        "step_time_s": nan_if_infeasible(step_s),
        "step_parts_s": {key: nan_if_infeasible(part) for key, part in zip(training.STEP_KEYS, step_parts)},
        "step_bound": label(training.STEP_LABELS, step_bound),
        "mfu": nan_if_infeasible(model_flops / (step_s * job_gpus * peak)),
        "hfu": nan_if_infeasible(hw_flops / (step_s * job_gpus * peak)),
        "model_tflops_per_gpu": nan_if_infeasible(model_flops / (step_s * job_gpus) / 1e12),
        "hardware_tflops_per_gpu": nan_if_infeasible(hw_flops / (step_s * job_gpus) / 1e12),
        "tokens_per_s": nan_if_infeasible(step["tokens_per_step"] / step_s),
    }


def _cnn_forward_s(w, family, device, job_gpus):
    """A CNN's forward time per step on one GPU: the measured time per sample, or its FLOPs at the
    family's convolution share of the (clock-derated) peak."""
    samples_per_gpu = w["global_batch"] / job_gpus
    measured = w["forward_s_per_sample"]
    if np.isnan(measured).any() and np.isnan(family.conv_fraction):
        raise ScenarioError("workload.forward_s_per_sample",
                            f"is needed: no measured convolution share for the {family.name} family")
    from_flops = w["flops_per_sample_forward"] / (device.peak_flops * family.conv_fraction)
    return samples_per_gpu * where(np.isnan(measured), from_flops, measured)


def time_and_cost_to_train(tokens, job: TrainedJob, step_time_s, ettr, cluster_gpus, facility_w, capex_total,
                           prices) -> dict:
    """Steps to train ``tokens`` (none given: no figures) at ``step_time_s`` (NaN where the job
    cannot run), wall time through the job's ETTR, and three costs, each named for what it is:
    ``cost_to_train``, the job's share (its GPUs of ``cluster_gpus``) of the capital amortized over
    the book's years plus its energy; ``buy_and_run_cost``, buying the whole build plus the run's
    energy; and ``rent_cost_to_train``, renting the job's GPUs for the same wall time at the
    cheapest rental term covering it (the rented cluster assumed to fail and restart as this one)."""
    if np.isnan(tokens).all():
        return {}
    steps = np.ceil(tokens / job.tokens_per_step)
    ideal_s = steps * step_time_s
    wall_s = ideal_s / ettr
    job_share = job.gpus / cluster_gpus
    energy_cost = facility_w * job_share * wall_s / 3.6e6 * prices["energy_per_kwh"]
    capex_share = capex_total * job_share * wall_s / (prices["amortization_years"] * HOURS_PER_YEAR * 3600)
    rent, rent_rate, rent_term = cost.rent_for(job.gpus, wall_s / SECONDS_PER_DAY, prices)
    return {
        "steps_to_train": steps,
        "time_to_train_days": wall_s / SECONDS_PER_DAY,
        "time_to_train_ideal_days": ideal_s / SECONDS_PER_DAY,
        "energy_cost_to_train": energy_cost,
        "capex_share_to_train": capex_share,
        "cost_to_train": energy_cost + capex_share,
        "cost_per_million_tokens": (energy_cost + capex_share) / tokens * 1e6,
        "buy_and_run_cost": capex_total + energy_cost,
        "rent_cost_to_train": rent,
        "rent_per_gpu_hour": rent_rate,
        "rent_term": label(cost.RENT_TERM_LABELS, rent_term),
        "rent_term_code": rent_term.astype(float),
        "rent_cost_per_million_tokens": rent / tokens * 1e6,
    }


TRAINING_INFEASIBLE = "training.infeasible"


def training_constraints(t) -> list[dict]:
    """A one-point infeasible job's reason, as a constraint of the result (none otherwise)."""
    if np.ndim(t["feasible"]) == 0 and not bool(t["feasible"]):
        dominant = (f" (dominant term: {t['memory']['dominant_term']})"
                    if t["infeasible_reason"] == INFEASIBLE_REASONS[MEMORY_REASON] else "")
        return [constraint(TRAINING_INFEASIBLE, f"training: infeasible: {t['infeasible_reason']}{dominant}")]
    return []
