"""A twin from a plan: its failure categories, fabric and default job, the simulator built from
a stored twin, and creation (checked, with the engine's evaluation of the plan)."""
import numpy as np
from django.conf import settings
from django.db import transaction

import simcore
from planner.adapters import scenario_document
from planner.models import Visibility
from planner.models.catalog import PCI_ADDRESS
from planner.services import engine as engine_service
from simcore.formulas import reliability
from simcore.tools import twin as engine
from twin.models import Twin
from twin.services.errors import TwinInputError

MAX_SPEED = 10_000_000.0  # about four simulated months per wall second
MAX_JOBS = 64
# A node type with no published GPU addresses (its catalogue entry's gpu_pci_bus_ids) maps Xid lines
# by the DGX A100's, unless the twin is given its own.
DEFAULT_PCI_BUS_IDS = [f"0000:{bus:02x}:00.0" for bus in (0x07, 0x0f, 0x47, 0x4e, 0x87, 0x90, 0xb7, 0xbd)]
JOB_FIELDS = ("name", "nodes", "work_s", "interval_s", "checkpoint_s", "restart_s")
OPTIONAL_JOB_FIELDS = {"fault_factor": 0.0, "nodes_per_domain": 0}
DEFAULT_CHECKPOINT_S = 60.0
NO_FAILURE_INTERVAL_S = 86400.0  # a plan whose rates are all zero: a daily checkpoint (any interval is optimal)


def _categories(twin_or_plan):
    """The failure categories of a twin or a plan: its profile with its rate overrides."""
    rate = twin_or_plan.failures_per_1000_node_days if twin_or_plan.failure_profile == "per-node-rate" else None
    node_type = (twin_or_plan.plan if isinstance(twin_or_plan, Twin) else twin_or_plan).node_type
    scope = {**node_type.failure_scope(), "domain_spans_nodes": _domain_nodes(twin_or_plan) > 1}
    return reliability.build_categories(
        twin_or_plan.failure_profile, failures_per_1000_node_days=rate, rates=twin_or_plan.category_rates,
        flap_share=twin_or_plan.link_flap_share, flap_s=twin_or_plan.link_flap_s, **scope)


def _domain_nodes(twin_or_plan) -> int:
    if isinstance(twin_or_plan, Twin):
        return int((twin_or_plan.fabric or {}).get("domain_nodes", 1))
    node = twin_or_plan.node_type
    return (node.scaleup_domain_gpus or node.accelerators_per_node) // node.accelerators_per_node


def twin_categories(twin: Twin) -> list[dict]:
    """The failure categories a twin can inject: key, label, what fails (a GPU, a node, a NIC, a
    link, a switch), whether the platform or the job causes it, what fixes it."""
    return [{"key": c.key, "label": c.label, "unit": c.unit, "cause": c.cause, "action": c.action,
             "repair_h": c.repair_h} for c in _categories(twin)]


def _plan_rate(plan):
    return plan.failures_per_1000_node_days if plan.failure_profile == "per-node-rate" else None


def _fabric(twin: Twin) -> engine.Fabric:
    return engine.Fabric(**twin.fabric) if twin.fabric else engine.Fabric()


def plan_fabric(plan, result: dict) -> dict:
    """The compute fabric's parts as the twin counts them, from the plan's evaluation."""
    fabric = result["fabric"]
    return {"nics_per_node": plan.node_type.compute_nics_per_node, "links": int(fabric["compute_fabric_links"]),
            "leaves": int(fabric["compute_fabric_leaf_switches"]), "switches": int(fabric["compute_fabric_switches"]),
            "domain_nodes": _domain_nodes(plan)}


def default_jobs(plan, result: dict | None = None, spare_nodes: int | None = None) -> list[dict]:
    """One production job on all but a spare pool of nodes (``spare_nodes``, or the spares the
    engine sizes at 99%: where a scale-up domain spans nodes, per domain, as a failed tray is
    replaced only from its own rack), with the plan's checkpoint interval (or the optimum for a
    60-s checkpoint) and the restart its restart profile gives (or the plan's)."""
    result = result or engine_service.evaluate(scenario_document(plan))
    nodes = int(result["cluster"]["nodes"])
    domain_nodes, per_domain = _domain_nodes(plan), 0
    availability = result["reliability"]["node_availability"]
    if spare_nodes is None and domain_nodes > 1:
        domains = nodes // domain_nodes
        per_domain = max(1, domain_nodes - int(reliability.spares_per_domain(domain_nodes, domains, availability)))
        spares = nodes - domains * per_domain
    elif spare_nodes is None:
        spares = int(min(max(1, reliability.spares_needed(nodes, availability)), nodes // 2))
    elif isinstance(spare_nodes, bool) or not isinstance(spare_nodes, int) or not 0 <= spare_nodes < nodes:
        raise TwinInputError({"spare_nodes": [f"a whole number of nodes from 0 to {nodes - 1}: the job needs at "
                                              f"least one of the cluster's {nodes}"]})
    else:
        spares = spare_nodes
    job_nodes = max(1, nodes - spares)
    gpus = job_nodes * plan.node_type.accelerators_per_node
    fabric, share = plan_fabric(plan, result), job_nodes / nodes
    domains = -(-job_nodes // fabric["domain_nodes"]) if fabric["domain_nodes"] > 1 else 0
    units = reliability.unit_counts(gpus, job_nodes, nic=job_nodes * fabric["nics_per_node"],
                                    link=fabric["links"] * share, switch=fabric["switches"] * share, domain=domains)
    timing = reliability.restart_timing(plan.restart_profile, collective_timeout_s=plan.collective_timeout_s)
    kinds, restart_s, _, _ = reliability.job_interruptions(_categories(plan), units,
                                                           0.0, timing, gpus, DEFAULT_CHECKPOINT_S)
    rate_s = float(sum(kinds.values())) / 3600
    optimal_s = float(reliability.optimal_interval_s(DEFAULT_CHECKPOINT_S, rate_s))
    interval_s = plan.checkpoint_interval_s or (optimal_s if np.isfinite(optimal_s) else NO_FAILURE_INTERVAL_S)
    return [{"name": "main", "nodes": job_nodes, "work_s": 365 * 86400.0, "interval_s": interval_s,
             "checkpoint_s": DEFAULT_CHECKPOINT_S, "restart_s": plan.restart_s if plan.restart_s is not None
             else float(restart_s), "fault_factor": 0.0, "nodes_per_domain": per_domain}]


def workload_job(plan, workload, tokens: float | None, spare_nodes: int | None = None) -> dict:
    """The default job sized to train ``workload`` (``tokens``, or its tokens_to_train): its nodes the
    workload's GPUs need (a spare pool of ``spare_nodes``, or the engine's, shrunk to the nodes the
    workload leaves), its work the tokens over the engine's training rate (tokens per second
    with no interruption), its checkpoint stall and interval the engine's for it (or the default
    job's where the plan gives none)."""
    tokens = tokens or workload.tokens_to_train
    if not tokens:
        raise TwinInputError({"tokens": [f"{workload.slug} gives no tokens_to_train: give the tokens to train"]})
    try:
        result = engine_service.evaluate(scenario_document(plan, workload))
    except simcore.ScenarioError as error:
        raise TwinInputError({error.field: [error.reason]}) from error
    training = result.get("training") or {}
    if not training.get("feasible"):
        raise TwinInputError({"workload": [f"{workload.slug} cannot run on {plan.slug}: "
                                           f"{training.get('infeasible_reason', 'no training result')}"]})
    gpn = plan.node_type.accelerators_per_node
    nodes, cluster_nodes = -(-int(training["gpus"]) // gpn), int(result["cluster"]["nodes"])
    if nodes > cluster_nodes:
        raise TwinInputError({"workload": [f"{workload.slug} needs {nodes} nodes; {plan.slug} has {cluster_nodes}"]})
    job = default_jobs(plan, result, spare_nodes)[0]
    if nodes > job["nodes"] and spare_nodes is None:  # the workload's nodes first, the spare pool what is left
        job = default_jobs(plan, result, cluster_nodes - nodes)[0]
    if nodes > job["nodes"]:
        raise TwinInputError({"spare_nodes": [f"{workload.slug} needs {nodes} of the {cluster_nodes} nodes: at most "
                                              f"{cluster_nodes - nodes} can be spares"]})
    rel = result["reliability"]
    checkpoint_s = rel.get("checkpoint_time_s")
    interval_s = rel.get("checkpoint_interval_s") or job["interval_s"]
    return {**job, "name": workload.slug, "nodes": nodes, "work_s": float(tokens) / float(training["tokens_per_s"]),
            "checkpoint_s": float(checkpoint_s) if checkpoint_s else job["checkpoint_s"],
            "interval_s": float(interval_s)}


def _jobs(specs: list[dict]) -> list[engine.Job]:
    if not isinstance(specs, list) or not specs:
        raise TwinInputError({"jobs": ["give at least one job"]})
    jobs = []
    for i, spec in enumerate(specs):
        if not isinstance(spec, dict) or not set(JOB_FIELDS) <= set(spec) <= set(JOB_FIELDS) | set(OPTIONAL_JOB_FIELDS):
            raise TwinInputError({f"jobs.{i}": [f"needs the fields {', '.join(JOB_FIELDS)} "
                                                f"(and optionally {', '.join(OPTIONAL_JOB_FIELDS)})"]})
        values = {}
        for key in (*JOB_FIELDS[1:], *OPTIONAL_JOB_FIELDS):
            value = spec.get(key, OPTIONAL_JOB_FIELDS.get(key))
            if isinstance(value, bool) or not isinstance(value, int | float) or not np.isfinite(value):
                raise TwinInputError({f"jobs.{i}.{key}": ["must be a number"]})
            values[key] = float(value)
        if not isinstance(spec["name"], str) or not 0 < len(spec["name"]) <= 100 or "\x00" in spec["name"]:
            raise TwinInputError({f"jobs.{i}.name": ["a name of 1 to 100 characters (no NUL)"]})
        jobs.append(engine.Job(name=spec["name"], nodes=int(values["nodes"]), work_s=values["work_s"],
                               interval_s=values["interval_s"], checkpoint_s=values["checkpoint_s"],
                               restart_s=values["restart_s"], fault_factor=values["fault_factor"],
                               nodes_per_domain=int(values["nodes_per_domain"])))
    return jobs


def simulator(twin: Twin, state: bytes | None = None) -> engine.Twin:
    kwargs = dict(nodes=twin.node_count, gpus_per_node=twin.gpus_per_node, jobs=_jobs(twin.jobs),
                  categories=_categories(twin),
                  fabric=_fabric(twin), exclude_after=twin.exclude_after)
    try:
        if state is None:
            return engine.Twin(**kwargs, rng=np.random.default_rng(twin.seed))
        return engine.Twin.from_bytes(state, **kwargs)
    except simcore.ScenarioError as error:
        raise TwinInputError({error.field: [error.reason]}) from error


def check_speed(speed):
    """A twin's speed: a number (not a boolean; an integer of any size is compared as the number it is,
    never converted past a float's range) above 0 and at most MAX_SPEED."""
    if isinstance(speed, bool) or not isinstance(speed, int | float) \
            or (isinstance(speed, float) and not np.isfinite(speed)) or not 0 < speed <= MAX_SPEED:
        raise TwinInputError({"speed": [f"simulated seconds per wall second, above 0 and at most {MAX_SPEED:,.0f}"]})


def pci_bus(bus: str) -> str:
    """Normalise a PCI bus id to domain:bus:device.function, lower case."""
    text = str(bus).strip().lower()
    return text if "." in text else f"{text}.0"


def checked_pci_bus_ids(buses, gpus_per_node: int) -> list[str]:
    """A node's GPU addresses in GPU order, normalised, or a field error: one distinct PCI address
    (dddd:bb:dd[.f]) per GPU."""
    if not isinstance(buses, list) or not all(isinstance(b, str) for b in buses):
        raise TwinInputError({"pci_bus_ids": ["a list of PCI addresses, one per GPU"]})
    normal = [pci_bus(b) for b in buses]
    bad = [b for b in normal if not PCI_ADDRESS.fullmatch(b)]
    if bad or len(normal) != gpus_per_node or len(set(normal)) != gpus_per_node:
        raise TwinInputError({"pci_bus_ids": [f"give {gpus_per_node} distinct PCI bus ids (dddd:bb:dd.f), one per GPU"
                                              + (f"; not addresses: {', '.join(bad)}" if bad else "")]})
    return normal


@transaction.atomic
def twin_create(*, owner, plan, name: str = "", seed: int = 0, speed: float = 3600.0, jobs=None,
                pci_bus_ids=None, exclude_after: int = 3, spare_nodes: int | None = None, workload=None,
                tokens: float | None = None, visibility: str = Visibility.PRIVATE,
                work_budget_s: float | None = None) -> Twin:
    """A new twin of the plan, paused at time zero; its job ``jobs``, else one training ``workload``
    (:func:`workload_job`), else a year's work on all but the spares (:func:`default_jobs`);
    ``work_budget_s`` (web requests) bounds the engine work of building it (simcore.budget)."""
    check_speed(speed)
    if (isinstance(exclude_after, bool) or not isinstance(exclude_after, int)
            or not 0 <= exclude_after <= engine.MAX_EXCLUDE_AFTER):
        raise TwinInputError({"exclude_after": [f"a whole number of faults, from zero (never exclude) to "
                                                f"{engine.MAX_EXCLUDE_AFTER}"]})
    gpus_per_node = plan.node_type.accelerators_per_node
    if plan.node_count * gpus_per_node > settings.TWIN_MAX_GPUS:
        raise TwinInputError({"plan": [f"{plan.node_count * gpus_per_node:,} GPUs; a twin holds at most "
                                       f"{settings.TWIN_MAX_GPUS:,} (TWIN_MAX_GPUS)"]})
    buses = checked_pci_bus_ids(pci_bus_ids or plan.node_type.gpu_pci_bus_ids or DEFAULT_PCI_BUS_IDS[:gpus_per_node],
                                gpus_per_node)
    if jobs is not None and spare_nodes is not None:
        raise TwinInputError({"spare_nodes": ["sizes the default job's spare pool: give it or jobs, not both"]})
    if jobs is not None and workload is not None:
        raise TwinInputError({"workload": ["sizes the default job: give it or jobs, not both"]})
    if jobs is not None and (not isinstance(jobs, list) or len(jobs) > MAX_JOBS):
        raise TwinInputError({"jobs": [f"a list of at most {MAX_JOBS} jobs"]})
    try:
        simcore.budget.check("plan", simcore.budget.twin_s(plan.node_count * gpus_per_node), work_budget_s,
                             "a smaller plan")
        result = engine_service.evaluate(scenario_document(plan), work_budget_s=work_budget_s)
    except simcore.ScenarioError as error:
        raise TwinInputError({error.field: [error.reason]}) from error
    twin = Twin(owner=owner, plan=plan, name=name or f"{plan.name} twin", seed=seed, speed=speed, visibility=visibility,
                node_count=plan.node_count, gpus_per_node=gpus_per_node, failure_profile=plan.failure_profile,
                failures_per_1000_node_days=_plan_rate(plan), category_rates=plan.category_rates,
                link_flap_share=plan.link_flap_share, link_flap_s=plan.link_flap_s,
                fabric=plan_fabric(plan, result),
                exclude_after=exclude_after,
                jobs=jobs if jobs is not None else [workload_job(plan, workload, tokens, spare_nodes)] if workload
                else default_jobs(plan, result, spare_nodes),
                pci_bus_ids=buses)
    sim = simulator(twin)
    twin.state = sim.to_bytes()
    twin.metrics = sim.metrics()
    twin.save()
    return twin
