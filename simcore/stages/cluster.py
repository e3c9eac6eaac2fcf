"""The cluster's stages: compute, fabric, power and racks, cost, storage and collectives, each
turning the scenario's cluster fields into its section of the result (formulas and sources in
:mod:`simcore.formulas.compute`, :mod:`simcore.formulas.topology`, :mod:`simcore.formulas.power`,
:mod:`simcore.formulas.cost`, :mod:`simcore.formulas.storage` and :mod:`simcore.formulas.collectives`)."""
from dataclasses import dataclass, replace

import numpy as np

from simcore.arrays import label, where
from simcore.document import SPEC
from simcore.errors import ScenarioError
from simcore.formulas import collectives, compute, cost, power, storage, topology
from simcore.formulas.devices import DeviceFamily, with_fitted
from simcore.formulas.node import collective_json, domain_io


@dataclass(frozen=True)
class Hardware:
    """The accelerator as it runs: its family's constants, the sustained clock and achieved GEMMs."""

    family: DeviceFamily
    clock: np.ndarray
    full_clock_w: np.ndarray
    gemm_tflops: dict


CALIBRATED = tuple(SPEC["cluster"]["calibration"])  # the constants a measurement may replace


def calibrated_family(family: DeviceFamily, calibration) -> DeviceFamily:
    """The family with each measured share the scenario's ``calibration`` gives in place of its own."""
    measured = {name: float(calibration[name]) for name in CALIBRATED if not np.isnan(calibration[name])}
    return replace(family, **measured) if measured else family


def calibration_section(family: DeviceFamily, calibration) -> dict:
    """Each constant a measurement may replace: the value used and where it came from."""
    return {name: {"value": getattr(family, name),
                   "source": "family" if np.isnan(calibration[name]) else "measured"} for name in CALIBRATED}


def hardware(acc, calibration, params) -> Hardware:
    """Achieved GEMM per precision at the sustained clock (:func:`simcore.formulas.compute.gemm_tflops`), with
    the family's shares or the measured ones of ``calibration``."""
    family = calibrated_family(with_fitted(params.families[acc["family"]], params.fitted), calibration)
    full_clock_w = compute.full_clock_w(acc, family.full_clock_power_w)
    clock = compute.sustained_clock_factor(acc["tdp_w"], full_clock_w, params.compute)
    shares = {"fp8": family.fp8_gemm_fraction, "fp4": family.fp4_gemm_fraction}
    gemm = {name: compute.gemm_tflops(acc[key], acc["tdp_w"], full_clock_w, shares.get(name, family.gemm_fraction),
                                      params.compute)
            for name, key in (("tf32", "peak_tf32_tflops"), ("fp16", "peak_fp16_tflops"),
                              ("fp8", "peak_fp8_tflops"), ("fp4", "peak_fp4_tflops"))}
    return Hardware(family, clock, full_clock_w, gemm)


def compute_section(hw: Hardware, gpus) -> dict:
    return {
        "sustained_clock_factor": hw.clock,
        "gemm_tf32_tflops": hw.gemm_tflops["tf32"],
        "gemm_fp16_tflops": hw.gemm_tflops["fp16"],
        "gemm_fp8_tflops": hw.gemm_tflops["fp8"],
        "gemm_fp4_tflops": hw.gemm_tflops["fp4"],
        "cluster_fp16_pflops": hw.gemm_tflops["fp16"] * gpus / 1000,
    }


@dataclass(frozen=True)
class Fabrics:
    """The compute fabric (with storage on it, or not), the storage plane, and both together."""

    main: topology.FabricCounts
    storage_plane: topology.FabricCounts
    total: topology.FabricCounts
    storage_endpoints: np.ndarray
    layout_ok: np.ndarray  # the nodes' NICs meet the planes and rails (:func:`layout_rules`)
    layout_errors: dict  # field -> the reason, at the first point that breaks its rule

    @property
    def fits(self):
        return self.main.fits & self.storage_plane.fits & self.layout_ok


def layout_rules(compute_nics, planes, rails, radix, oversubscription) -> list[tuple[str, np.ndarray, str]]:
    """How a node's NICs meet the fabric, whatever its size: one NIC per plane (a node reaches a
    plane only through a NIC of its own), each plane's NICs split over its rails, and a leaf with
    an endpoint port for each rail. Each rule as (field, bad mask, reason at the first bad point)."""
    nics, planes, rails, down = np.broadcast_arrays(*(np.asarray(x, float) for x in (
        compute_nics, planes, rails, topology.leaf_down_ports(radix, oversubscription))))
    per_plane = np.floor(nics / planes)
    rules = (
        ("planes", nics % planes != 0,
         lambda i: f"each node needs one NIC per plane: {nics[i]:g} NICs do not split into {planes[i]:g} planes"),
        ("rails", (rails > 1) & (per_plane % rails != 0),
         lambda i: f"{per_plane[i]:g} NICs per node and plane do not split into {rails[i]:g} rails"),
        ("rails", rails > down, lambda i: f"{rails[i]:g} rails need leaves with at least that many endpoint ports"),
    )
    return [(field, bad, reason(np.unravel_index(np.argmax(bad), bad.shape) if bad.ndim else ()))
            for field, bad, reason in rules if bad.any()]


def fabrics(c) -> Fabrics:
    """The scenario's fabrics (:func:`fabric_trees` on its cluster fields)."""
    node, fab, sto = c["node"], c["fabric"], c["storage"]
    return fabric_trees(c["node_count"], node["compute_nics"], node["storage_nics"], sto["nodes"], sto["nics"],
                        storage_network=fab["storage_network"], radix=fab["switch_radix"], layers=fab["layers"],
                        zones=fab["zones"], planes=fab["planes"], rails=fab["rails"],
                        oversubscription=fab["oversubscription"], interzone_switches=fab["interzone_switches"],
                        core_pods=fab["core_pods"])


def fabric_trees(nodes, compute_nics, node_storage_nics, storage_nodes, storage_nics, *, storage_network, radix,
                 layers, zones, planes, rails, oversubscription, interzone_switches, core_pods) -> Fabrics:
    """The one fabric-fit decision, for the engine and for a plan's validation alike. Storage shares the
    computation fabric (FF: the compute NIC carries storage traffic too, so a node's own storage NICs
    stay unused) or has its own plane, which the compute nodes' storage NICs and the storage nodes
    join (the Ascend talk's separate sample/data plane)."""
    separate = storage_network == "separate"
    storage_endpoints = storage_nodes * storage_nics + (nodes * node_storage_nics if separate else 0)
    fabric_kwargs = dict(radix=radix, oversubscription=oversubscription, core_pods=core_pods)
    main = topology.fat_tree(nodes * compute_nics + (0 if separate else storage_endpoints), layers=layers,
                             zones=zones, planes=planes, rails=rails, interzone_switches=interzone_switches,
                             **fabric_kwargs)
    plane_endpoints = storage_endpoints if separate else np.zeros_like(np.asarray(storage_endpoints, float))
    storage_plane = topology.fat_tree(plane_endpoints, layers=_plane_layers(plane_endpoints, radix, oversubscription),
                                      **fabric_kwargs)
    broken = layout_rules(compute_nics, planes, rails, radix, oversubscription)
    layout_ok = ~np.logical_or.reduce([bad for _, bad, _ in broken]) if broken else np.array(True)
    errors = {}
    for field, _, reason in broken:
        errors.setdefault(field, reason)
    return Fabrics(main, storage_plane, main + storage_plane, storage_endpoints, layout_ok, errors)


def _plane_layers(endpoints, radix, oversubscription):
    """A storage plane is two layers where two hold it, else three."""
    return where(endpoints <= topology.max_endpoints(radix, 2, 1, oversubscription), 2, 3)


def fabric_wiring(nodes, compute_nics, node_storage_nics, storage_nodes, storage_nics, *, storage_network, radix,
                  layers, zones, planes, rails, oversubscription, interzone_switches, core_pods):
    """The wiring of one build's fabrics (:func:`simcore.formulas.topology.fat_tree_wiring`), the same trees
    :func:`fabric_trees` counts. Returns (compute fabric, storage plane or None). The compute fabric's
    endpoints are each compute node's NICs in order, then (storage shared) each storage node's; the
    storage plane's are each storage node's NICs, then each compute node's storage NICs.

    With zones, the compute nodes are split into as many runs of whole nodes; a storage node with a
    NIC per zone (a multiple of the zones) has NIC t in zone t mod Z (FF: a 3FS node on both zones),
    other storage nodes are split like the compute nodes."""
    separate = storage_network == "separate"
    shared_storage = 0 if separate else storage_nodes * storage_nics
    compute_zone = np.repeat(np.arange(nodes) * zones // max(nodes, 1), compute_nics)
    if storage_nics % zones == 0:
        storage_zone = np.tile(np.arange(storage_nics) % zones, storage_nodes)
    else:
        storage_zone = np.repeat(np.arange(storage_nodes) * zones // max(storage_nodes, 1), storage_nics)
    zone = np.concatenate([compute_zone, storage_zone[:shared_storage]])
    main = topology.fat_tree_wiring(nodes * compute_nics + shared_storage, radix, layers=layers, zones=zones,
                                    planes=planes, rails=rails, oversubscription=oversubscription,
                                    interzone_switches=interzone_switches, core_pods=core_pods, endpoint_zone=zone)
    plane_endpoints = storage_nodes * storage_nics + nodes * node_storage_nics if separate else 0
    if not plane_endpoints:
        return main, None
    plane = topology.fat_tree_wiring(plane_endpoints, radix, layers=int(_plane_layers(plane_endpoints, radix,
                                                                                        oversubscription)),
                                     oversubscription=oversubscription, core_pods=core_pods)
    return main, plane


def link_parts(f: Fabrics, c) -> dict:
    """The fabric's cabling: optical modules in the switches (both ends of every switch-to-switch
    link, and the leaf end of every optical NIC link; :meth:`FabricCounts.switch_modules`, per
    fabric), fibres (one a switch-to-switch link or optical NIC link) and the NIC-end parts: a
    cable a NIC port, or modules, each serving ``endpoint_module_ports`` NIC ports of one node
    (a DGX H100's twin-port cages: one for two of its NICs). An optical scale-up network adds its
    modules (the node's count per GPU) and a fibre for every two."""
    fab, node, sto = c["fabric"], c["node"], c["storage"]
    optical = fab["endpoint_link"] == "optical"
    nic_links = f.total.endpoint_links
    if optical:
        per_node = [(c["node_count"], node["compute_nics"]), (sto["nodes"], sto["nics"])]
        if fab["storage_network"] == "separate":
            per_node.append((c["node_count"], node["storage_nics"]))
        nic_parts = sum(count * np.ceil(nics / fab["endpoint_module_ports"]) for count, nics in per_node)
    else:
        nic_parts = nic_links
    scaleup = np.ceil(c["node_count"] * node["gpus"] * node["scaleup_optics_per_gpu"])
    return {"transceivers": sum(t.switch_modules(fab["transceiver_ports"], t.endpoint_links if optical else 0)
                                for t in (f.main, f.storage_plane)),
            "fibers": f.total.switch_links + (nic_links if optical else 0), "endpoint_cables": nic_parts,
            "scaleup_transceivers": scaleup, "scaleup_fibers": np.ceil(scaleup / 2)}


def fabric_section(f: Fabrics, c, parts: dict) -> dict:
    total, main = f.total, f.main
    return {
        "switches": total.switches,
        "leaf_switches": total.leaf_switches,
        "spine_switches": total.spine_switches,
        "core_switches": total.core_switches,
        "interzone_switches": total.interzone_switches,
        "compute_fabric_switches": main.switches,
        "compute_fabric_leaf_switches": main.leaf_switches,
        "compute_fabric_links": main.endpoint_links + main.switch_links,
        "storage_plane_switches": f.storage_plane.switches,
        "endpoints": total.endpoints,
        "capacity_endpoints": main.capacity_endpoints,
        "fits": f.fits,
        "compute_nics": c["node_count"] * c["node"]["compute_nics"],
        "storage_nics": f.storage_endpoints,
        **parts,
        "switch_links": total.switch_links,
    }


def power_and_racks(c, f: Fabrics, parts: dict, hw: Hardware, domain, params) -> tuple[dict, dict]:
    """IT power by part (``parts``: :func:`link_parts`), racks under their power limit, facility
    power through the PUE (the plan's or its price book's, else its hall's): the power and racks
    sections."""
    node, acc, fab, sto, rack = c["node"], c["node"]["accelerator"], c["fabric"], c["storage"], c["rack"]
    nodes, g = c["node_count"], node["gpus"]
    nics, liquid = node["compute_nics"] + node["storage_nics"], rack["cooling"] == "liquid"
    node_w = power.node_power_w(node["power_w"], g, acc["tdp_w"], node["cpus"], node["cpu_tdp_w"], nics, liquid,
                                params.power)
    node_peak_w = power.node_parts_w(g, acc["tdp_w"], 1.0, node["cpus"], node["cpu_tdp_w"], nics, liquid,
                                     params.power)
    switch_w = power.switch_power_w(fab["switch_power_w"], fab["switch_radix"], fab["switch_gbit_s"], params.power)
    storage_w = power.storage_node_power_w(sto["power_w"], sto["ssds"], sto["cpu_tdp_w"], params.power)
    optical = fab["endpoint_link"] == "optical"  # a NIC-end module carries its NIC ports (at the compute NIC's rate)
    nic_part_gbit_s = node["compute_nic_gbit_s"] * (fab["endpoint_module_ports"] if optical else 1)
    optics_w, optics_basis = power.optics_power_w(
        parts["transceivers"], fab["transceiver_power_w"], fab["switch_gbit_s"] * fab["transceiver_ports"],
        parts["endpoint_cables"], fab["endpoint_cable_power_w"], nic_part_gbit_s, optical, params.power)
    scaleup_module_w = where(np.isnan(node["scaleup_optic_w"]),
                             node["scaleup_optic_gbit_s"] * params.power.optic_w_per_gbit_s, node["scaleup_optic_w"])
    it_power = {"compute_nodes_w": nodes * node_w, "switches_w": f.total.switches * switch_w,
                "optics_w": optics_w, "scaleup_optics_w": parts["scaleup_transceivers"] * scaleup_module_w,
                "storage_nodes_w": sto["nodes"] * storage_w}
    node_max_w, vendor_max = power.node_max_power_w(node["max_power_w"], node_peak_w)
    per_rack, racks, rack_w, budget_w, rack_basis = power.rack_layout(
        nodes, node_w, node_max_w, domain / g, rack["nodes_per_rack"], rack["power_limit_w"], rack["extra_w"],
        rack["units"], node["rack_units"], rack["extra_units"], params.power)
    rack_max_w = per_rack * node_max_w + rack["extra_w"]
    it_power["rack_extra_w"] = racks * rack["extra_w"]
    it_total_w = sum(it_power.values())
    gemm_w, idle_w = compute.accelerator_power_w(acc["tdp_w"], hw.full_clock_w, params.compute)
    pue_given = ~np.isnan(c["prices"]["pue"])
    pue = where(pue_given, c["prices"]["pue"], power.HALL_PUE[rack["hall"]])
    facility_w = it_total_w * pue
    it_provisioned_w = it_total_w + nodes * (node_max_w - node_w)  # a feed's size: compute nodes at their maximum
    section = {
        "accelerator_gemm_w": gemm_w, "accelerator_idle_w": idle_w, "node_w": node_w, "node_peak_w": node_peak_w,
        "node_max_w": node_max_w,
        "node_max_basis": label(power.NODE_MAX_BASES, where(vendor_max, 0, 1)), "switch_w": switch_w,
        "optics_basis": label(power.OPTICS_BASES, optics_basis),
        "storage_node_w": storage_w, **it_power, "it_total_w": it_total_w, "facility_w": facility_w, "pue": pue,
        "it_provisioned_w": it_provisioned_w, "facility_provisioned_w": it_provisioned_w * pue,
        "pue_basis": label(power.PUE_BASES, where(pue_given, 0, 1 + power.HALLS.index(rack["hall"]))),
        "energy_per_year_kwh": power.energy_per_year_kwh(it_total_w, pue),
        "fp16_tflops_per_kw": hw.gemm_tflops["fp16"] * nodes * g / (facility_w / 1000),
    }
    network_racks = where(domain > g, np.ceil(nodes * g / domain), 0.0) * rack["network_racks_per_domain"]
    fabric_racks = power.switch_racks(f.total.switches, fab["switch_rack_units"], switch_w, rack["units"],
                                      rack["power_limit_w"])
    racks_section = {"count": racks, "network_count": network_racks, "fabric_count": fabric_racks,
                     "total_count": racks + network_racks + fabric_racks,
                     "nodes_per_rack": per_rack, "gpus_per_rack": per_rack * g, "power_w": rack_w,
                     "units": rack["units"],
                     "units_used": per_rack * where(np.isnan(node["rack_units"]), 0.0, node["rack_units"])
                     + rack["extra_units"],
                     "max_power_w": rack_max_w, "budget_w": budget_w,
                     "nodes_per_rack_basis": label(power.RACK_BASES, rack_basis), "cooling": rack["cooling"],
                     "within_power_limit": where(np.isnan(rack["power_limit_w"]), True,
                                                    rack_max_w <= rack["power_limit_w"])}
    return section, racks_section


# Bill line -> the price it is counted at (a scale-up fibre is a fibre).
LINE_PRICES = {"compute_nodes": "node", "storage_nodes": "storage_node", "switches": "switch",
               "transceivers": "transceiver", "fibers": "fiber", "endpoint_cables": "endpoint_cable",
               "scaleup_transceivers": "scaleup_optic", "scaleup_fibers": "fiber"}


def cost_section(c, f: Fabrics, parts: dict, power_out: dict, hw: Hardware) -> dict:
    """Capital cost by part from the price book (unpriced parts named) with the total's band from
    the estimated prices' lows and highs, the network's share, the yearly energy bill, capex per
    PFLOPS, and owning a GPU an hour against renting one for the capital's life at the cheapest term."""
    prices, gpus = c["prices"], c["node_count"] * c["node"]["gpus"]
    counts = {"compute_nodes": c["node_count"], "storage_nodes": c["storage"]["nodes"], "switches": f.total.switches,
              **parts}
    unit_prices = {line: prices[part] for line, part in LINE_PRICES.items()}
    capex_lines, capex_total, unpriced = cost.capex(counts, unit_prices)
    capex_low, capex_high = cost.price_band(counts, unit_prices,
                                            {line: prices[f"{part}_low"] for line, part in LINE_PRICES.items()},
                                            {line: prices[f"{part}_high"] for line, part in LINE_PRICES.items()})
    _, rent_rate, rent_term = cost.rent_for(gpus, prices["amortization_years"] * 365.0, prices)
    return {
        "currency": prices["currency"],
        **capex_lines,
        "network": cost.complete_sum(counts, unit_prices, ("switches", "transceivers", "fibers", "endpoint_cables",
                                                           "scaleup_transceivers", "scaleup_fibers")),
        "capex_total": capex_total,
        "capex_low": capex_low,
        "capex_high": capex_high,
        "unpriced": unpriced,
        "unpriced_count": sum((np.asarray(counts[k]) > 0) & np.isnan(unit_prices[k]) for k in counts).astype(float),
        "energy_per_year": cost.energy_cost_per_year(power_out["it_total_w"], power_out["pue"],
                                                     prices["energy_per_kwh"]),
        "capex_per_fp16_pflops": capex_total / (hw.gemm_tflops["fp16"] * gpus / 1000),
        "own_per_gpu_hour": cost.own_cost_per_gpu_hour(capex_total, prices["amortization_years"],
                                                       power_out["facility_w"], prices["energy_per_kwh"], gpus),
        "rent_per_gpu_hour": rent_rate,
        "rent_term": label(cost.RENT_TERM_LABELS, rent_term),
        "amortization_years": prices["amortization_years"],
    }


@dataclass(frozen=True)
class StorageRates:
    """The aggregate rates (GB/s, arrays over scenario points; NaN: unknown) that checkpoints are
    read and written at, for the reliability stage."""

    read_gbyte_s: np.ndarray
    write_gbyte_s: np.ndarray


def storage_section(c) -> tuple[dict, StorageRates]:
    """Aggregate read and write throughput with what bounds each, and capacity; also the rates
    checkpoints read and write at: the storage nodes', else the external storage's (storage module
    docstring), else NaN (unknown)."""
    node, sto, nodes = c["node"], c["storage"], c["node_count"]
    both = (sto["nodes"] > 0) & ~np.isnan(sto["external_write_gbyte_s"])
    if np.any(both):
        raise ScenarioError("cluster.storage.external_write_gbyte_s",
                            "is for a storage system outside the plan: this plan has storage nodes; "
                            "give one or the other")
    client_nic_gbyte_s = where(node["storage_nics"] > 0, node["storage_nics"] * node["storage_nic_gbit_s"],
                                  node["compute_nics"] * node["compute_nic_gbit_s"]) / 8
    external = storage.external_rates_gbyte_s(sto["external_write_gbyte_s"], sto["external_read_gbyte_s"], nodes,
                                              client_nic_gbyte_s)
    read, read_bound = storage.storage_throughput_gbyte_s(
        sto["nodes"], sto["nics"], sto["nic_gbit_s"], sto["ssds"], sto["ssd_read_gbyte_s"], nodes, client_nic_gbyte_s)
    write, write_bound = storage.storage_throughput_gbyte_s(
        sto["nodes"], sto["nics"], sto["nic_gbit_s"], sto["ssds"], sto["ssd_write_gbyte_s"], nodes, client_nic_gbyte_s)
    rates = StorageRates(read_gbyte_s=where(sto["nodes"] > 0, read, external["read"]),
                         write_gbyte_s=where(sto["nodes"] > 0, write, external["write"]))
    return {
        "aggregate_read_gbyte_s": read,
        "read_bound": label(storage.STORAGE_LABELS, read_bound),
        "aggregate_write_gbyte_s": write,
        "write_bound": label(storage.STORAGE_LABELS, write_bound),
        "capacity_tb": sto["nodes"] * sto["ssds"] * sto["ssd_tb"],
    }, rates


def cluster_allreduces(node, io, domain, message_bytes, nodes, params) -> dict:
    """The whole-cluster allreduce of each library at ``message_bytes`` over ``nodes`` nodes: HFReduce
    (with NVLink pairs where the node has them) per node, and NCCL with each scale-up domain as one
    unit (its NICs together). The collective report and the plan's curves both call this."""
    g = node["gpus"]
    out = {"hfreduce": collectives.hfreduce(message_bytes, nodes, io, params=params.collectives),
           "nccl": collectives.nccl_allreduce(message_bytes, np.ceil(nodes * g / domain), domain_io(io, g, domain),
                                              nvlink_all_to_all=node["nvlink_topology"] == "all-to-all",
                                              params=params.collectives)}
    if node["nvlink_topology"] == "pairs":
        out["hfreduce_nvlink"] = collectives.hfreduce(message_bytes, nodes, io, nvlink=True, params=params.collectives)
    return out


def collectives_section(c, io, domain, message_bytes, params) -> dict:
    """Each library's allreduce across the whole cluster at the report's message size."""
    results = cluster_allreduces(c["node"], io, domain, message_bytes, c["node_count"], params)
    return {"message_bytes": message_bytes, **{name: collective_json(r) for name, r in results.items()}}


FABRIC_OVERFLOW = "fabric.overflow"
NIC_LAYOUT = "fabric.nic_layout"
STORAGE_PLANE_OVERFLOW = "storage_plane.overflow"
COST_UNPRICED = "cost.unpriced"
# Constraints that mean the build cannot exist as given (the others are caveats on its figures).
BUILD_BLOCKERS = (FABRIC_OVERFLOW, NIC_LAYOUT, STORAGE_PLANE_OVERFLOW)


def constraint(code: str, message: str) -> dict:
    """A constraint of the result: a stable code to act on and a sentence to show."""
    return {"code": code, "message": message}


def constraints(f: Fabrics, unpriced) -> list[dict]:
    """Why the build cannot exist as given, or what its price leaves out."""
    out = []
    if not f.main.fits.all():
        out.append(constraint(FABRIC_OVERFLOW, f"fabric: {int(np.max(f.main.endpoints))} endpoints exceed what the "
                              f"fabric holds ({int(np.min(f.main.capacity_endpoints))}); add layers, planes or "
                              "zones, or use a larger radix"))
    for field, reason in f.layout_errors.items():
        out.append(constraint(NIC_LAYOUT, f"fabric.{field}: {reason}"))
    if not f.storage_plane.fits.all():
        out.append(constraint(STORAGE_PLANE_OVERFLOW, f"storage plane: {int(np.max(f.storage_plane.endpoints))} "
                              "endpoints exceed a three-layer fat-tree of this switch"))
    if unpriced:
        out.append(constraint(COST_UNPRICED, f"cost: not priced in this price book: {', '.join(unpriced)}"))
    return out
