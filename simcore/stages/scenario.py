"""The orchestrator: a scenario document in, a result document out.

``evaluate(document)`` validates the document (:mod:`simcore.document`), broadcasts every numeric
field to one scenario shape, runs each model on whole arrays and returns plain JSON-ready data:
a number (or a list, one entry per scenario point) for every metric, with units in the names,
and the binding constraint of each bounded quantity.
"""
from dataclasses import dataclass, field

import numpy as np

from simcore import budget, fitted
from simcore.arrays import to_json, where
from simcore.document import parse
from simcore.errors import ScenarioError
from simcore.formulas import reliability
from simcore.formulas.collectives import CollectiveParams
from simcore.formulas.compute import ComputeParams
from simcore.formulas.devices import FAMILIES
from simcore.formulas.node import node_io, scaleup_domain_gpus
from simcore.formulas.power import PowerParams
from simcore.formulas.training import TrainingParams
from simcore.outputs import counts_as_integers
from simcore.stages import cluster, failures, job
from simcore.version import ENGINE_VERSION


@dataclass(frozen=True)
class EngineParams:
    """Every calibrated constant of the engine, grouped by model; each has its basis documented."""

    compute: ComputeParams = field(default_factory=ComputeParams)
    families: dict = field(default_factory=lambda: dict(FAMILIES))
    collectives: CollectiveParams = field(default_factory=CollectiveParams)
    power: PowerParams = field(default_factory=PowerParams)
    training: TrainingParams = field(default_factory=TrainingParams)
    # Constants fitted over the development set (simcore.fitted; simcore/data/fitted_constants.yaml), by name.
    fitted: dict = field(default_factory=fitted.values)


def _lists(tree, prefix, found: list):
    """Append (dotted path, array) for every numeric field of ``tree`` that holds a list of values."""
    for key, value in tree.items():
        if type(value) is dict:
            _lists(value, f"{prefix}.{key}" if prefix else key, found)
        elif type(value) is np.ndarray and value.ndim:
            found.append((f"{prefix}.{key}" if prefix else key, value))


def _broadcast_tree(tree) -> tuple[int, ...]:
    lists: list = []
    _lists(tree, "", lists)
    try:
        return np.broadcast_shapes(*(a.shape for _, a in lists))
    except ValueError:
        first = (lists[0][0], lists[0][1].shape[0])
        other = next((p, a.shape[0]) for p, a in lists if a.shape[0] != first[1])
        raise ScenarioError(other[0], f"has {other[1]} values but {first[0]} has {first[1]}; "
                                      "lists must have equal lengths (or one value)") from None


def point_count(document) -> int:
    """How many scenario points a document describes (after validation and broadcasting)."""
    return _points(parse(document))


def evaluate(document, params: EngineParams | None = None, *, work_budget_s: float | None = None) -> dict:
    """Evaluate one scenario document (possibly many points) and return the result document.

    With ``work_budget_s`` (a web request), a document whose estimated engine time and JSON answer
    (:mod:`simcore.budget`) are over it is refused with a field error before that work starts."""
    parsed = parse(document)
    points = _points(parsed)
    budget.check("(document)", budget.answer_s(points), work_budget_s,
                 f"{points:,} scenario points; fewer, or submit a sweep")
    result = evaluate_parsed(parsed, params or EngineParams(), work_budget_s=work_budget_s)
    return counts_as_integers(to_json(result))


def evaluate_parsed(p: dict, params: EngineParams, *, work_budget_s: float | None = None) -> dict:
    """The pipeline, one call per stage: compute, fabric, power and racks, cost, storage,
    collectives, cluster reliability; with a workload, training, the job's reliability and time and
    cost to train; then the Monte Carlo check when asked for."""
    c = p["cluster"]
    node, nodes, g = c["node"], c["node_count"], c["node"]["gpus"]
    gpus = nodes * g
    domain = scaleup_domain_gpus(node)
    hw = cluster.hardware(node["accelerator"], c["calibration"], params)
    fabrics = cluster.fabrics(c)
    parts = cluster.link_parts(fabrics, c)
    power_out, racks = cluster.power_and_racks(c, fabrics, parts, hw, domain, params)
    cost_out = cluster.cost_section(c, fabrics, parts, power_out, hw)
    storage_out, storage_rates = cluster.storage_section(c)
    io = node_io(node, node["accelerator"], g, hw.family.scaleup_fraction, params.collectives)
    result = {
        "engine_version": ENGINE_VERSION,
        "cluster": {"nodes": nodes, "gpus": gpus, "scaleup_domain_gpus": domain,
                    "scaleup_domains": np.ceil(gpus / domain)},
        "racks": racks,
        "compute": cluster.compute_section(hw, gpus),
        "calibration": cluster.calibration_section(hw.family, c["calibration"]),
        "fabric": cluster.fabric_section(fabrics, c, parts),
        "power": power_out,
        "cost": cost_out,
        "storage": storage_out,
        "collectives": cluster.collectives_section(c, io, domain, p["options"]["message_bytes"], params),
        "constraints": cluster.constraints(fabrics, cost_out["unpriced"]),
    }
    categories, excluded = failures.failure_categories(
        c["reliability"], spans_nodes=bool((domain > g).any()), xids=hw.family.vendor == "NVIDIA",
        nvlink=bool(np.all((node["nvlink_topology"] != "none") & (node["accelerator"]["scaleup_bw_gbyte_s"] > 0))))
    total = fabrics.total
    scaleup_links = parts["scaleup_fibers"]  # an optical scale-up link fails as a fabric link does
    cluster_units = reliability.unit_counts(gpus, nodes, link=total.endpoint_links + total.switch_links + scaleup_links,
                                            nic=total.endpoints, switch=total.switches,
                                            domain=where(domain > g, np.ceil(gpus / domain), 0.0))
    result["reliability"] = {**failures.reliability_cluster(categories, cluster_units),
                             "excluded_categories": excluded}
    cycle = None
    if p["has_workload"]:
        result["training"], job_reliability, cycle = _train(p, params, hw, io, domain, fabrics.main, categories,
                                                            storage_rates, power_out["facility_w"],
                                                            cost_out["capex_total"], scaleup_links)
        result["reliability"].update(job_reliability)
        result["constraints"] += job.training_constraints(result["training"])
    if p["options"]["monte_carlo_replicas"] > 0:
        result["reliability"]["monte_carlo"] = failures.monte_carlo(
            p, categories, cluster_units, _points(p), work_budget_s, cycle,
            result["training"]["feasible"] if cycle is not None else None)
    return result


def _train(p, params, hw, io, domain, main_fabric, categories, storage_rates, facility_w, capex_total,
           scaleup_links):
    """The training stage, then the job's reliability (on its own parts and its share of the compute
    fabric's links and switches, and of the optical scale-up links) and its time and cost to train:
    (training section, the job's reliability figures, its :class:`~simcore.stages.failures.JobCycle`)."""
    c = p["cluster"]
    node, nodes, g = c["node"], c["node_count"], c["node"]["gpus"]
    training_out, trained = job.train(p, params, hw.family, hw.clock, io, node, node["accelerator"], g, nodes)
    share = trained.nodes / nodes
    units = reliability.unit_counts(trained.gpus, trained.nodes, nic=trained.nodes * node["compute_nics"],
                                    link=(main_fabric.endpoint_links + main_fabric.switch_links
                                          + scaleup_links) * share,
                                    switch=main_fabric.switches * share, domain=trained.domains)
    job_reliability, cycle = failures.reliability_job(p, categories, trained, units, node, c["storage"],
                                                      storage_rates)
    training_out.update(job.time_and_cost_to_train(p["workload"]["tokens_to_train"], trained,
                                                   training_out["step_time_s"], cycle.ettr, nodes * g, facility_w,
                                                   capex_total, c["prices"]))
    return training_out, job_reliability, cycle


def _points(p: dict) -> int:
    """Scenario points of a parsed document (its numeric fields broadcast together)."""
    return int(np.prod(_broadcast_tree({k: v for k, v in p.items() if isinstance(v, dict)})))
