"""The one bridge between ORM rows and the engine: plans and workloads to scenario documents.

Nothing else in the project builds a ``simcore`` scenario from the database; the API, commands
and (later) sweeps and twins all come through here.
"""

from django.db import models

from planner.choices import RentTerm
from planner.models import CarriedCalibration, ClusterPlan, Measurement, PriceBook, PriceItem, Workload
from planner.models.declared import PLAN_SECTIONS, section_values
from simcore.formulas.compute import pcie_practical_gbyte_s


def _float(value):
    return None if value is None else float(value)


def price_index(book: PriceBook) -> dict[tuple[str, str], PriceItem]:
    """(part kind, slug) -> the book's item for every part; a GPU-hour's key is (``gpu-hour:<term>``,
    slug), one a rental term."""
    return {(f"{item.part_kind}:{item.term}" if item.term else item.part_kind, item.part_slug): item
            for item in book.items.all()}


def node_document(node) -> dict:
    acc, cpu = node.accelerator, node.cpu
    cpus = node.cpus_per_node if cpu else 0
    return {
        "gpus": node.accelerators_per_node,
        "accelerator": {
            "peak_tf32_tflops": acc.peak_tf32_tflops,
            "peak_fp16_tflops": acc.peak_fp16_tflops,
            "peak_fp8_tflops": acc.peak_fp8_tflops,
            "peak_fp4_tflops": acc.peak_fp4_tflops,
            "memory_gib": acc.memory_gib,
            "tdp_w": acc.tdp_w,
            "full_clock_power_w": acc.full_clock_power_w,
            "scaleup_bw_gbyte_s": acc.scaleup_bw_gbyte_s or 0.0,
            "family": acc.family,
            "sm_count": acc.sm_count,
            "memory_bandwidth_gbyte_s": acc.memory_bandwidth_gbyte_s,
        },
        "nvlink_topology": node.nvlink_topology,
        "scaleup_domain_gpus": node.scaleup_domain_gpus,
        "nvlink_sharp": node.nvlink_sharp,
        "cpus": cpus,
        "cpu_cores": cpu.cores * cpus if cpu else None,
        "cpu_tdp_w": cpu.tdp_w if cpu else None,
        "host_op_us": cpu.host_op_us if cpu else None,
        "host_module_us": cpu.host_module_us if cpu else None,
        "host_memory_bw_gbyte_s": node.host_memory_practical_bw_gbyte_s,
        "host_memory_peak_bw_gbyte_s": cpu.memory_bandwidth_gbyte_s * cpus if cpu else None,
        "pcie_bw_gbyte_s": pcie_practical_gbyte_s(acc.host_pcie_gen, acc.host_pcie_lanes),
        "root_port_bw_gbyte_s": cpu.root_port_bw_gbyte_s if cpu else None,
        "shared_root_ports": node.root_ports_shared_by_two_gpus,
        "p2p_limit_gbyte_s": node.gpu_nic_p2p_limit_gbyte_s,
        "compute_nics": node.compute_nics_per_node,
        "compute_nic_gbit_s": node.compute_nic.line_rate_gbit_s * node.compute_nic.ports,
        "storage_nics": node.storage_nics_per_node,
        "storage_nic_gbit_s": (node.storage_nic.line_rate_gbit_s * node.storage_nic.ports) if node.storage_nic else 0.0,
        "power_w": node.measured_power_w,
        "max_power_w": node.max_power_w,
        "rack_units": node.rack_units,
        "scaleup_optics_per_gpu": node.scaleup_optics_per_gpu,
        "scaleup_optic_w": node.scaleup_optic.power_w if node.scaleup_optic else None,
        "scaleup_optic_gbit_s": node.scaleup_optic.speed_gbit_s if node.scaleup_optic else 800.0,
    }


def storage_document(plan: ClusterPlan) -> dict:
    storage = plan.storage_node_type
    if storage is None or not plan.storage_node_count:
        return section_values(plan, PLAN_SECTIONS, "cluster.storage")
    return {
        "nodes": plan.storage_node_count,
        "nics": storage.nics_per_node,
        "nic_gbit_s": storage.nic.line_rate_gbit_s * storage.nic.ports,
        "ssds": storage.ssd_count,
        "ssd_tb": storage.ssd_capacity_tb,
        "ssd_read_gbyte_s": storage.ssd_read_gbyte_s,
        "ssd_write_gbyte_s": storage.ssd_write_gbyte_s,
        "power_w": storage.measured_power_w,
        "cpu_tdp_w": storage.cpu.tdp_w if storage.cpu else None,
    }


# A GPU-hour's rental term -> the engine's price field (simcore.formulas.cost.RENT_TERMS).
RENT_TERM_FIELDS = {RentTerm.ON_DEMAND: "gpu_hour", RentTerm.CAPACITY_BLOCK: "gpu_hour_capacity_block",
                    RentTerm.ONE_YEAR: "gpu_hour_1y", RentTerm.THREE_YEAR: "gpu_hour_3y"}


def plan_price_items(plan: ClusterPlan) -> dict[str, PriceItem | None]:
    """The plan's book's item for each price the engine takes: a part's (``node``, ``switch``, ...;
    None where the plan names no part or the book has no price) and each GPU-hour term's."""
    items = price_index(plan.price_book)
    parts = {"node": ("compute-node", plan.node_type), "storage_node": ("storage-node", plan.storage_node_type),
             "switch": ("switch", plan.switch), "transceiver": ("link-part", plan.transceiver),
             "endpoint_cable": ("link-part", plan.endpoint_cable), "fiber": ("link-part", plan.fiber),
             "scaleup_optic": ("link-part", plan.node_type.scaleup_optic)}
    found = {name: items.get((kind, part.slug)) if part is not None else None for name, (kind, part) in parts.items()}
    accelerator = plan.node_type.accelerator.slug
    rents = {field: items.get((f"gpu-hour:{term}", accelerator)) for term, field in RENT_TERM_FIELDS.items()}
    return {**found, **rents}


def prices_document(plan: ClusterPlan) -> dict:
    """The engine's prices: each counted part's unit price with the low and high of its band
    (an estimate's; a quote's are its price), and a GPU-hour price per rental term."""
    book = plan.price_book
    document = {"currency": book.currency, "energy_per_kwh": _float(book.energy_price_per_kwh),
                "pue": plan.pue if plan.pue is not None else book.pue}
    for name, item in plan_price_items(plan).items():
        document[name] = _float(item.unit_price) if item else None
        if name not in RENT_TERM_FIELDS.values():
            document[f"{name}_low"] = _float(item.low_price) if item else None
            document[f"{name}_high"] = _float(item.high_price) if item else None
    return document


def calibration(plan: ClusterPlan) -> dict[str, dict]:
    """The measured constants that replace the family's for this plan: constant -> {value,
    measurement, name, kind, carried}. A measurement applies when it is marked as an override, was
    taken on the plan's node type, and was uploaded against this plan or (against the node type
    alone) by the plan's owner; a plan's own beats the node type's, and the newest wins. Beneath
    them, the traces the owner carried here from another build of the same family
    (:class:`CarriedCalibration`), each entry's ``carried`` naming the build it was traced on with the
    share's ``low`` and ``high`` over the trace's ranks and steps (None for a measurement of this build's own)."""
    if plan.pk is None and plan.owner_id is None:
        return {}  # an unsaved preview
    chosen = {}
    if plan.pk:
        family = plan.node_type.accelerator.family
        for carried in CarriedCalibration.objects.filter(plan_id=plan.pk).select_related(
                "measurement__plan", "measurement__node_type__accelerator"):
            measurement = carried.measurement
            if measurement.node_type.accelerator.family != family:
                continue  # the plan's node type has changed family since: nothing of the trace holds
            origin = {"plan": measurement.plan.slug if measurement.plan else None,
                      "node_type": measurement.node_type.slug}
            for constant, fit in measurement.fitted.items():
                chosen[constant] = _override(measurement, fit, {**origin, "low": fit.get("low", fit["value"]),
                                                                "high": fit.get("high", fit["value"])})
    scope = models.Q(plan__isnull=True, owner_id=plan.owner_id)
    if plan.pk:
        scope |= models.Q(plan_id=plan.pk)
    found = Measurement.objects.filter(scope, use_as_override=True, node_type_id=plan.node_type_id).order_by(
        models.F("plan_id").asc(nulls_first=True), "created_at", "id")
    for measurement in found:  # node-type ones first (plan_id null sorts first), each newer over the older
        for constant, fit in measurement.fitted.items():
            chosen[constant] = _override(measurement, fit)
    return chosen


def _override(measurement: Measurement, fit: dict, carried: dict | None = None) -> dict:
    """One fitted constant of a measurement as an override entry (``carried``: where it came from, if carried)."""
    return {"value": fit["value"], "measurement": measurement.pk, "name": measurement.name, "kind": measurement.kind,
            "carried": carried}


def link_power(plan: ClusterPlan) -> dict:
    """The fabric's cabling as the engine takes it: the switch module's ports (2: twin-port);
    optical NIC links when the part at the NIC is a module (:meth:`ClusterPlan.optical_nic_links`),
    with its ports (2: a node's twin-port cage); each module's draw and each cable's, both ends
    (the catalogue's figure is per end or module; null: none given)."""
    optic, cable = plan.transceiver, plan.endpoint_cable
    optical = plan.optical_nic_links
    return {
        "transceiver_ports": optic.ports if optic else 1,
        "transceiver_power_w": optic.power_w if optic else None,
        "endpoint_link": "optical" if optical else "cable",
        "endpoint_module_ports": cable.ports if optical else 1,
        "endpoint_cable_power_w": (1 if optical else 2) * cable.power_w if cable and cable.power_w is not None
        else None,
    }


def cluster_document(plan: ClusterPlan, overrides: dict | None = None) -> dict:
    """The engine's cluster section for a plan; ``overrides``: :func:`calibration` of the plan when
    the caller has it already."""
    return {
        "node_count": plan.node_count,
        "node": node_document(plan.node_type),
        "fabric": {
            "layers": plan.fabric_layers,
            "switch_radix": plan.switch.radix,
            "switch_gbit_s": plan.switch.port_speed_gbit_s,
            "switch_power_w": plan.switch.power_w,
            "switch_rack_units": plan.switch.rack_units,
            **link_power(plan),
            **section_values(plan, PLAN_SECTIONS, "cluster.fabric"),
        },
        "rack": {"nodes_per_rack": plan.node_type.nodes_per_rack or plan.nodes_per_rack,
                 "power_limit_w": plan.rack_power_limit_w, "extra_w": plan.node_type.rack_extra_power_w or 0.0,
                 "extra_units": plan.node_type.rack_extra_units, "cooling": plan.node_type.cooling,
                 "hall": plan.hall, "network_racks_per_domain": plan.node_type.network_racks_per_domain},
        "storage": storage_document(plan),
        "prices": prices_document(plan),
        "reliability": {"profile": plan.failure_profile, **section_values(plan, PLAN_SECTIONS, "cluster.reliability")},
        "calibration": {constant: fit["value"] for constant, fit in
                        (calibration(plan) if overrides is None else overrides).items()},
    }


def workload_document(workload: Workload) -> dict:
    return workload.engine_document()


def scenario_document(plan: ClusterPlan, workload: Workload | None = None, options: dict | None = None,
                      overrides: dict | None = None) -> dict:
    """The engine's scenario document for a plan, optionally with a workload and engine options
    (``overrides`` as for :func:`cluster_document`)."""
    document = {"cluster": cluster_document(plan, overrides)}
    if workload is not None:
        document["workload"] = workload_document(workload)
    if options:
        document["options"] = options
    return document
