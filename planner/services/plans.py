"""Plan services: evaluate, compare, bill of materials, clone (keyword-only, one per workflow)."""
import csv
import io
import math
from dataclasses import dataclass

from django.db import transaction

import simcore
from planner.adapters import calibration, scenario_document
from planner.choices import Confidence, PartKind, RentTerm
from planner.models import ClusterPlan, PriceItem, Workload
from planner.services import engine, prices
from planner.services.cells import CSV_LINE_END, csv_row
from simcore import outputs
from simcore.document import MAX_CLUSTER_GPUS
from simcore.formulas.host import X86_HOST_MODULE_S, X86_HOST_OP_S
from simcore.tools.sweep import DATA_PARALLEL_AXIS

STALE_PRICES = "cost.stale_prices"


class PlanInfeasible(Exception):
    """The plan (with this workload) cannot run: the reasons say why, ``details`` shows the numbers."""

    def __init__(self, reasons: list[str], details: dict):
        self.reasons = reasons
        self.details = details
        super().__init__("; ".join(reasons))


def plan_evaluate(*, plan: ClusterPlan, workload: Workload | None = None, options: dict | None = None,
                  document: dict | None = None, overrides: dict | None = None,
                  work_budget_s: float | None = None, own_rows: list[dict] | None = None) -> dict:
    """Evaluate a plan (and workload): the engine's full result document.

    ``document`` is the plan's scenario document and ``overrides`` its measured constants
    (:func:`planner.adapters.calibration`) when the caller has them already; with
    ``work_budget_s`` (web requests), work estimated over it is refused (a ScenarioError);
    ``own_rows``, the validation rows of the owner's own runs (:func:`planner.services.runs.plan_rows`),
    join the error bands beside the published runs.
    Raises :class:`simcore.ScenarioError` for bad options and :class:`PlanInfeasible` when the
    fabric cannot hold the build or the workload cannot run on it, so that no numbers are reported
    for a build that cannot exist.
    """
    overrides = calibration(plan) if overrides is None else overrides
    document = document or scenario_document(plan, workload, options, overrides)
    result = engine.evaluate(document, work_budget_s=work_budget_s)
    reasons = [c["message"] for c in result["constraints"] if c["code"] in simcore.stages.cluster.BUILD_BLOCKERS]
    training = result.get("training")
    if training is not None and not training["feasible"]:
        reason = training["infeasible_reason"]
        if reason == simcore.stages.job.INFEASIBLE_REASONS[simcore.stages.job.MEMORY_REASON]:
            memory = training["memory"]
            reason += (f": {memory['per_gpu_gib']:.1f} GiB per GPU against {memory['allocatable_gib']:.1f} GiB "
                       f"allocatable of {memory['hbm_gib']:g} GiB of HBM, "
                       f"mostly {memory['dominant_term']}")
        elif reason == simcore.stages.job.INFEASIBLE_REASONS[simcore.stages.job.TOO_FEW_GPUS_REASON]:  # by how much
            reason += (f": {training['gpus']:,.0f} GPUs against the cluster's {result['cluster']['gpus']:,.0f}; "
                       "give the plan more nodes or the workload fewer GPUs")
        reasons.append(f"workload '{workload.slug}': {reason}")
    if reasons:
        raise PlanInfeasible(reasons, {"fabric": result["fabric"], "training": training})
    stale = prices.staleness(plan)
    family = plan.node_type.accelerator.family
    if stale:  # a copy: the engine's result may be a memoized one
        result = {**result, "constraints": [*result["constraints"], {"code": STALE_PRICES, "message": stale}]}
    return {
        "plan": plan.slug,
        "workload": workload.slug if workload else None,
        "engine_version": result["engine_version"],
        "overrides": overrides,
        "result": result,
        "curves": engine.curves(document, result),
        "trust": engine.training_trust(family, workload, own_rows or ()) if workload else None,
        "announced": plan.announced_parts(),
        "bands": engine.prediction_bands(family, workload, result, own_rows or ()),
        "carried": carried_figures(plan, workload, options, overrides, work_budget_s),
        "host": host_basis(plan),
    }


def host_basis(plan: ClusterPlan) -> dict:
    """What the node's host takes to launch a kernel, as the engine's step uses it
    (:mod:`simcore.formulas.host`): its CPU's measured times, or an x86 server's where it has none; the
    reason a step's host part is what it is (a Grace host launches at about half an x86 server's rate)."""
    cpu = plan.node_type.cpu
    measured = cpu is not None and cpu.host_op_us is not None
    return {"cpu": cpu.name if cpu else "the node's CPU",
            "op_us": cpu.host_op_us if measured else X86_HOST_OP_S * 1e6,
            "module_us": (cpu.host_module_us if cpu is not None and cpu.host_module_us is not None
                          else X86_HOST_MODULE_S * 1e6),
            "measured": measured}


CARRIED_OUTPUTS = ("step_time_s", "mfu")  # the training figures a carried calibration moves


def carried_figures(plan: ClusterPlan, workload: Workload | None, options: dict | None, overrides: dict,
                    work_budget_s: float | None) -> dict | None:
    """Where a trace's calibration was carried to this plan (:func:`planner.adapters.calibration`):
    the constants carried, and the training figures on the family's own constants beside the
    headline's (which uses them), with the headline's band over the trace's spread (each carried share
    at its ``low`` and at its ``high``). None where nothing is carried."""
    carried = {constant: fit for constant, fit in overrides.items() if fit.get("carried")}
    if not carried:
        return None
    at = {end: {**overrides, **{c: {**fit, "value": fit["carried"][end]} for c, fit in carried.items()}}
          for end in ("low", "high")}
    figures = {"constants": {c: {"value": fit["value"], "low": fit["carried"]["low"], "high": fit["carried"]["high"]}
                             for c, fit in carried.items()},
               "family": None, "spread": None}
    if workload is None:
        return figures
    family, low, high = (engine.evaluate(scenario_document(plan, workload, options, chosen),
                                         work_budget_s=work_budget_s).get("training") or {}
                         for chosen in ({c: fit for c, fit in overrides.items() if not fit.get("carried")},
                                        at["low"], at["high"]))
    figures["family"] = {f"training.{key}": family.get(key) for key in CARRIED_OUTPUTS}
    figures["spread"] = {f"training.{key}": sorted((low[key], high[key])) for key in CARRIED_OUTPUTS
                         if low.get(key) is not None and high.get(key) is not None}
    return figures


@dataclass(frozen=True)
class BomLine:
    part: str
    part_kind: str
    slug: str
    quantity: int
    unit_price: float | None
    extended_price: float | None
    source: str
    price_date: str = ""
    source_url: str = ""
    confidence: str = ""
    extended_low: float | None = None
    extended_high: float | None = None


NOT_CHOSEN = "(not chosen)"
BOM_COLUMNS = ["part", "part_kind", "slug", "quantity", "unit_price", "extended_price", "extended_low",
               "extended_high", "confidence", "currency", "source", "price_date", "source_url"]


def _bom_line(label, kind, part, quantity: int, item: PriceItem | None, unpriced_note: str, book) -> BomLine:
    """One bill line: the part at its item's price (with its basis, date and link), else unpriced
    with ``unpriced_note``; a part the plan does not name is listed, never priced."""
    if part is None:  # counted by the fabric, but the plan names no part
        return BomLine(label, kind, NOT_CHOSEN, quantity, None, None, "the plan names no part: choose one to price it")
    if item is None:
        return BomLine(label, kind, part.slug, quantity, None, None, unpriced_note)
    unit = float(item.unit_price)
    low, high = (unit, unit) if item.low_price is None else (float(item.low_price), float(item.high_price))
    return BomLine(label, kind, part.slug, quantity, unit, round(unit * quantity, 6), item.basis,
                   (item.price_date or book.price_date).isoformat(), item.source_url, item.confidence,
                   round(low * quantity, 6), round(high * quantity, 6))


INCLUDED = "included in the node's price"


def _bom_lines(plan: ClusterPlan, fabric: dict, items: dict, book) -> list[BomLine]:
    """The bill's lines: each counted part at its quantity, priced from ``items`` ((kind, slug) ->
    item) where the plan names the part and the book prices it."""
    lines: list[BomLine] = []

    def add(label, kind, part, quantity, priced=True, note=""):
        if quantity:
            item = items.get((kind, part.slug)) if priced and part is not None else None
            lines.append(_bom_line(label, kind, part, int(quantity), item, note or f"not priced in {book.slug}", book))

    node = plan.node_type
    add("compute node", "compute-node", node, plan.node_count)
    add("storage node", "storage-node", plan.storage_node_type, plan.storage_node_count)
    add("switch, computation fabric", "switch", plan.switch, fabric["compute_fabric_switches"])
    add("switch, storage plane", "switch", plan.switch, fabric["storage_plane_switches"])
    add("compute NIC", "nic", node.compute_nic, fabric["compute_nics"], priced=False, note=INCLUDED)
    storage_nics = fabric["storage_nics"]
    if plan.storage_node_type is not None and plan.storage_node_count:
        on_storage_nodes = plan.storage_node_count * plan.storage_node_type.nics_per_node
        add("storage-node NIC", "nic", plan.storage_node_type.nic, on_storage_nodes, priced=False, note=INCLUDED)
        storage_nics -= on_storage_nodes
    add("compute-node storage NIC", "nic", node.storage_nic, storage_nics, priced=False, note=INCLUDED)
    add("optical module at the NIC" if plan.optical_nic_links else "endpoint cable", "link-part", plan.endpoint_cable,
        fabric["endpoint_cables"])
    add("optical transceiver", "link-part", plan.transceiver, fabric["transceivers"])
    add("fibre", "link-part", plan.fiber, fabric["fibers"])
    add("scale-up optical module", "link-part", node.scaleup_optic, fabric["scaleup_transceivers"])
    add("scale-up fibre", "link-part", plan.fiber, fabric["scaleup_fibers"])
    return lines


def plan_bom(*, plan: ClusterPlan, result: dict | None = None) -> dict:
    """Bill of materials: every part with its quantity and, where the price book has it, prices.

    Quantities are the evaluation's counts; the extended prices add up to its ``capex_total``.
    NICs ship inside the nodes and are listed for completeness with no price of their own. Where a
    counted part has no price the total is null and the part is named in ``unpriced``. Each priced
    line carries its basis, the date the price was stated (the book's where the item has none),
    where it was stated, its confidence and, extended, its low and high (an estimate's band; a
    quote's are its price): the total's band adds them up. The GPU-hour prices come one a term.
    """
    result = result or engine.evaluate(scenario_document(plan))
    book = plan.price_book
    book_items = list(PriceItem.objects.filter(price_book=book))
    lines = _bom_lines(plan, result["fabric"], {(i.part_kind, i.part_slug): i for i in book_items if not i.term}, book)
    unpriced = list(dict.fromkeys(line.part if line.slug == NOT_CHOSEN else line.slug
                                  for line in lines if line.unit_price is None and line.source != INCLUDED))
    total = None if unpriced else round(sum(line.extended_price or 0.0 for line in lines), 6)
    estimated = sum(line.extended_price or 0.0 for line in lines if line.confidence == Confidence.ESTIMATE)
    accelerator = plan.node_type.accelerator
    rentals = [rental(item, book) for item in book_items
               if item.part_kind == PartKind.GPU_HOUR and item.part_slug == accelerator.slug]
    return {
        "plan": plan.slug,
        "price_book": book.slug,
        "price_book_owner": book.owner.username if book.owner_id else None,
        "price_date": book.price_date.isoformat(),
        "stale": prices.staleness(plan),
        "currency": book.currency,
        "lines": [line.__dict__ for line in lines],
        "total": total,
        "total_low": None if unpriced else round(sum(line.extended_low or 0.0 for line in lines), 6),
        "total_high": None if unpriced else round(sum(line.extended_high or 0.0 for line in lines), 6),
        "estimated_share": None if not total else estimated / total,
        "unpriced": unpriced,
        "rentals": sorted(rentals, key=lambda r: RENT_TERM_ORDER.index(r["term"])),
        "bands": engine.prediction_bands(accelerator.family, None, result),
    }


RENT_TERM_ORDER = list(RentTerm.values)


def rental(item: PriceItem, book) -> dict:
    """The book's price for renting one of the plan's GPUs an hour on one term, with its basis,
    date and link."""
    return {"term": item.term, "term_label": item.get_term_display(), "unit_price": float(item.unit_price),
            "provider": item.provider, "estimate": item.confidence == Confidence.ESTIMATE, "basis": item.basis,
            "price_date": (item.price_date or book.price_date).isoformat(), "source_url": item.source_url}


def bom_csv(bom: dict) -> str:
    """The bill's lines, one row each, with no total row (a column sum would count it twice)."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=BOM_COLUMNS, lineterminator=CSV_LINE_END)
    writer.writeheader()
    for line in bom["lines"]:
        cells = {**{k: ("" if v is None else v) for k, v in line.items()}, "currency": bom["currency"]}
        writer.writerow(csv_row(cells))
    return out.getvalue()


COMPARE_PLANS = (2, 4)


def compare_choice_problems(slugs: list[str]) -> list[str]:
    """What is wrong with a choice of plans to compare (the one rule: 2 to 4, each once)."""
    low, high = COMPARE_PLANS
    if not low <= len(slugs) <= high:
        return [f"choose {low} to {high} different plans"]
    return ["a plan is listed twice"] if len(set(slugs)) != len(slugs) else []


# Where a compared power figure comes from, per plan: (key, label, the engine's power field).
COMPARED_BASES = (("pue", "basis of the facility PUE", "pue_basis"),
                  ("node_max_power", "basis of the maximum node power", "node_max_basis"))


def plan_compare(*, plans: list[ClusterPlan], workload: Workload | None = None, options: dict | None = None,
                 work_budget_s: float | None = None) -> dict:
    """Evaluate 2-4 plans and line their metrics up, with ratios and differences to the first and
    each plan's error band where the metric has one (``work_budget_s`` shared between them). Plans
    are comparable on cost only when each bill is complete in one currency; ``unpriced`` names each
    plan's parts without a price, ``bases`` where each plan's PUE and maximum node power come from."""
    evaluations, bands, infeasible = [], [], {}
    share_s = None if work_budget_s is None else work_budget_s / len(plans)
    for plan in plans:
        try:
            evaluated = plan_evaluate(plan=plan, workload=workload, options=options, work_budget_s=share_s)
            evaluations.append(evaluated["result"])
            bands.append(evaluated["bands"])
        except PlanInfeasible as error:
            infeasible[plan.slug] = error.reasons
            evaluations.append(None)
            bands.append({})
    currencies = {plan.price_book.currency for plan in plans}
    currency = next(iter(currencies)) if len(currencies) == 1 else None
    metrics = []
    for output in outputs.selected("compare"):
        values = [None if r is None else output.read(r) for r in evaluations]
        if all(v is None for v in values):
            continue
        first = values[0]
        described = output.describe()
        if currency:  # a price's unit named: "TFLOPS/currency" in USD is TFLOPS/USD
            described["unit"] = described["unit"].replace("currency", currency)
        metrics.append({
            **described, "values": values,
            "ratio_to_first": [None if v is None or not first else v / first for v in values],
            "delta_to_first": [None if v is None or first is None else v - first for v in values],
            "bands": [found.get(output.path) for found in bands],
        })
    unpriced = {plan.slug: [] if r is None else list(r["cost"]["unpriced"]) for plan, r in zip(plans, evaluations)}
    placements = {group: [None if r is None or "placement" not in r.get("training", {}) else
                          r["training"]["placement"][group] for r in evaluations] for group in ("tp", "cp", "ep", "pp")}
    bases = [{"key": key, "label": label, "values": [None if r is None else r["power"][field] for r in evaluations]}
             for key, label, field in COMPARED_BASES]
    return {
        "plans": [plan.slug for plan in plans],
        "workload": workload.slug if workload else None,
        "engine_version": simcore.ENGINE_VERSION,
        "currency": currency,
        "metrics": metrics,
        "placements": placements if any(v is not None for v in placements["tp"]) else {},
        "bases": bases,
        "announced": {slug: parts for slug, parts in ((plan.slug, plan.announced_parts()) for plan in plans) if parts},
        "infeasible": infeasible,
        "unpriced": unpriced,
        "cost_comparable": len(currencies) == 1 and not any(unpriced.values()),
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


def node_counts_around(plan: ClusterPlan, workload: Workload | None = None) -> str:
    """A sweep's node counts around the plan's own (the sweep form's values): nine in steps of whole
    scale-up domains (an NVL72 rack's 18 trays) of about an eighth of it, from no fewer than the
    workload's GPUs need to no more than the plan's fabric holds (its switches' radix, depth,
    planes and zones: :func:`simcore.formulas.topology.max_endpoints`), so that every point is a
    build the plan's parts allow."""
    node = plan.node_type
    domain = max((node.scaleup_domain_gpus or 0) // node.accelerators_per_node, node.nodes_per_rack or 0, 1)
    step = domain * max(1, round(plan.node_count / 8 / domain))
    needed = -(-(workload.gpus or 0) // node.accelerators_per_node) if workload else 0
    start = max(domain, plan.node_count - 4 * step, -(-needed // domain) * domain)
    stop = max(start, min(start + 8 * step, int(_most_nodes(plan) // domain) * domain))
    return f"{start}..{start + (stop - start) // step * step} step {step}"


def divisors(number: int, most: int) -> list[int]:
    """The divisors of ``number`` up to ``most``, in order (found up to its square root; none of a
    number under 1): the data-parallel degrees a batch of ``number`` micro-batches splits into."""
    small = [d for d in range(1, math.isqrt(number) + 1) if number % d == 0] if number >= 1 else []
    return sorted(d for d in {*small, *(number // d for d in small)} if d <= most)


def _most_nodes(plan: ClusterPlan) -> int:
    """The compute nodes the plan's fabric holds: its switches' radix, depth, planes and zones
    (:func:`simcore.formulas.topology.max_endpoints`), less the ports its storage takes on a shared one."""
    endpoints = float(simcore.formulas.topology.max_endpoints(plan.switch.radix, plan.fabric_layers, plan.planes,
                                                                plan.oversubscription)) * plan.zones
    (_, nics, node_storage_nics, storage_nodes, storage_nics), layout = plan.fabric_arguments()
    shared = layout["storage_network"] == "shared"  # storage on the computation fabric takes its ports too
    return int((endpoints - (storage_nodes * storage_nics if shared else 0)) // max(
        nics + (node_storage_nics if shared else 0), 1))


def sweep_around(plan: ClusterPlan, workload: Workload | None = None) -> tuple[str, str]:
    """What "Sweep around it" sweeps, as the sweep form's axis and values. A job of a fixed size grows
    with the cluster: nine data-parallel degrees around its own (``job.data_parallel``, which sizes the
    job and the cluster together), each a whole number of its batch's micro-batches a rank and within
    what the plan's fabric holds. Otherwise (no workload, or one taking every GPU) the plan's node
    count around its own (:func:`node_counts_around`)."""
    model_parallel = workload.tp * workload.pp * workload.cp if workload else 1
    widest = min(_most_nodes(plan) * plan.node_type.accelerators_per_node, MAX_CLUSTER_GPUS) // model_parallel
    fixed = workload is not None and workload.gpus is not None
    degrees = divisors(workload.global_batch // workload.micro_batch, max(widest, 1)) if fixed else []
    if not degrees:
        return "cluster.node_count", node_counts_around(plan, workload)
    own = max(workload.gpus // model_parallel, 1)
    at = min(range(len(degrees)), key=lambda i: abs(degrees[i] - own))
    first = max(0, min(at - 4, len(degrees) - 9))
    return DATA_PARALLEL_AXIS, ", ".join(str(d) for d in degrees[first:first + 9])
