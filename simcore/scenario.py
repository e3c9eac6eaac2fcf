"""The orchestrator: a scenario document in, a result document out.

``evaluate(document)`` validates the document (:mod:`simcore.document`), broadcasts every numeric
field to one scenario shape, runs each model on whole arrays and returns plain JSON-ready data:
a number (or a list, one entry per scenario point) for every metric, with units in the names,
and the binding constraint of each bounded quantity.
"""
import math
from dataclasses import dataclass, field

import numpy as np

from simcore import budget, collectives, compute, cost, power, reliability, storage, topology, training, transformer
from simcore.arrays import label
from simcore.collectives import CollectiveParams
from simcore.compute import ComputeParams
from simcore.devices import FAMILIES
from simcore.document import parse
from simcore.errors import ScenarioError
from simcore.power import PowerParams
from simcore.training import TrainingParams
from simcore.version import ENGINE_VERSION

SECONDS_PER_DAY = 86400.0
HOURS_PER_YEAR = 8760.0
PRECISION_PEAK = {"tf32": "peak_tf32_tflops", "fp16": "peak_fp16_tflops", "bf16": "peak_fp16_tflops",
                  "fp8": "peak_fp8_tflops"}
INFEASIBLE_REASONS = (
    "",
    "the job needs more GPUs than the cluster has",
    "TP x PP x CP does not divide the job's GPUs",
    "EP does not divide the data-parallel degree",
    "the global batch is smaller than one micro-batch per data-parallel rank",
    "the global batch does not split evenly into micro-batches",
    "TP is larger than a scale-up domain (a node, or the NVLink rack it belongs to)",
    "PP exceeds the layers (a stage needs a layer)",
    "TP does not divide the attention heads",
    "CP does not divide the sequence",
    "EP does not divide the routed experts (or the model has none)",
    "interleaving needs PP > 1 and layers divisible by PP x virtual stages",
    "a CNN trains data-parallel only (TP, PP and CP apply to transformers)",
    "does not fit in HBM",
)
MEMORY_REASON = len(INFEASIBLE_REASONS) - 1
PLACEMENTS = ("none", "scale-up", "PCIe", "network")  # where a parallel group's traffic runs


@dataclass(frozen=True)
class EngineParams:
    """Every calibrated constant of the engine, grouped by model; each has its basis documented."""

    compute: ComputeParams = field(default_factory=ComputeParams)
    families: dict = field(default_factory=lambda: dict(FAMILIES))
    collectives: CollectiveParams = field(default_factory=CollectiveParams)
    power: PowerParams = field(default_factory=PowerParams)
    training: TrainingParams = field(default_factory=TrainingParams)


def _numeric_leaves(tree, prefix=""):
    for key, value in tree.items():
        path = f"{prefix}.{key}" if prefix else key
        if isinstance(value, dict):
            yield from _numeric_leaves(value, path)
        elif isinstance(value, np.ndarray):
            yield path, value


def _broadcast_tree(tree) -> tuple[int, ...]:
    leaves = dict(_numeric_leaves(tree))
    try:
        return np.broadcast_shapes(*(a.shape for a in leaves.values()))
    except ValueError:
        lists = [(p, a.shape[0]) for p, a in leaves.items() if a.ndim]
        first = lists[0]
        other = next(item for item in lists if item[1] != first[1])
        raise ScenarioError(other[0], f"has {other[1]} values but {first[0]} has {first[1]}; "
                                      "lists must have equal lengths (or one value)") from None


def point_count(document) -> int:
    """How many scenario points a document describes (after validation and broadcasting)."""
    parsed = parse(document)
    return int(np.prod(_broadcast_tree({k: v for k, v in parsed.items() if isinstance(v, dict)})))


def evaluate(document, params: EngineParams | None = None, *, work_budget_s: float | None = None) -> dict:
    """Evaluate one scenario document (possibly many points) and return the result document.

    With ``work_budget_s``, a document whose estimated engine time (:mod:`simcore.budget`) is over
    it is refused with a field error before that work starts."""
    parsed = parse(document)
    points = int(np.prod(_broadcast_tree({k: v for k, v in parsed.items() if isinstance(v, dict)})))
    budget.check("(document)", budget.analytical_s(points), work_budget_s,
                 f"{points:,} scenario points; fewer, or submit a sweep")
    result = evaluate_parsed(parsed, params or EngineParams(), work_budget_s=work_budget_s)
    return to_json(result)


def evaluate_parsed(p: dict, params: EngineParams, *, work_budget_s: float | None = None) -> dict:
    c = p["cluster"]
    node, acc, fab, sto, prices, rel = c["node"], c["node"]["accelerator"], c["fabric"], c["storage"], \
        c["prices"], c["reliability"]
    nodes = c["node_count"]
    g = node["gpus"]
    gpus = nodes * g
    domain = scaleup_domain_gpus(node)

    # Compute: achieved GEMM per precision.
    full_clock_w = np.where(np.isnan(acc["full_clock_power_w"]), acc["tdp_w"], acc["full_clock_power_w"])
    clock = compute.sustained_clock_factor(acc["tdp_w"], full_clock_w, params.compute)
    family = params.families[acc["family"]]
    gemm = {name: compute.gemm_tflops(acc[key], acc["tdp_w"], full_clock_w,
                                      family.fp8_gemm_fraction if name == "fp8" else family.gemm_fraction,
                                      params.compute)
            for name, key in (("tf32", "peak_tf32_tflops"), ("fp16", "peak_fp16_tflops"),
                              ("fp8", "peak_fp8_tflops"))}

    # Fabric.
    compute_endpoints = nodes * node["compute_nics"]
    # Storage shares the computation fabric (FF: the compute NIC carries storage traffic too, so a
    # node's own storage NICs stay unused) or has its own plane, which the compute nodes' storage
    # NICs and the storage nodes join (the Ascend talk's separate sample/data plane).
    separate = fab["storage_network"] == "separate"
    storage_endpoints = sto["nodes"] * sto["nics"] + (nodes * node["storage_nics"] if separate else 0)
    fabric_kwargs = dict(radix=fab["switch_radix"], oversubscription=fab["oversubscription"],
                         core_pods=fab["core_pods"])
    main = topology.fat_tree(compute_endpoints + (0 if separate else storage_endpoints),
                             layers=fab["layers"], zones=fab["zones"], planes=fab["planes"], rails=fab["rails"],
                             interzone_switches=fab["interzone_switches"], **fabric_kwargs)
    plane_endpoints = storage_endpoints if separate else np.zeros_like(storage_endpoints)
    plane_layers = np.where(plane_endpoints <= topology.max_endpoints(fab["switch_radix"], 2, 1,
                                                                      fab["oversubscription"]), 2, 3)
    storage_fabric = topology.fat_tree(plane_endpoints, layers=plane_layers, **fabric_kwargs)
    fabric_total = main + storage_fabric

    # Power.
    node_w = power.node_power_w(node["power_w"], g, acc["tdp_w"], node["cpus"], node["cpu_tdp_w"], params.power)
    switch_w = power.switch_power_w(fab["switch_power_w"], fab["switch_radix"], fab["switch_gbit_s"], params.power)
    storage_w = power.storage_node_power_w(sto["power_w"], sto["ssds"], sto["cpu_tdp_w"], params.power)
    it_power = {
        "compute_nodes_w": nodes * node_w,
        "switches_w": fabric_total.switches * switch_w,
        "storage_nodes_w": sto["nodes"] * storage_w,
    }
    rack = c["rack"]
    per_rack, racks, rack_w = power.rack_layout(nodes, node_w, domain / g, rack["nodes_per_rack"],
                                                rack["power_limit_w"], rack["extra_w"])
    it_power["rack_extra_w"] = racks * rack["extra_w"]
    it_total_w = sum(it_power.values())
    gemm_w, idle_w = compute.accelerator_power_w(acc["tdp_w"], full_clock_w, params.compute)
    pue = np.where(np.isnan(prices["pue"]), power.COOLING_PUE[rack["cooling"]], prices["pue"])
    facility_w = it_total_w * pue

    # Cost.
    counts = {
        "compute_nodes": nodes,
        "storage_nodes": sto["nodes"],
        "switches": fabric_total.switches,
        "transceivers": fabric_total.transceivers,
        "fibers": fabric_total.switch_links,
        "endpoint_cables": fabric_total.endpoint_links,
    }
    unit_prices = {"compute_nodes": prices["node"], "storage_nodes": prices["storage_node"],
                   "switches": prices["switch"], "transceivers": prices["transceiver"],
                   "fibers": prices["fiber"], "endpoint_cables": prices["endpoint_cable"]}
    capex_lines, capex_total, unpriced = cost.capex(counts, unit_prices)
    network_capex = cost.priced_sum([capex_lines[k] for k in ("switches", "transceivers", "fibers", "endpoint_cables")])
    energy_year = cost.energy_cost_per_year(it_total_w, pue, prices["energy_per_kwh"])

    # Storage.
    client_nic_gbyte_s = np.where(node["storage_nics"] > 0, node["storage_nics"] * node["storage_nic_gbit_s"],
                                  node["compute_nics"] * node["compute_nic_gbit_s"]) / 8
    storage_bw, storage_bound = storage.storage_throughput_gbyte_s(
        sto["nodes"], sto["nics"], sto["nic_gbit_s"], sto["ssds"], sto["ssd_read_gbyte_s"], nodes, client_nic_gbyte_s)
    storage_write_bw, storage_write_bound = storage.storage_throughput_gbyte_s(
        sto["nodes"], sto["nics"], sto["nic_gbit_s"], sto["ssds"], sto["ssd_write_gbyte_s"], nodes, client_nic_gbyte_s)
    storage_rates = {"read": np.where(sto["nodes"] > 0, storage_bw, np.inf),
                     "write": np.where(sto["nodes"] > 0, storage_write_bw, np.inf)}

    # Collectives at the report's message size, across the whole cluster.
    io = node_io(node, acc, g, params.collectives)
    nvlink_pairs = node["nvlink_topology"] == "pairs"
    all_to_all = node["nvlink_topology"] == "all-to-all"
    msg = p["options"]["message_bytes"]
    collective_report = {
        "message_bytes": msg,
        "hfreduce": _collective_json(collectives.hfreduce(msg, nodes, io, params=params.collectives)),
        "nccl": _collective_json(collectives.nccl_allreduce(msg, np.ceil(gpus / domain), domain_io(io, g, domain),
                                                            nvlink_all_to_all=all_to_all, params=params.collectives)),
    }
    if nvlink_pairs:
        collective_report["hfreduce_nvlink"] = _collective_json(
            collectives.hfreduce(msg, nodes, io, nvlink=True, params=params.collectives))

    result = {
        "engine_version": ENGINE_VERSION,
        "cluster": {"nodes": nodes, "gpus": gpus, "scaleup_domain_gpus": domain,
                    "scaleup_domains": np.ceil(gpus / domain)},
        "racks": {"count": racks, "nodes_per_rack": per_rack, "gpus_per_rack": per_rack * g, "power_w": rack_w,
                  "cooling": rack["cooling"],
                  "within_power_limit": np.where(np.isnan(rack["power_limit_w"]), True, rack_w <= rack["power_limit_w"])},
        "compute": {
            "sustained_clock_factor": clock,
            "gemm_tf32_tflops": gemm["tf32"],
            "gemm_fp16_tflops": gemm["fp16"],
            "gemm_fp8_tflops": gemm["fp8"],
            "cluster_fp16_pflops": gemm["fp16"] * gpus / 1000,
        },
        "fabric": {
            "switches": fabric_total.switches,
            "leaf_switches": fabric_total.leaf_switches,
            "spine_switches": fabric_total.spine_switches,
            "core_switches": fabric_total.core_switches,
            "interzone_switches": fabric_total.interzone_switches,
            "compute_fabric_switches": main.switches,
            "compute_fabric_leaf_switches": main.leaf_switches,
            "compute_fabric_links": main.endpoint_links + main.switch_links,
            "storage_plane_switches": storage_fabric.switches,
            "endpoints": fabric_total.endpoints,
            "capacity_endpoints": main.capacity_endpoints,
            "fits": main.fits & storage_fabric.fits,
            "compute_nics": nodes * node["compute_nics"],
            "storage_nics": storage_endpoints,
            "endpoint_cables": fabric_total.endpoint_links,
            "switch_links": fabric_total.switch_links,
            "transceivers": fabric_total.transceivers,
            "fibers": fabric_total.switch_links,
        },
        "power": {
            "accelerator_gemm_w": gemm_w,
            "accelerator_idle_w": idle_w,
            "node_w": node_w,
            "switch_w": switch_w,
            "storage_node_w": storage_w,
            **it_power,
            "it_total_w": it_total_w,
            "facility_w": facility_w,
            "pue": pue,
            "energy_per_year_kwh": power.energy_per_year_kwh(it_total_w, pue),
            "fp16_tflops_per_kw": gemm["fp16"] * gpus / (facility_w / 1000),
        },
        "cost": {
            "currency": prices["currency"],
            **{f"{part}": line for part, line in capex_lines.items()},
            "network": network_capex,
            "capex_total": capex_total,
            "unpriced": unpriced,
            "unpriced_count": sum((np.asarray(counts[k]) > 0) & np.isnan(unit_prices[k]) for k in counts).astype(float),
            "energy_per_year": energy_year,
            "capex_per_fp16_pflops": capex_total / (gemm["fp16"] * gpus / 1000),
        },
        "storage": {
            "aggregate_read_gbyte_s": storage_bw,
            "read_bound": label(storage.STORAGE_LABELS, storage_bound),
            "aggregate_write_gbyte_s": storage_write_bw,
            "write_bound": label(storage.STORAGE_LABELS, storage_write_bound),
            "capacity_tb": sto["nodes"] * sto["ssds"] * sto["ssd_tb"],
        },
        "collectives": collective_report,
        "constraints": [],
    }
    if not np.all(main.fits):
        result["constraints"].append(
            f"fabric: {int(np.max(main.endpoints))} endpoints exceed what the fabric holds "
            f"({int(np.min(main.capacity_endpoints))}); add layers, planes or zones, or use a larger radix")
    if not np.all(storage_fabric.fits):
        result["constraints"].append(
            f"storage plane: {int(np.max(storage_fabric.endpoints))} endpoints exceed a three-layer fat-tree "
            "of this switch")
    if unpriced:
        result["constraints"].append(f"cost: not priced in this price book: {', '.join(unpriced)}")

    categories = _failure_categories(rel, spans_nodes=bool(np.any(domain > g)))
    domains = np.where(domain > g, np.ceil(gpus / domain), 0.0)
    cluster_units = reliability.unit_counts(gpus, nodes, link=fabric_total.endpoint_links + fabric_total.switch_links,
                                            nic=fabric_total.endpoints, switch=fabric_total.switches, domain=domains)
    result["reliability"] = _reliability_cluster(categories, cluster_units)
    if p["has_workload"]:
        result["training"], job = _training(p, params, family, clock, io, node, acc, g, nodes)
        share = job["nodes"] / nodes  # the job's share of the compute fabric's links and switches
        job["units"] = reliability.unit_counts(job["gpus"], job["nodes"], nic=job["nodes"] * node["compute_nics"],
                                               link=(main.endpoint_links + main.switch_links) * share,
                                               switch=main.switches * share,
                                               domain=np.where(domain > g, np.ceil(job["gpus"] / domain), 0.0))
        result["reliability"].update(_reliability_job(p, categories, job, node, sto, storage_rates))
        _time_and_cost_to_train(result, p, job, facility_w, capex_total, prices)
        _explain_training(result)
    if p["options"]["monte_carlo_replicas"] > 0:
        result["reliability"]["monte_carlo"] = _monte_carlo(p, categories, cluster_units, result, work_budget_s)
    return result


def _collective_json(result: collectives.CollectiveResult) -> dict:
    return {"algbw_gbyte_s": result.algbw_gbyte_s, "time_s": result.time_s, "bound": result.binding,
            "bounds_gbyte_s": result.bounds_gbyte_s}


def node_io(node, acc, g, params: CollectiveParams = CollectiveParams()) -> collectives.NodeIO:
    """What a node offers collectives, from the scenario's node fields (NaN = not a limit).

    Host memory: the measured practical rate, else the peak x ``host_memory_efficiency``."""
    inf_if_nan = lambda a: np.where(np.isnan(a), np.inf, a)  # noqa: E731
    derated_peak = node["host_memory_peak_bw_gbyte_s"] * params.host_memory_efficiency
    host_memory = np.where(np.isnan(node["host_memory_bw_gbyte_s"]), derated_peak, node["host_memory_bw_gbyte_s"])
    return collectives.NodeIO(
        gpus_per_node=g,
        nic_bw_gbyte_s=node["compute_nics"] * node["compute_nic_gbit_s"] / 8,
        host_mem_bw_gbyte_s=inf_if_nan(host_memory),
        pcie_bw_gbyte_s=node["pcie_bw_gbyte_s"],
        root_port_bw_gbyte_s=inf_if_nan(node["root_port_bw_gbyte_s"]),
        shared_root_ports=node["shared_root_ports"],
        p2p_bw_gbyte_s=inf_if_nan(node["p2p_limit_gbyte_s"]),
        scaleup_bw_gbyte_s=np.where(acc["scaleup_bw_gbyte_s"] > 0, acc["scaleup_bw_gbyte_s"] / 2, np.inf),
        numa_domains=np.maximum(node["cpus"], 1),
    )


def scaleup_domain_gpus(node):
    """GPUs on one all-to-all scale-up fabric: the node's, or a rack's or supernode's (a whole
    number of nodes) where the scenario says so."""
    g, domain = node["gpus"], node["scaleup_domain_gpus"]
    given = ~np.isnan(domain)
    if np.any(given & (node["nvlink_topology"] != "all-to-all")):
        raise ScenarioError("cluster.node.scaleup_domain_gpus", "needs an all-to-all scale-up fabric (nvlink_topology)")
    if np.any(given & ((domain < g) | (domain % g != 0))):
        raise ScenarioError("cluster.node.scaleup_domain_gpus", "must be a whole number of nodes' GPUs")
    return np.where(given, domain, g)


def _nccl_domain(node, w, g):
    """The GPUs a job's NCCL collectives and TP groups see as one scale-up domain: the fabric's
    where the job uses an all-to-all NVLink with bandwidth, else the node."""
    usable = (node["nvlink_topology"] == "all-to-all") & w["use_nvlink"] & (node["accelerator"]["scaleup_bw_gbyte_s"] > 0)
    return np.where(usable, scaleup_domain_gpus(node), g)


def domain_io(io: collectives.NodeIO, g, domain) -> collectives.NodeIO:
    """A scale-up domain seen by collectives as one node: its nodes' NICs, host memory and
    sockets together, every GPU on the scale-up fabric."""
    k = domain / g
    return collectives.NodeIO(
        gpus_per_node=domain, nic_bw_gbyte_s=io.nic_bw_gbyte_s * k, host_mem_bw_gbyte_s=io.host_mem_bw_gbyte_s * k,
        pcie_bw_gbyte_s=io.pcie_bw_gbyte_s, root_port_bw_gbyte_s=io.root_port_bw_gbyte_s,
        shared_root_ports=io.shared_root_ports * k, p2p_bw_gbyte_s=io.p2p_bw_gbyte_s,
        scaleup_bw_gbyte_s=io.scaleup_bw_gbyte_s, numa_domains=io.numa_domains * k)


def _failure_categories(rel, spans_nodes=False):
    """The profile's categories (with the scale-up domain's own where it spans nodes), with any
    rate the scenario replaces (``category_rates``)."""
    rate = None
    if rel["profile"] == "per-node-rate":
        rate = rel["failures_per_1000_node_days"]
        if np.any(np.isnan(rate)):
            raise ScenarioError("cluster.reliability.failures_per_1000_node_days",
                                "is required by the per-node-rate profile")
        if rate.ndim:
            raise ScenarioError("cluster.reliability.failures_per_1000_node_days", "takes one value")
        rate = float(rate)
    return reliability.build_categories(rel["profile"], failures_per_1000_node_days=rate, rates=rel["category_rates"],
                                        flap_share=float(rel["link_flap_share"]), flap_s=float(rel["link_flap_s"]),
                                        domain_spans_nodes=spans_nodes, field="cluster.reliability.category_rates")


def _reliability_cluster(categories, units):
    """Cluster-wide event rates (job-caused ones at the measured fleet rate), the platform faults
    that would stop a job spanning the cluster, the fabric's share of them and of repair work,
    node availability and MTTR."""
    def per_day(weight, job_fault_factor=1.0):
        return reliability.rate_per_hour(categories, units, weight, job_fault_factor) * 24

    platform_stops = per_day(lambda c: c.interrupts_job and c.cause == reliability.PLATFORM)
    fabric_stops = per_day(lambda c: c.interrupts_job and c.fabric)
    repair_h = per_day(lambda c: c.repair_h)
    fabric_repair_h = per_day(lambda c: c.repair_h * c.fabric)
    availability, mttr_h = _node_availability(categories, units)
    return {
        "events_per_day": per_day(lambda c: 1.0),
        "platform_interruptions_per_day": platform_stops,
        "fabric_interruptions_per_day": fabric_stops,
        "fabric_interruption_share": np.where(platform_stops > 0, fabric_stops / np.where(platform_stops > 0,
                                                                                          platform_stops, 1), 0.0),
        "repair_hours_per_day": repair_h,
        "fabric_repair_hours_per_day": fabric_repair_h,
        "fabric_repair_share": np.where(repair_h > 0, fabric_repair_h / np.where(repair_h > 0, repair_h, 1), 0.0),
        "node_availability": availability,
        "node_mttr_h": mttr_h,
        "by_category_per_day": {key: rate * 24 for key, rate in reliability.category_rates(categories, units).items()},
        "categories": [{"key": c.key, "label": c.label, "unit": c.unit, "cause": c.cause, "detection": c.detection,
                        "interrupts_job": c.interrupts_job} for c in categories],  # sources: describe_profiles()
    }


def _node_availability(categories, units):
    """A node's steady-state availability and MTTR from the faults that take it out of service:
    its GPUs', its own, its NICs' and their links' (one link per NIC) and its scale-up domain's
    (platform faults only, a job's own faults leave the hardware up)."""
    node_units = {**units, "link": units["nic"], "domain": units["node"]}  # each node shares its domain's fate
    node_level = lambda c: c.unit in ("gpu", "node", "nic", "link", "domain")  # noqa: E731
    down_per_node = reliability.rate_per_hour(categories, node_units, lambda c: node_level(c) and c.repair_h > 0,
                                              0.0) / units["node"]
    repair_hours_per_node = reliability.rate_per_hour(categories, node_units, lambda c: c.repair_h * node_level(c),
                                                      0.0) / units["node"]
    mttr_h = np.where(down_per_node > 0, repair_hours_per_node / np.where(down_per_node > 0, down_per_node, 1), 0.0)
    return reliability.node_availability(down_per_node, mttr_h), mttr_h


def _layout_checks(w, job_gpus, nodes, g, domain, dp, micro_batches):
    """Per-point layout problems as codes into ``INFEASIBLE_REASONS`` (0 = none). A layout that
    cannot suit the model (TP not dividing the heads, CP the sequence, EP the experts, ...) is bad
    input when its fields hold one value each (not a sweep axis): it raises naming the field."""
    transformer = w["kind"] == "transformer"
    heads = w["heads"] if transformer else np.array(np.nan)
    experts = w["experts"]
    rules = (  # (the field to name when it alone is wrong, the problem per point)
        (None, job_gpus > nodes * g),
        (None, dp != np.floor(dp)),
        (None, (np.floor(dp) % w["ep"]) != 0),
        (None, micro_batches < 1),
        (None, micro_batches != np.floor(micro_batches)),
        (None, (w["tp"] > domain) & (w["tp"] > 1)),
        ("pp", transformer & (w["pp"] > np.nan_to_num(w["layers"], nan=np.inf))),
        ("tp", transformer & (np.nan_to_num(heads % w["tp"]) != 0)),
        ("cp", transformer & ((w["seq_len"] * w["resolution_scale"] ** 2) % w["cp"] != 0)),
        ("ep", (w["ep"] > 1) & ((experts < 1) | (experts % w["ep"] != 0))),
        ("virtual_stages", (w["virtual_stages"] > 1) & ((w["pp"] < 2) | (np.nan_to_num(w["layers"])
                                                                         % (w["pp"] * w["virtual_stages"]) != 0))),
        ("tp", (not transformer) & ((w["tp"] > 1) | (w["pp"] > 1) | (w["cp"] > 1))),
    )
    shape = np.broadcast_shapes(*(np.shape(a) for a in (job_gpus, dp, micro_batches, nodes, w["tp"], w["cp"])))
    reason = np.zeros(shape, np.intp)
    for code, (name, bad) in enumerate(rules, start=1):
        if name is not None and np.ndim(bad) == 0 and bool(bad):
            raise ScenarioError(f"workload.{name}", INFEASIBLE_REASONS[code])
        reason = np.where(bad & (reason == 0), code, reason)
    return reason


def _model(w) -> transformer.Model:
    """The workload's transformer with defaults filled (kv heads = heads, head dim = h / a, ...)."""
    heads = w["heads"]
    ffn = np.where(np.isnan(w["ffn_hidden"]), 4 * w["hidden"], w["ffn_hidden"])
    experts = w["experts"]
    return transformer.Model(
        layers=w["layers"], hidden=w["hidden"], heads=heads,
        kv_heads=np.where(np.isnan(w["kv_heads"]), heads, w["kv_heads"]),
        head_dim=np.where(np.isnan(w["head_dim"]), w["hidden"] / heads, w["head_dim"]),
        ffn=ffn, gated=np.array(w["gated_mlp"]), vocab=w["vocab"], tied=np.array(w["tied_embeddings"]),
        seq=w["seq_len"] * w["resolution_scale"] ** 2, causal=np.array(w["causal"]),
        experts=experts, top_k=np.where(experts > 0, w["moe_top_k"], 0.0),
        expert_ffn=np.where(experts > 0, np.where(np.isnan(w["expert_ffn_hidden"]), ffn, w["expert_ffn_hidden"]), 0.0),
        shared_experts=np.where(experts > 0, w["shared_experts"], 0.0),
        dense_layers=np.where(experts > 0, w["dense_layers"], 0.0), imbalance=w["moe_imbalance"],
    )


def _links(node, io, family, w, g, dp, params: CollectiveParams):
    """Where each parallel group runs: the scale-up link (achievable bus bandwidth from the family's
    nccl-tests share), the PCIe path through the host (half the host link each way), or the
    network (the node's NICs shared by its GPUs). Returns links and their placement labels."""
    nvlink = w["use_nvlink"]
    topology = node["nvlink_topology"]
    domain = scaleup_domain_gpus(node) if topology == "all-to-all" else (2.0 if topology == "pairs" else 1.0)
    domain = np.where(nvlink & (node["accelerator"]["scaleup_bw_gbyte_s"] > 0), domain, 1.0)
    scaleup = training.Link(io.scaleup_bw_gbyte_s * family.scaleup_fraction, params.scaleup_latency_s)
    pcie = training.Link(io.pcie_bw_gbyte_s / 2, params.hop_latency_s)
    network = training.Link(io.nic_bw_gbyte_s / g, params.hop_latency_s)
    tp, cp, ep = w["tp"], w["cp"], w["ep"]
    # NVLink SHARP reduces in the switches: TP's allreduces (not SP's reduce-scatter and allgather) gain.
    switched = topology == "all-to-all" and node["nvlink_sharp"] and not np.isnan(family.nvls_allreduce_gain)
    sharp_gain = family.nvls_allreduce_gain if switched else 1.0
    tp_scaleup = training.Link(scaleup.bw_gbyte_s * np.where(w["sequence_parallel"], 1.0, sharp_gain),
                               scaleup.latency_s)

    def place(span, stride, on_scaleup=scaleup):
        """Group of ``span`` GPUs ``stride`` apart: the first link that holds it."""
        reach = span * stride
        in_domain = reach <= domain
        in_node = reach <= g
        link = training.pick_link(in_domain, on_scaleup, training.pick_link(in_node, pcie, network))
        code = np.where(span <= 1, 0, np.where(in_domain, 1, np.where(in_node, 2, 3)))
        return link, label(PLACEMENTS, code)

    tp_link, tp_where = place(tp, 1, tp_scaleup)
    cp_link, cp_where = place(cp, tp)
    ep_link, ep_where = place(ep, tp * cp)
    stride = tp * cp * np.floor(dp)
    pp_link, pp_where = place(np.where(w["pp"] > 1, 2.0, 1.0), stride)
    links = {"tp": tp_link, "cp": cp_link, "ep": ep_link, "pp": pp_link}
    return links, {"tp": tp_where, "cp": cp_where, "ep": ep_where, "pp": pp_where}


def _training(p, params: EngineParams, family, clock, io, node, acc, g, nodes):
    """The job's step: a transformer layer by layer (simcore.training.transformer_step), a CNN from
    its FLOPs at the family's convolution share (or a measured forward time); then data
    parallelism, memory, MFU and HFU."""
    w = p["workload"]
    tp_, pp_, ep_, cp_ = w["tp"], w["pp"], w["ep"], w["cp"]
    job_gpus = np.where(np.isnan(w["gpus"]), nodes * g, w["gpus"])
    job_nodes = np.ceil(job_gpus / g)
    dp = job_gpus / (tp_ * pp_ * cp_)
    dp_ranks = np.maximum(np.floor(dp), 1)
    micro_batches = w["global_batch"] / (dp_ranks * w["micro_batch"])
    reason = _layout_checks(w, job_gpus, nodes, g, _nccl_domain(node, w, g), dp, micro_batches)
    layout_ok = reason == 0
    m = np.maximum(np.floor(micro_batches), 1)

    precision = w["precision"]
    peak_tflops = acc[PRECISION_PEAK[precision]]
    if np.any(np.isnan(peak_tflops)):
        raise ScenarioError("workload.precision", f"the accelerator has no {precision} peak in the catalogue")
    gemm_fraction = family.fp8_gemm_fraction if precision == "fp8" else family.gemm_fraction
    if np.isnan(gemm_fraction):
        raise ScenarioError("workload.precision", f"no measured {precision} GEMM share for the {family.name} family")
    attention_peak = acc["peak_fp16_tflops"] if precision == "fp8" else peak_tflops
    hbm = np.where(np.isnan(acc["memory_bandwidth_gbyte_s"]), family.reference_hbm_gbyte_s,
                   acc["memory_bandwidth_gbyte_s"])
    device = transformer.Device(
        peak_flops=peak_tflops * 1e12 * clock, attention_peak_flops=attention_peak * 1e12 * clock,
        sm_count=np.where(np.isnan(acc["sm_count"]), family.reference_sm_count, acc["sm_count"]),
        gemm_fraction=np.asarray(gemm_fraction), attention_gemm_fraction=np.asarray(family.gemm_fraction),
        attention_fraction=np.asarray(family.attention_fraction),
        gemm_operand_bytes=np.asarray({"tf32": 4.0, "fp8": 1.0}.get(precision, 2.0)),
        hbm_bytes_s=hbm * 1e9 * family.hbm_fraction)
    act_bytes = np.asarray(4.0 if precision == "tf32" else 2.0)
    links, placement = _links(node, io, family, w, g, dp, params.collectives)

    is_transformer = w["kind"] == "transformer"
    if is_transformer:
        model = _model(w)
        recompute = np.asarray(float(training.RECOMPUTE.index(w["recompute"])))
        layout = transformer.Layout(tp=tp_, sp=np.asarray(w["sequence_parallel"]), cp=cp_, ep=ep_,
                                    micro_batch=w["micro_batch"], recompute=recompute,
                                    flash=np.asarray(w["flash_attention"]), act_bytes=act_bytes,
                                    fused=np.asarray(w["fused_kernels"]))
        counts = transformer.parameter_counts(model)
        scale = np.where(np.isnan(w["params"]), 1.0, w["params"] / counts["total"])
        total_params, active = counts["total"] * scale, counts["active"] * scale
        expert_params = counts["experts"] * scale
        tokens_per_step = w["global_batch"] * model.seq
        model_per_token = transformer.model_flops_per_token(model)
        hw_per_token = model_per_token + transformer.recompute_flops_per_token(model, recompute, model_per_token)
        dense = total_params - expert_params
        zero = w["zero_stage"] >= 1
        shards = {"dense": dense / (tp_ * pp_), "experts": expert_params / (tp_ * pp_ * ep_),
                  "dense_shards": np.where(zero, dp_ranks, 1.0),
                  "expert_shards": np.where(zero, np.maximum(dp_ranks / ep_, 1.0), 1.0)}
        local_params = shards["dense"] + shards["experts"]
        step = training.transformer_step(
            model=model, layout=layout, device=device, pp=pp_, virtual_stages=w["virtual_stages"], micro_batches=m,
            tp_link=links["tp"], cp_link=links["cp"], ep_link=links["ep"], pp_link=links["pp"],
            optimizer_shards=shards,
            grad_accumulation_fused=np.asarray(w["grad_accumulation_fusion"]), grad_bytes=w["grad_bytes"])
        parts, compute_s, backward_window = step["parts"], step["compute_s"], step["backward_s"]
        activations = training.activation_bytes_first_stage(model, layout, pp_, w["virtual_stages"], m)
        stage_s = step["stage_s"]
    else:
        total_params = active = w["params"]
        expert_params = np.array(0.0)
        dense = local_params = total_params  # data-parallel only (the layout checks refuse TP, PP, CP)
        tokens_per_step = w["global_batch"]
        model_per_token = 3 * w["flops_per_sample_forward"]
        recompute_share = np.where(w["recompute"] == "full", 1 / 3, 0.0)  # a forward again of 3
        hw_per_token = model_per_token * (1 + recompute_share)
        forward_s = _cnn_forward_s(w, family, device, job_gpus)
        parts = {"forward": forward_s, "backward": 2 * forward_s, "recomputation": forward_s * recompute_share * 3,
                 "optimizer": local_params * training.ADAM_BYTES_PER_PARAM / np.where(
                     w["zero_stage"] >= 1, dp_ranks, 1.0) / device.hbm_bytes_s}
        compute_s = parts["forward"] + parts["backward"] + parts["recomputation"]
        backward_window = parts["backward"] / m
        activations = w["activation_bytes_per_sample"] * w["micro_batch"]
        stage_s = None
    model_flops = model_per_token * tokens_per_step
    hw_flops = hw_per_token * tokens_per_step

    # Data parallelism: HFReduce or NCCL over the DP (x CP) group.
    grad_bytes_per_gpu = local_params * w["grad_bytes"]
    reduce_ranks = dp_ranks * cp_
    hfreduce = w["collective"] == "hfreduce"
    all_ok = node["nvlink_topology"] == "all-to-all"
    # NCCL over an all-to-all scale-up domain larger than a node treats the domain as the node.
    unit = g if hfreduce else _nccl_domain(node, w, g)
    unit_io = domain_io(io, g, unit)
    dp_per_node = np.minimum(reduce_ranks, unit / tp_)
    shards_per_node = unit / np.maximum(dp_per_node, 1)
    dp_nodes = np.ceil(reduce_ranks / np.maximum(dp_per_node, 1))
    dp_io = collectives.NodeIO(
        gpus_per_node=np.maximum(dp_per_node, 1), nic_bw_gbyte_s=unit_io.nic_bw_gbyte_s / shards_per_node,
        host_mem_bw_gbyte_s=unit_io.host_mem_bw_gbyte_s / shards_per_node, pcie_bw_gbyte_s=io.pcie_bw_gbyte_s,
        root_port_bw_gbyte_s=io.root_port_bw_gbyte_s, shared_root_ports=io.shared_root_ports,
        p2p_bw_gbyte_s=io.p2p_bw_gbyte_s, scaleup_bw_gbyte_s=io.scaleup_bw_gbyte_s, numa_domains=io.numa_domains)
    if hfreduce:
        # HFReduce sums an NVLink pair first only if both GPUs hold the same gradients (no TP).
        pair_reduce = (node["nvlink_topology"] == "pairs") & w["use_nvlink"] & (tp_ == 1)
        ar = collectives.hfreduce(grad_bytes_per_gpu, dp_nodes, dp_io, nvlink=pair_reduce,
                                  cross_zone=w["cross_zone"], params=params.collectives)
    else:
        ar = collectives.nccl_allreduce(grad_bytes_per_gpu, dp_nodes, dp_io,
                                        nvlink_all_to_all=all_ok & w["use_nvlink"], params=params.collectives)
    dp_s = np.where(reduce_ranks > 1, ar.time_s, 0.0)
    # ZeRO-3 / FSDP: every micro-batch allgathers the weights for forward and again for backward (and
    # for a fully recomputed forward) and reduce-scatters the gradients, all of which can hide behind the whole step's
    # compute instead of the last backward alone. With NCCL each moves half an allreduce's traffic;
    # HFReduce has only the allreduce (every GPU's whole buffer down to the host and back), so each
    # gather or reduce-scatter built on it costs a whole allreduce.
    fsdp = w["zero_stage"] >= 3
    gathers = 2 + (w["recompute"] == "full")
    per_collective = 1.0 if hfreduce else 0.5
    dp_s = np.where(fsdp, m * per_collective * dp_s * (1 + gathers * w["weight_bytes"] / w["grad_bytes"]), dp_s)
    window_s = np.where(fsdp, compute_s, np.where(w["overlap_grad_reduce"], backward_window, 0.0))
    exposed_dp = training.exposed_dp_s(dp_s, window_s, hfreduce, params.training)

    # Host-side preprocessing (video/diffusion workloads): CPU-seconds per sample over the cores.
    samples_per_node = w["global_batch"] / job_nodes
    preprocessing = (w["preprocess_s_per_sample"] > 0) & (not w["preprocess_cached"])
    if np.any(preprocessing & np.isnan(node["cpu_cores"])):
        raise ScenarioError("cluster.node.cpu_cores", "is needed when the workload preprocesses on the host")
    data_s = np.where(preprocessing, samples_per_node * w["preprocess_s_per_sample"] / node["cpu_cores"], 0.0)

    step_s, stacked, step_bound = training.assemble_step(parts, exposed_dp, data_s)
    peak = peak_tflops * 1e12
    mfu = model_flops / (step_s * job_gpus * peak)
    hfu = hw_flops / (step_s * job_gpus * peak)

    terms = training.memory_per_gpu_bytes(
        dense_params=dense, expert_params=expert_params, tp=tp_, pp=pp_, ep=ep_, dp=dp_ranks,
        zero_stage=w["zero_stage"], weight_bytes=w["weight_bytes"], grad_bytes=w["grad_bytes"],
        optimizer_bytes_per_param=w["optimizer_bytes_per_param"], activation_bytes=activations)
    hbm_gb = acc["memory_gb"]
    fits, mem_total, dominant = training.memory_verdict(terms, np.where(np.isnan(hbm_gb), np.inf, hbm_gb),
                                                        params.training)
    feasible = layout_ok & fits
    checkpoint_bytes = np.where(np.isnan(w["checkpoint_bytes"]),
                                total_params * (w["weight_bytes"] + w["optimizer_bytes_per_param"]),
                                w["checkpoint_bytes"])
    nan_if_infeasible = lambda a: np.where(feasible, a, np.nan)  # noqa: E731
    parts_masked = np.where(np.asarray(feasible)[..., None], stacked, np.nan)
    out = {
        "feasible": feasible,
        "infeasible_reason": label(INFEASIBLE_REASONS, np.where(layout_ok & ~fits, MEMORY_REASON, reason)),
        "gpus": job_gpus,
        "nodes": job_nodes,
        "dp": np.floor(dp),
        "micro_batches": micro_batches,
        "params": total_params,
        "active_params": active,
        "expert_params": expert_params,
        "model_flops_per_step": model_flops,
        "hardware_flops_per_step": hw_flops,
        "step_time_s": nan_if_infeasible(step_s),
        "step_parts_s": {name: parts_masked[..., i] for i, name in enumerate(training.STEP_LABELS)},
        "step_bound": label(training.STEP_LABELS, step_bound),
        "dp_allreduce_s": dp_s,
        "dp_allreduce_bound": ar.binding,
        "mfu": nan_if_infeasible(mfu),
        "hfu": nan_if_infeasible(hfu),
        "model_tflops_per_gpu": nan_if_infeasible(model_flops / (step_s * job_gpus) / 1e12),
        "hardware_tflops_per_gpu": nan_if_infeasible(hw_flops / (step_s * job_gpus) / 1e12),
        "tokens_per_s": nan_if_infeasible(tokens_per_step / step_s),
        "memory": {
            "fits": fits,
            "per_gpu_gb": mem_total / 1e9,
            "hbm_gb": hbm_gb,
            **{f"{name.replace(' ', '_')}_gb": terms[..., i] / 1e9 for i, name in enumerate(training.MEMORY_TERMS)},
            "dominant_term": label(training.MEMORY_TERMS, dominant),
        },
    }
    if stage_s is not None:  # a transformer: its stages, where its groups run, its FLOPs per token
        out["stage_time_s"] = {name: nan_if_infeasible(stage_s[..., i])
                               for i, name in enumerate(("first", "middle", "last"))}
        out["placement"] = placement
        out["flops_per_token"] = model_per_token
    job = {"gpus": job_gpus, "nodes": job_nodes, "step_s": step_s, "tokens_per_step": tokens_per_step,
           "checkpoint_bytes": checkpoint_bytes, "feasible": feasible, "job_fault_factor": w["job_fault_factor"]}
    return out, job


def _cnn_forward_s(w, family, device, job_gpus):
    """A CNN's forward time per step on one GPU: the measured time per sample, or its FLOPs at the
    family's convolution share of the (clock-derated) peak."""
    samples_per_gpu = w["global_batch"] / job_gpus
    measured = w["forward_s_per_sample"]
    if np.any(np.isnan(measured)) and np.isnan(family.conv_fraction):
        raise ScenarioError("workload.forward_s_per_sample",
                            f"is needed: no measured convolution share for the {family.name} family")
    from_flops = w["flops_per_sample_forward"] / (device.peak_flops * family.conv_fraction)
    return samples_per_gpu * np.where(np.isnan(measured), from_flops, measured)


def _reliability_job(p, categories, job, node, sto, storage_rates):
    """The job's interruptions (platform faults on its parts, its own faults at its stated rate),
    checkpoint policy, restart time in parts, interval and ETTR (reliability module docstring)."""
    rel = p["cluster"]["reliability"]
    units, factor = job["units"], job["job_fault_factor"]
    per_node = sto["checkpoint_write_gbyte_s_per_node"]
    write_s, write_bound = storage.checkpoint_time_s(job["checkpoint_bytes"], job["nodes"], per_node,
                                                     storage_rates["write"])
    load_s, load_bound = storage.checkpoint_time_s(job["checkpoint_bytes"], job["nodes"], per_node,
                                                   storage_rates["read"])
    peer_s = job["checkpoint_bytes"] / job["nodes"] / (node["compute_nics"] * node["compute_nic_gbit_s"] / 8 * 1e9)
    in_memory = rel["checkpoint_in_memory"]
    load_s = np.where(in_memory, peer_s, load_s)
    asynchronous = rel["checkpoint_mode"] == "async"
    snapshot_s = job["checkpoint_bytes"] / job["gpus"] / (node["pcie_bw_gbyte_s"] * 1e9)
    stall_s = np.where(asynchronous, snapshot_s, write_s)
    lag_s = np.where(asynchronous, write_s, 0.0)
    timing = reliability.restart_timing(rel["restart_profile"],
                                        **{name: rel[name] for name in reliability.RESTART_TIMING_FIELDS})
    kinds, restart_s, parts, by_kind = reliability.job_interruptions(categories, units, factor, timing, job["gpus"],
                                                                     load_s, lag_s)
    rate_h = sum(kinds.values())
    rate_s = rate_h / 3600
    given_restart = ~np.isnan(rel["restart_s"])
    restart_s = np.where(given_restart, rel["restart_s"], restart_s)
    by_kind = {kind: np.where(given_restart, rel["restart_s"], seconds) for kind, seconds in by_kind.items()}
    optimal = reliability.optimal_interval_s(stall_s, rate_s)
    optimal = np.where(asynchronous, np.maximum(optimal, write_s), optimal)
    given = rel["checkpoint_interval_s"]
    too_short = np.broadcast_to(asynchronous & (given < write_s), np.broadcast(given, write_s).shape)
    if np.any(too_short):
        first = np.flatnonzero(too_short.ravel())[0]
        raise ScenarioError("cluster.reliability.checkpoint_interval_s",
                            f"{float(np.broadcast_to(given, too_short.shape).ravel()[first]):.3g} s is shorter than "
                            f"the asynchronous checkpoint write ({float(np.broadcast_to(write_s, too_short.shape).ravel()[first]):.3g} s): "
                            "a snapshot cannot start before the previous one is written")
    interval = np.where(np.isnan(given), optimal, given)
    spares = reliability.spares_needed(job["nodes"], _node_availability(categories, units)[0],
                                       rel["spare_confidence"])
    flap_stall = reliability.flap_stall_fraction(categories, units, rel["link_flap_s"])
    with np.errstate(divide="ignore"):
        mtbi_h = 1 / rate_h
    return {
        "job_interruptions_per_day": rate_h * 24,
        "job_mtbi_h": mtbi_h,
        "job_by_category_per_day": {key: rate * 24 for key, rate in reliability.category_rates(
            categories, units, factor, lambda c: c.interrupts_job).items()},
        "job_caused_interruptions_per_day": (kinds[(reliability.JOB, reliability.CRASH)]
                                             + kinds[(reliability.JOB, reliability.HANG)]) * 24,
        "checkpoint_mode": rel["checkpoint_mode"],
        "checkpoint_time_s": stall_s,
        "checkpoint_write_time_s": write_s,
        "checkpoint_bound": label(storage.CHECKPOINT_LABELS, write_bound),
        "checkpoint_load_time_s": load_s,
        "checkpoint_load_bound": np.where(in_memory, "peer host memory over the compute NICs",
                                          label(storage.CHECKPOINT_LABELS, load_bound)),
        "restart_profile": rel["restart_profile"],
        "restart_time_s": restart_s,
        "restart_parts_s": parts,
        "restart_given": given_restart,
        "restart_by_kind_s": by_kind,
        "checkpoint_interval_s": interval,
        "optimal_interval_s": optimal,
        "young_interval_s": reliability.young_interval_s(stall_s, rate_s),
        "daly_interval_s": reliability.daly_interval_s(stall_s, rate_s),
        "link_flap_stall_fraction": flap_stall,
        "ettr": reliability.ettr_closed_form(interval, stall_s, restart_s, rate_s) * (1 - flap_stall),
        "ettr_at_optimum": reliability.ettr_closed_form(optimal, stall_s, restart_s, rate_s) * (1 - flap_stall),
        "spare_nodes": spares,
    }


def _time_and_cost_to_train(result, p, job, facility_w, capex_total, prices):
    tokens = p["workload"]["tokens_to_train"]
    training_out = result["training"]
    if np.all(np.isnan(tokens)):
        return
    steps = np.ceil(tokens / job["tokens_per_step"])
    ideal_s = steps * training_out["step_time_s"]
    wall_s = ideal_s / result["reliability"]["ettr"]
    job_share = job["gpus"] / result["cluster"]["gpus"]
    energy_cost = facility_w * job_share * wall_s / 3.6e6 * prices["energy_per_kwh"]
    capex_share = capex_total * job_share * wall_s / (prices["amortization_years"] * HOURS_PER_YEAR * 3600)
    training_out.update({
        "steps_to_train": steps,
        "time_to_train_days": wall_s / SECONDS_PER_DAY,
        "time_to_train_ideal_days": ideal_s / SECONDS_PER_DAY,
        "energy_cost_to_train": energy_cost,
        "capex_share_to_train": capex_share,
        "cost_to_train": energy_cost + capex_share,
        "cost_per_million_tokens": (energy_cost + capex_share) / tokens * 1e6,
    })


def _explain_training(result):
    t = result["training"]
    if np.ndim(t["feasible"]) == 0 and not bool(t["feasible"]):
        result["constraints"].append(f"training: infeasible: {t['infeasible_reason']}"
                                     + (f" (dominant term: {t['memory']['dominant_term']})"
                                        if t["infeasible_reason"] == "does not fit in HBM" else ""))


def _monte_carlo(p, categories, units, result, work_budget_s):
    """Monte Carlo event counts for the whole cluster over the horizon and, with a workload, ETTR;
    refused first if its estimated work is over ``work_budget_s``."""
    opts = p["options"]
    replicas = int(opts["monte_carlo_replicas"])
    hours = opts["monte_carlo_horizon_h"]
    rel = result["reliability"]
    simulate_ettr = "ettr" in rel and np.any(result["training"]["feasible"])
    if simulate_ettr:
        segment = rel["checkpoint_interval_s"] + rel["checkpoint_time_s"]
        segments = int(np.clip(np.min(hours * 3600 / segment), 1, 1_000_000))
        rate_s = rel["job_interruptions_per_day"] / SECONDS_PER_DAY
    points = int(np.prod(_broadcast_tree({k: v for k, v in p.items() if isinstance(v, dict)})))
    draws = budget.ettr_failure_draws(segments, segment, rel["restart_time_s"], rate_s) if simulate_ettr else 0.0
    budget.check("options.monte_carlo_replicas", budget.monte_carlo_s(replicas, points, len(categories), draws),
                 work_budget_s, f"{replicas:,} replicas over {hours:g} h; fewer replicas or a shorter horizon")
    rng = np.random.default_rng(int(opts["seed"]))
    counts = reliability.sample_category_counts(categories, units, hours, replicas, rng)
    out = {
        "replicas": replicas,
        "horizon_h": hours,
        "events_mean": {c.key: counts[..., i].mean(axis=0) for i, c in enumerate(categories)},
    }
    if simulate_ettr:
        ettr = reliability.ettr_monte_carlo(rel["checkpoint_interval_s"], rel["checkpoint_time_s"],
                                            rel["restart_time_s"], rate_s, segments=segments, replicas=replicas,
                                            rng=rng)
        ettr = ettr * (1 - rel["link_flap_stall_fraction"])
        out["ettr_mean"] = ettr.mean(axis=0)
        out["ettr_p05"] = np.quantile(ettr, 0.05, axis=0)
    return out


def to_json(value):
    """Arrays to lists, 0-d arrays and NumPy scalars to Python numbers, NaN/inf to None."""
    kind = type(value)
    if kind is dict:
        return {k: to_json(v) for k, v in value.items()}
    if kind is np.ndarray:
        if value.ndim == 0:
            return _finite_or_none(value.item())
        if value.dtype.kind == "f" and not np.all(np.isfinite(value)):
            return np.where(np.isfinite(value), value, None).tolist()
        return value.tolist()
    if kind is list or kind is tuple:
        return [to_json(v) for v in value]
    if isinstance(value, np.generic):
        return _finite_or_none(value.item())
    return _finite_or_none(value)


def _finite_or_none(value):
    return None if type(value) is float and not math.isfinite(value) else value


def curves(document, params: EngineParams | None = None, result: dict | None = None) -> dict:
    """Curves for charts, each from one vectorized call:

    * allreduce algorithm bandwidth (HFReduce, HFReduce with NVLink pairs where the node has them,
      NCCL) against GPU count at ``options.message_bytes``, and against message size across the
      whole cluster;
    * with a workload, step time against the job's GPU count for strong scaling (global batch
      fixed) and weak scaling (batch per GPU fixed), with the efficiencies T(n0)/T(n) and
      n0 T(n0) / (n T(n)) against the smallest feasible count;
    * with a workload, ETTR against the checkpoint interval (the closed form of
      ``reliability.ettr_closed_form``, from a tenth to thirty times the optimum), with the
      optimum and the plan's interval marked (from ``result``, the document's evaluation, when
      the caller has it), and ETTR against the restart time at the plan's interval (ten seconds
      to four hours, the plan's restart marked).
    """
    params = params or EngineParams()
    parsed = parse(document)
    c = parsed["cluster"]
    node, g = c["node"], float(c["node"]["gpus"])
    if np.ndim(c["node_count"]) or np.ndim(g):
        raise ScenarioError("cluster.node_count", "curves take one cluster, not a list")
    io = node_io(node, node["accelerator"], g, params.collectives)
    nodes = np.unique(np.append(2.0 ** np.arange(0, int(np.log2(float(c["node_count"]))) + 1), c["node_count"]))
    sizes = 2.0 ** np.arange(20, 31)  # 1 MiB .. 1 GiB
    msg = float(np.max(parsed["options"]["message_bytes"]))
    library = {"hfreduce": lambda s, n: collectives.hfreduce(s, n, io, params=params.collectives),
               "nccl": lambda s, n: collectives.nccl_allreduce(s, n, io, nvlink_all_to_all=node["nvlink_topology"]
                                                               == "all-to-all", params=params.collectives)}
    if node["nvlink_topology"] == "pairs":
        library["hfreduce_nvlink"] = lambda s, n: collectives.hfreduce(s, n, io, nvlink=True, params=params.collectives)
    out = {
        "allreduce_vs_gpus": {"gpus": nodes * g, "message_bytes": msg,
                              **{name: f(msg, nodes).algbw_gbyte_s for name, f in library.items()}},
        "allreduce_vs_size": {"message_bytes": sizes, "gpus": float(c["node_count"]) * g,
                              **{name: f(sizes, c["node_count"]).algbw_gbyte_s for name, f in library.items()}},
    }
    if parsed["has_workload"]:
        out["scaling"] = _scaling(document, parsed, params)
        rel = (result or evaluate_parsed(parsed, params))["reliability"]
        out["ettr_vs_interval"] = _ettr_vs_interval(rel)
        out["ettr_vs_restart"] = _ettr_vs_restart(rel)
    return to_json(out)


def _ettr_vs_interval(rel: dict, points: int = 61):
    optimum = float(np.max(rel["optimal_interval_s"]))
    rate_s = float(np.max(rel["job_interruptions_per_day"])) / SECONDS_PER_DAY
    checkpoint_s, restart_s = float(np.max(rel["checkpoint_time_s"])), float(np.max(rel["restart_time_s"]))
    intervals = optimum * np.logspace(-1, np.log10(30), points)
    return {"interval_s": intervals,
            "ettr": reliability.ettr_closed_form(intervals, checkpoint_s, restart_s, rate_s) * _unstalled(rel),
            "optimal_interval_s": optimum, "ettr_at_optimum": float(np.max(rel["ettr_at_optimum"])),
            "plan_interval_s": float(np.max(rel["checkpoint_interval_s"])), "plan_ettr": float(np.max(rel["ettr"]))}


def _unstalled(rel: dict) -> float:
    return 1 - float(np.max(rel["link_flap_stall_fraction"]))


def _ettr_vs_restart(rel: dict, points: int = 61):
    rate_s = float(np.max(rel["job_interruptions_per_day"])) / SECONDS_PER_DAY
    interval_s, checkpoint_s = float(np.max(rel["checkpoint_interval_s"])), float(np.max(rel["checkpoint_time_s"]))
    restarts = np.logspace(1, np.log10(4 * 3600), points)
    return {"restart_s": restarts,
            "ettr": reliability.ettr_closed_form(interval_s, checkpoint_s, restarts, rate_s) * _unstalled(rel),
            "interval_s": interval_s, "plan_restart_s": float(np.max(rel["restart_time_s"])),
            "plan_ettr": float(np.max(rel["ettr"]))}


def _scaling(document, parsed, params):
    w = parsed["workload"]
    cluster_gpus = float(parsed["cluster"]["node_count"] * parsed["cluster"]["node"]["gpus"])
    job = float(np.max(np.where(np.isnan(w["gpus"]), cluster_gpus, w["gpus"])))
    unit = float(np.max(w["tp"] * w["pp"]))
    counts = np.unique(np.append(unit * 2.0 ** np.arange(0, int(np.log2(max(job / unit, 1))) + 1), job))
    per_gpu_batch = float(np.max(w["global_batch"])) / job
    weak_batches = np.maximum(np.round(per_gpu_batch * counts / np.max(w["micro_batch"])), 1) * np.max(w["micro_batch"])
    # Strong (global batch fixed) and weak (batch per GPU fixed) points in one vectorized call.
    both = {**document, "workload": {**document["workload"], "gpus": np.concatenate([counts, counts]).tolist(),
                                     "global_batch": np.concatenate([np.broadcast_to(np.max(w["global_batch"]),
                                                                                     counts.shape), weak_batches]).tolist()}}
    step_both = evaluate_parsed(parse(both), params)["training"]["step_time_s"]
    step, weak_step = step_both[:counts.size], step_both[counts.size:]
    feasible = np.flatnonzero(np.isfinite(step))
    strong_eff = np.full(counts.shape, np.nan)
    weak_eff = np.full(counts.shape, np.nan)
    if feasible.size:
        first = feasible[0]
        strong_eff = training.strong_scaling_efficiency(counts, step, counts[first], step[first])
        weak_eff = training.weak_scaling_efficiency(weak_step, weak_step[first])
    return {"gpus": counts, "strong_step_time_s": step, "strong_efficiency": strong_eff,
            "weak_global_batch": weak_batches, "weak_step_time_s": weak_step, "weak_efficiency": weak_eff}
