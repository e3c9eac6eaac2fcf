"""Plan services: evaluate, compare, bill of materials, clone (keyword-only, one per workflow)."""
import csv
import hashlib
import io
import json
from dataclasses import dataclass

from django.core.cache import cache
from django.db import transaction

import simcore
from config import observability as metrics
from planner.adapters import price_index, scenario_document
from planner.models import ClusterPlan, PriceItem, Workload
from simcore.sweep import dig


class PlanInfeasible(Exception):
    """The plan (with this workload) cannot run: the reasons say why, ``details`` shows the numbers."""

    def __init__(self, reasons: list[str], details: dict):
        self.reasons = reasons
        self.details = details
        super().__init__("; ".join(reasons))


EVALUATION_CACHE_S = 600


def memoized(kind: str, document: dict, compute):
    """``compute()``, memoized in the cache for EVALUATION_CACHE_S under the document and engine
    version: the engine's outputs are a pure function of both, and architects evaluate the same
    presets and plans again and again."""
    digest = hashlib.sha256(json.dumps([simcore.ENGINE_VERSION, document], sort_keys=True, default=str).encode())
    key = f"{kind}:{digest.hexdigest()}"
    value = cache.get(key)
    if value is None:
        metrics.EVALUATIONS.labels(kind).inc()
        with metrics.EVALUATION_SECONDS.labels(kind).time():
            value = compute()
        cache.set(key, value, EVALUATION_CACHE_S)
    return value


def plan_evaluate(*, plan: ClusterPlan, workload: Workload | None = None, options: dict | None = None,
                  document: dict | None = None, work_budget_s: float | None = None) -> dict:
    """Evaluate a plan (and workload): the engine's full result document.

    ``document`` is the plan's scenario document when the caller has built it already; with
    ``work_budget_s`` (web requests), work estimated over it is refused (a ScenarioError).
    Raises :class:`simcore.ScenarioError` for bad options and :class:`PlanInfeasible` when the
    fabric cannot hold the build or the workload cannot run on it, so that no numbers are reported
    for a build that cannot exist.
    """
    document = document or scenario_document(plan, workload, options)
    result = memoized("evaluation", document, lambda: simcore.evaluate(document, work_budget_s=work_budget_s))
    reasons = [c["message"] for c in result["constraints"] if c["code"] in simcore.cluster.BUILD_BLOCKERS]
    training = result.get("training")
    if training is not None and not training["feasible"]:
        reason = training["infeasible_reason"]
        if reason == simcore.job.INFEASIBLE_REASONS[simcore.job.MEMORY_REASON]:
            memory = training["memory"]
            reason += (f": {memory['per_gpu_gb']:.1f} GB per GPU against {memory['hbm_gb']:g} GB of HBM, "
                       f"mostly {memory['dominant_term']}")
        reasons.append(f"workload '{workload.slug}': {reason}")
    if reasons:
        raise PlanInfeasible(reasons, {"fabric": result["fabric"], "training": training})
    return {
        "plan": plan.slug,
        "workload": workload.slug if workload else None,
        "engine_version": result["engine_version"],
        "result": result,
        "curves": memoized("curves", document, lambda: simcore.curves(document, result=result)),
    }


@dataclass(frozen=True)
class BomLine:
    part: str
    part_kind: str
    slug: str
    quantity: int
    unit_price: float | None
    extended_price: float | None
    source: str


BOM_COLUMNS = ["part", "part_kind", "slug", "quantity", "unit_price", "extended_price", "currency", "source"]


def plan_bom(*, plan: ClusterPlan, result: dict | None = None) -> dict:
    """Bill of materials: every part with its quantity and, where the price book has it, prices.

    Quantities are the evaluation's counts; the extended prices add up to its ``capex_total``.
    NICs ship inside the nodes and are listed for completeness with no price of their own.
    """
    result = result or simcore.evaluate(scenario_document(plan))
    fabric = result["fabric"]
    prices = price_index(plan.price_book)
    basis = {(i.part_kind, i.part_slug): i.basis for i in PriceItem.objects.filter(price_book=plan.price_book)}
    lines: list[BomLine] = []

    def add(label, kind, part, quantity, priced=True, note=""):
        if part is None or not quantity:
            return
        unit = prices.get((kind, part.slug)) if priced else None
        unit = float(unit) if unit is not None else None
        source = basis.get((kind, part.slug)) or note or f"not priced in {plan.price_book.slug}"
        quantity = int(quantity)
        lines.append(BomLine(label, kind, part.slug, quantity, unit,
                             None if unit is None else round(unit * quantity, 6), source))

    node = plan.node_type
    add("compute node", "compute-node", node, plan.node_count)
    add("storage node", "storage-node", plan.storage_node_type, plan.storage_node_count)
    add("switch, computation fabric", "switch", plan.switch, fabric["compute_fabric_switches"])
    add("switch, storage plane", "switch", plan.switch, fabric["storage_plane_switches"])
    included = "included in the node's price"
    add("compute NIC", "nic", node.compute_nic, fabric["compute_nics"], priced=False, note=included)
    storage_nics = fabric["storage_nics"]
    if plan.storage_node_type is not None and plan.storage_node_count:
        on_storage_nodes = plan.storage_node_count * plan.storage_node_type.nics_per_node
        add("storage-node NIC", "nic", plan.storage_node_type.nic, on_storage_nodes, priced=False, note=included)
        storage_nics -= on_storage_nodes
    add("compute-node storage NIC", "nic", node.storage_nic, storage_nics, priced=False, note=included)
    add("endpoint cable", "link-part", plan.endpoint_cable, fabric["endpoint_cables"])
    add("optical transceiver", "link-part", plan.transceiver, fabric["transceivers"])
    add("fibre", "link-part", plan.fiber, fabric["fibers"])
    rows = [line.__dict__ for line in lines]
    return {
        "plan": plan.slug,
        "price_book": plan.price_book.slug,
        "currency": plan.price_book.currency,
        "lines": rows,
        "total": round(sum(line.extended_price or 0.0 for line in lines), 6),
        "unpriced": [line.slug for line in lines if line.unit_price is None and line.source != included],
    }


def bom_csv(bom: dict) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=BOM_COLUMNS, lineterminator="\n")
    writer.writeheader()
    for line in bom["lines"]:
        writer.writerow({**{k: ("" if v is None else v) for k, v in line.items()}, "currency": bom["currency"]})
    writer.writerow({"part": "total", "extended_price": bom["total"], "currency": bom["currency"]})
    return out.getvalue()


def _gemm_mean(result):
    tf32, fp16 = result["compute"]["gemm_tf32_tflops"], result["compute"]["gemm_fp16_tflops"]
    known = [v for v in (tf32, fp16) if v is not None]
    return sum(known) / len(known) if known else None


def _node_price(result):
    price = result["cost"]["compute_nodes"]
    return None if price is None else price / result["cluster"]["nodes"]


def _per_node_price(result):
    gemm, price = _gemm_mean(result), _node_price(result)
    return None if gemm is None or not price else gemm / price


# (key, label, unit, how to read it from a result): the metrics a comparison lines up.
COMPARE_METRICS = [
    ("gpus", "GPUs", "GPUs", "cluster.gpus"),
    ("nodes", "compute nodes", "nodes", "cluster.nodes"),
    ("switches", "switches", "switches", "fabric.switches"),
    ("compute_fabric_switches", "switches, computation fabric", "switches", "fabric.compute_fabric_switches"),
    ("transceivers", "optical transceivers", "modules", "fabric.transceivers"),
    ("network_cost", "network price", "currency", "cost.network"),
    ("capex_total", "total price", "currency", "cost.capex_total"),
    ("node_price", "price per compute node", "currency", _node_price),
    ("energy_cost_per_year", "energy per year", "currency", "cost.energy_per_year"),
    ("node_power_w", "power per compute node", "W", "power.node_w"),
    ("scaleup_domain_gpus", "GPUs per NVLink domain", "GPUs", "cluster.scaleup_domain_gpus"),
    ("racks", "racks", "racks", "racks.count"),
    ("gpus_per_rack", "GPUs per rack", "GPUs", "racks.gpus_per_rack"),
    ("rack_power_w", "power per rack", "W", "racks.power_w"),
    ("pue", "facility PUE", "ratio", "power.pue"),
    ("it_power_w", "cluster IT power", "W", "power.it_total_w"),
    ("facility_power_w", "facility power", "W", "power.facility_w"),
    ("gemm_tf32_tflops", "TF32 GEMM per GPU", "TFLOPS", "compute.gemm_tf32_tflops"),
    ("gemm_fp16_tflops", "FP16 GEMM per GPU", "TFLOPS", "compute.gemm_fp16_tflops"),
    ("gemm_mean_tflops", "GEMM per GPU, mean of TF32 and FP16", "TFLOPS", _gemm_mean),
    ("gemm_per_node_price", "GEMM per unit of node price", "TFLOPS/currency", _per_node_price),
    ("cluster_fp16_pflops", "cluster FP16 GEMM", "PFLOPS", "compute.cluster_fp16_pflops"),
    ("hfreduce_gbyte_s", "HFReduce across the cluster", "GB/s", "collectives.hfreduce.algbw_gbyte_s"),
    ("nccl_gbyte_s", "NCCL across the cluster", "GB/s", "collectives.nccl.algbw_gbyte_s"),
    ("interruptions_per_day", "platform interruptions per day, whole cluster", "1/day",
     "reliability.platform_interruptions_per_day"),
    ("fabric_interruption_share", "fabric share of interruptions", "fraction", "reliability.fabric_interruption_share"),
    ("fabric_interruptions_per_day", "fabric interruptions per day", "1/day",
     "reliability.fabric_interruptions_per_day"),
    ("repair_hours_per_day", "repair hours per day", "h/day", "reliability.repair_hours_per_day"),
    ("fabric_repair_hours_per_day", "fabric repair hours per day", "h/day", "reliability.fabric_repair_hours_per_day"),
    ("node_availability", "node availability", "fraction", "reliability.node_availability"),
    ("step_time_s", "training step", "s", "training.step_time_s"),
    ("mfu", "MFU", "fraction", "training.mfu"),
    ("hfu", "HFU (with recomputation)", "fraction", "training.hfu"),
    ("hardware_tflops_per_gpu", "hardware TFLOPS per GPU", "TFLOPS", "training.hardware_tflops_per_gpu"),
    ("tokens_per_s", "tokens per second", "tokens/s", "training.tokens_per_s"),
    ("pipeline_bubble_s", "step: pipeline bubble", "s", "training.step_parts_s.pipeline bubble"),
    ("tp_traffic_s", "step: tensor-parallel traffic", "s", "training.step_parts_s.tensor-parallel traffic"),
    ("ep_traffic_s", "step: expert all-to-all", "s", "training.step_parts_s.expert all-to-all"),
    ("dp_traffic_s", "step: exposed data-parallel traffic", "s", "training.step_parts_s.exposed data-parallel traffic"),
    ("time_to_train_days", "time to train", "days", "training.time_to_train_days"),
    ("cost_to_train", "cost to train", "currency", "training.cost_to_train"),
    ("cost_per_million_tokens", "cost per million trained tokens", "currency", "training.cost_per_million_tokens"),
    ("job_interruptions_per_day", "job interruptions per day", "1/day", "reliability.job_interruptions_per_day"),
    ("restart_time_s", "restart time", "s", "reliability.restart_time_s"),
    ("ettr", "effective training time ratio", "fraction", "reliability.ettr"),
]


COMPARE_PLANS = (2, 4)


def compare_choice_problems(slugs: list[str]) -> list[str]:
    """What is wrong with a choice of plans to compare (the one rule: 2 to 4, each once)."""
    low, high = COMPARE_PLANS
    if not low <= len(slugs) <= high:
        return [f"choose {low} to {high} different plans"]
    return ["a plan is listed twice"] if len(set(slugs)) != len(slugs) else []


def plan_compare(*, plans: list[ClusterPlan], workload: Workload | None = None, options: dict | None = None,
                 work_budget_s: float | None = None) -> dict:
    """Evaluate 2-4 plans and line their metrics up, with ratios and differences to the first
    (``work_budget_s`` shared between them)."""
    evaluations, infeasible = [], {}
    share_s = None if work_budget_s is None else work_budget_s / len(plans)
    for plan in plans:
        try:
            evaluations.append(plan_evaluate(plan=plan, workload=workload, options=options,
                                             work_budget_s=share_s)["result"])
        except PlanInfeasible as error:
            infeasible[plan.slug] = error.reasons
            evaluations.append(None)
    metrics = []
    for key, label, unit, path in COMPARE_METRICS:
        read = path if callable(path) else (lambda r, p=path: dig(r, p, missing=None))
        values = [None if r is None else read(r) for r in evaluations]
        if all(v is None for v in values):
            continue
        first = values[0]
        metrics.append({
            "key": key, "label": label, "unit": unit, "values": values,
            "ratio_to_first": [None if v is None or not first else v / first for v in values],
            "delta_to_first": [None if v is None or first is None else v - first for v in values],
        })
    currencies = {plan.price_book.currency for plan in plans}
    placements = {group: [None if r is None or "placement" not in r.get("training", {}) else
                          r["training"]["placement"][group] for r in evaluations] for group in ("tp", "cp", "ep", "pp")}
    return {
        "plans": [plan.slug for plan in plans],
        "workload": workload.slug if workload else None,
        "engine_version": simcore.ENGINE_VERSION,
        "currency": currencies.pop() if len(currencies) == 1 else None,
        "metrics": metrics,
        "placements": placements if any(v is not None for v in placements["tp"]) else {},
        "infeasible": infeasible,
    }


@transaction.atomic
def plan_clone(*, plan: ClusterPlan, owner, slug: str, name: str | None = None) -> ClusterPlan:
    """A private copy of a plan (a preset or anyone's visible plan) owned by ``owner``."""
    copy = ClusterPlan.objects.get(pk=plan.pk)
    copy.pk = None
    copy.id = None
    copy.slug = slug
    copy.name = name or f"{plan.name} (copy)"
    copy.owner = owner
    copy.visibility = "private"
    copy.full_clean()
    copy.save()
    return copy
