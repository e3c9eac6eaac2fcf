"""Site-first planning: a facility, a budget and a goal in; a sweep over the catalogue's builds out.

Each build is a shared plan (a node type with its fabric, switches and link parts) moved onto the
site: the site's price book, hall (or PUE) and rack power limit replace the plan's, and the job
trains the goal's workload on every GPU. The sweep varies each build's size (every data-parallel
degree the workload's batch splits into, the cluster holding TP x PP x DP GPUs), its fabric
layers and the workload's tensor and pipeline degrees; its finished points are ranked by
:mod:`planner.services.site_results`. A build whose nodes need liquid cooling on an air-cooled site
is kept, with every point invalid and the reason said.

Renting is compared like for like: every build on one rental term of the book (on demand unless the
goal names another; a GPU with no rate on it is unpriced rented, and says so), or each at the
cheapest of its terms that covers the run (``cheapest``, one rule for every GPU). Each build's rates
are kept with their providers and dates for the rows to name.
"""
import copy

import numpy as np
from django.db.models import Q
from django.utils import timezone

from planner.adapters import RENT_TERM_FIELDS, calibration, plan_price_items, scenario_document
from planner.choices import CHEAPEST_TERM, RentTerm
from planner.models import ClusterPlan, PriceBook, Sweep, Visibility, Workload
from planner.services.plans import divisors, rental
from planner.services.sweep_spec import SweepInputError, check_sample
from planner.services.sweeps import check_grid_size, sweep_record
from simcore.document import MAX_CLUSTER_GPUS
from simcore.formulas.cost import RENT_TERMS
from simcore.tools import site as site_engine
from simcore.tools import sweep as sweep_engine

LAYERS = (2, 3)
TENSOR_PARALLEL = (1, 2, 4, 8)
PIPELINE_PARALLEL = (1, 2, 4, 8, 16)
MAX_DATA_PARALLEL = 48


class SiteInputError(SweepInputError):
    """Bad site-first input: ``errors`` maps a field to its reasons (answered as HTTP 400)."""


def site_builds(owner, slugs: list[str] | None) -> list[ClusterPlan]:
    """The builds to weigh: the named plans visible to ``owner``, by default every shared plan and
    their own (a plan priced from their own book included: the site's book prices every build)."""
    visible = ClusterPlan.objects.visible_to(owner).select_related("node_type__accelerator")
    if not slugs:
        builds = list(visible.filter(Q(visibility=Visibility.SHARED) | Q(owner=owner)).order_by("slug"))
        if not builds:
            raise SiteInputError({"builds": ["no plan to weigh: make one, or name plans"]})
        return builds
    if len(set(slugs)) != len(slugs):
        raise SiteInputError({"builds": ["lists a plan twice"]})
    found = {plan.slug: plan for plan in visible.filter(slug__in=slugs)}
    missing = [slug for slug in slugs if slug not in found]
    if missing:
        raise SiteInputError({"builds": [f"no plan '{missing[0]}' is visible to you"]})
    return [found[slug] for slug in slugs]


def site_facility(*, power_mw: float, floor_racks: int, cooling: str, hall: str, rack_power_kw: float | None = None,
                  pue: float | None = None, storage_write_gbyte_s: float | None = None) -> dict:
    """A facility as the form and the API give it, in the engine's units."""
    return {"facility_w": power_mw * 1e6, "floor_racks": floor_racks,
            "rack_power_limit_w": None if rack_power_kw is None else rack_power_kw * 1000, "cooling": cooling,
            "hall": hall, "pue": pue, "storage_write_gbyte_s": storage_write_gbyte_s}


def _on_site(plan: ClusterPlan, facility: dict, book: PriceBook) -> ClusterPlan:
    """The plan with the site's price book, hall (or PUE) and rack power limit (unsaved)."""
    variant = copy.copy(plan)
    variant.price_book = book
    variant.hall = facility["hall"]
    variant.pue = facility["pue"]
    variant.rack_power_limit_w = facility["rack_power_limit_w"]
    return variant


def site_rents(plan: ClusterPlan, rent_term: str) -> dict[str, dict]:
    """The rates a build is rented at on the site (``plan`` as :func:`_on_site` gives it), by the
    engine's term label: each with its provider, date and whether it is an estimate; only
    ``rent_term``'s, or every term's for :data:`CHEAPEST_TERM`."""
    items = plan_price_items(plan)
    labels = {term.field: term.label for term in RENT_TERMS}
    stated = {labels[field]: rental(item, plan.price_book) for term, field in RENT_TERM_FIELDS.items()
              if (item := items[field]) is not None and rent_term in (term, CHEAPEST_TERM)}
    return {label: {"rate": r["unit_price"], "provider": r["provider"], "price_date": r["price_date"],
                    "estimate": r["estimate"]} for label, r in stated.items()}


def _site_document(plan: ClusterPlan, facility: dict, book: PriceBook, workload: Workload,
                   tokens: float, rent_term: str) -> tuple[dict, str]:
    """The plan moved onto the site, training ``tokens`` of the workload on every GPU, rented on
    ``rent_term`` only (or any term, :data:`CHEAPEST_TERM`); and why it cannot be built there ('' when
    it can)."""
    document = scenario_document(_on_site(plan, facility, book), workload)
    document["workload"].update(gpus=None, tokens_to_train=tokens)
    if rent_term != CHEAPEST_TERM:
        document["cluster"]["prices"].update({field: None for term, field in RENT_TERM_FIELDS.items()
                                              if term != rent_term})
    storage = document["cluster"]["storage"]
    if not storage.get("nodes") and facility["storage_write_gbyte_s"] is not None:  # the site's system, not the plan's
        storage.update(external_write_gbyte_s=facility["storage_write_gbyte_s"], external_read_gbyte_s=None)
    reason = ""
    if plan.node_type.cooling == "liquid" and facility["cooling"] == "air":
        reason = f"{plan.node_type.slug} is liquid cooled and the site's halls are air cooled"
    return document, reason


def data_parallel_degrees(workload: Workload) -> np.ndarray:
    """The sizes every build is tried at, as data-parallel degrees: each whole number of
    micro-batches per rank the workload's global batch splits into (its divisors, none that would
    take the largest layout past the engine's GPU limit), at most MAX_DATA_PARALLEL of them spread
    geometrically from 1 to the largest."""
    micro_batches = workload.global_batch // workload.micro_batch
    widest = max(TENSOR_PARALLEL) * max(PIPELINE_PARALLEL) * workload.cp
    degrees = np.array(divisors(micro_batches, MAX_CLUSTER_GPUS // widest), dtype=np.int64)
    if degrees.size > MAX_DATA_PARALLEL:
        degrees = degrees[np.unique(np.round(np.geomspace(1, degrees.size, MAX_DATA_PARALLEL)).astype(int) - 1)]
    return degrees.astype(float)


def _deadline_days(goal: dict) -> float | None:
    deadline = goal.get("deadline")
    if deadline is None:
        if goal["objective"] == "by_date":
            raise SiteInputError({"goal.deadline": ["the by_date goal needs the date the tokens are due"]})
        return None
    days = (deadline - timezone.now().date()).days
    if days < 1:
        raise SiteInputError({"goal.deadline": [f"{deadline.isoformat()} is not after today"]})
    return float(days)


def site_axes(builds: list[ClusterPlan], workload: Workload) -> list[sweep_engine.Axis]:
    """The grid: each build, each data-parallel degree, two or three fabric layers, TP and PP."""
    return [sweep_engine.Axis("site.build", np.array([p.slug for p in builds], dtype=object)),
            sweep_engine.Axis(sweep_engine.DATA_PARALLEL_AXIS, data_parallel_degrees(workload)),
            sweep_engine.Axis("cluster.fabric.layers", np.array(LAYERS, dtype=float)),
            sweep_engine.Axis("workload.tp", np.array(TENSOR_PARALLEL, dtype=float)),
            sweep_engine.Axis("workload.pp", np.array(PIPELINE_PARALLEL, dtype=float))]


def site_plan_create(*, owner, facility: dict, goal: dict, price_book: PriceBook, budget: float | None,
                     builds: list[ClusterPlan], workload: Workload, name: str = "", in_process: bool = False) -> Sweep:
    """Check a site-first request and record its sweep (queued by
    :func:`planner.services.submission.site_submit`). ``facility``: as :func:`site_facility` gives
    it; ``goal``: objective (by_date or per_dollar), deadline (a date, or None), tokens (to train,
    or None: the workload's own) and confidence (the share of each build's band to plan at, or None:
    the engine's figures; :mod:`simcore.tools.site`). ``in_process``: the chunks will run in the
    request (no worker), which bounds the grid as :func:`planner.services.sweeps.check_grid_size`
    says."""
    tokens = goal.get("tokens") or workload.tokens_to_train
    if tokens is None:
        raise SiteInputError({"goal.tokens": [f"{workload.slug} gives no tokens_to_train: give the tokens to train"]})
    deadline_days = _deadline_days(goal)
    rent_term = goal.get("rent_term") or RentTerm.ON_DEMAND
    made = [_site_document(plan, facility, price_book, workload, tokens, rent_term) for plan in builds]
    documents, reasons = [d for d, _ in made], [r for _, r in made]
    if all(reasons):
        raise SiteInputError({"builds": ["no build can stand on this site: " + "; ".join(reasons)]})
    axes = site_axes(builds, workload)
    size = sweep_engine.grid_size(axes)
    check_grid_size(size, in_process, "builds")
    base = {"categorical": ["site.build"], "documents": documents, "invalid": reasons}
    outputs = list(site_engine.SITE_OUTPUTS)
    try:
        check_sample(base, axes, outputs)
    except SweepInputError as error:
        raise SiteInputError({"builds": [f"{field}: {' '.join(why)}"
                                         for field, why in error.errors.items()]}) from error
    spec = {"axes": [{"path": a.path, "values": a.values.tolist()} for a in axes], "outputs": outputs,
            "goal": None}
    site = {**facility, "budget": budget, "currency": price_book.currency, "price_book": price_book.slug,
            "goal": goal["objective"], "deadline": goal["deadline"].isoformat() if goal.get("deadline") else None,
            "deadline_days": deadline_days, "confidence": goal.get("confidence"), "rent_term": rent_term,
            "rents": [site_rents(_on_site(p, facility, price_book), rent_term) for p in builds],
            "workload": workload.slug,
            "tokens": float(tokens),
            "builds": [p.slug for p in builds], "build_names": [p.name for p in builds],
            "families": [p.node_type.accelerator.family for p in builds],
            "announced": [bool(p.announced_parts()) for p in builds],
            "carried": [sorted({fit["carried"]["node_type"] for fit in calibration(p).values() if fit["carried"]})
                        for p in builds]}
    return sweep_record(owner=owner, plan=builds[0], workload=workload, name=name or "site plan", base=base,
                        spec=spec, size=size, chunk_size=size // len(builds), site=site)
