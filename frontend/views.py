"""The architect's pages: server-rendered shells whose live parts call the REST API.

Views here only gather what a page shows, through the planner's services and the same
visibility rules as the API; every number on a page comes from the catalogue, the engine or
what the user typed.
"""
import datetime
import math
from collections import Counter
from decimal import Decimal

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db import models
from django.http import Http404, HttpResponseRedirect
from django.shortcuts import get_object_or_404, render
from django.templatetags.static import static

from frontend.templatetags.figures import figure, money
from planner.choices import Confidence, PartKind, RentTerm, ScaleUpLink
from planner.filtersets import FILTERSETS
from planner.models import ClusterPlan, PriceBook, Sweep, Visibility, Workload
from planner.models.catalog import PART_MODELS
from planner.models.declared import PLAN_SECTIONS, WORKLOAD_SECTIONS, stored_fields
from planner.serializers import ClusterPlanSerializer, WorkloadSerializer
from planner.services import measurements as measurement_services
from planner.services import netbox
from planner.services import plans as plan_services
from planner.services import runs as run_services
from planner.services.catalog import TABLES, catalog_summary
from planner.services.engine import engine_band_coverage, engine_bands, engine_validation
from planner.services.site_results import site_result_for
from planner.services.sweep_spec import CATEGORICAL_AXES
from simcore import fitted, outputs
from simcore.document import field_docs, field_labels
from simcore.errors import ScenarioError
from simcore.formulas.devices import constant_rows
from simcore.formulas.power import HALL_PUE
from simcore.formulas.reliability import describe_profiles
from simcore.tools.measurements import COLLECTIVES
from simcore.tools.sweep import DATA_PARALLEL_AXIS
from twin.models import Twin
from twin.services.creation import twin_categories

FIRE_FLYER_COMPARISON = ["dgx-a100-3layer", "ff2-pcie-2zone", "ff2-pcie-3layer"]
BLACKWELL_COMPARISON = ["hgx-b200-1152", "gb200-nvl72-1152"]
SUPERNODE_COMPARISON = ["ascend-910b-single-rail", "cloudmatrix384-x26"]
# What a buyer shortlists in late 2026: rack-scale Blackwell Ultra, its 8-GPU server, AMD and an Ascend supernode.
# The generation bought now at one size, 1,152 GPUs each (issue 70, item 13: CloudMatrix384's preset is 26
# supernodes, 9,984 NPUs; it is set against a build of its own size, Ascend 910B's, by the supernode button).
CURRENT_COMPARISON = ["gb300-nvl72-1152", "dgx-b300-1152", "mi355x-1152"]
CATALOG_TABLES = {table.name: table for table in TABLES if not table.preset}
# The plan builder's own fields, in the order an architect decides them; each engine field the plan
# stores joins the group its declaration names (simcore.document.SPEC), in declaration order.
PLAN_FIELD_GROUPS = [
    ("Plan", ["name", "slug", "description", "visibility"]),
    ("Compute", ["node_type", "node_count"]),
    ("Fabric", ["switch", "fabric_layers"]),
    ("Storage", ["storage_node_type", "storage_node_count"]),
    ("Cabling", ["endpoint_cable", "transceiver", "fiber"]),
    ("Racks", ["rack_power_limit_w", "nodes_per_rack"]),
    ("Cost and reliability", ["price_book", "hall", "pue", "failure_profile"]),
    ("Checkpoints and restarts", []),
]
WORKLOAD_FIELD_GROUPS = [("Workload", ["name", "slug", "description", "visibility"])]
# The preset a new workload's form starts from (every field filled, so it evaluates at once).
NEW_WORKLOAD_START = "llama-13b-512"
FIELD_LABELS = {"pue": "PUE (empty: the price book's)"}
# The unit a catalogue field's name ends in (the house rule: names carry their units).
UNIT_SUFFIXES = (("_gbyte_s", "GB/s"), ("_gbit_s", "Gbit/s"), ("_tflops", "TFLOPS"), ("_gib", "GiB"), ("_gb", "GB"),
                 ("_tb", "TB"), ("_per_kwh", "per kWh"), ("_w", "W"), ("_m", "m"), ("rack_units", "U"))
# The specs an architect compares parts by, shown as columns of each catalogue list.
KEY_SPECS = {
    "accelerators": ["peak_fp16_tflops", "peak_fp8_tflops", "peak_fp4_tflops", "memory_gb", "memory_bandwidth_gbyte_s",
                     "tdp_w", "scaleup_link"],
    "cpus": ["cores", "memory_bandwidth_gbyte_s", "pcie_gen", "tdp_w"],
    "nics": ["line_rate_gbit_s", "ports", "protocol", "power_w"],
    "switches": ["radix", "port_speed_gbit_s", "protocol", "power_w", "rack_units"],
    "link-parts": ["kind", "speed_gbit_s", "ports", "reach_m", "power_w"],
    "compute-node-types": ["accelerator", "accelerators_per_node", "compute_nics_per_node", "max_power_w",
                           "rack_units"],
    "storage-node-types": ["ssd_count", "ssd_capacity_tb", "nic", "nics_per_node", "measured_power_w"],
    "price-books": ["currency", "price_date", "energy_price_per_kwh", "pue"],
}


def _visible_plans(user):
    plans = ClusterPlan.objects.select_related("owner", "node_type__accelerator").visible_to(user)
    return plans.order_by("owner_id", "slug")


def _visible_workloads(user):
    return Workload.objects.visible_to(user).order_by("slug")


@login_required
def home(request):
    """The dashboard: what the catalogue holds, your plans, sweeps and twins."""
    return render(request, "frontend/home.html", {
        "tables": catalog_summary(),
        "plans": ClusterPlan.objects.filter(owner=request.user).order_by("slug")[:10],
        "sweeps": Sweep.objects.filter(owner=request.user).select_related("plan").order_by("-created_at")[:5],
        "twins": Twin.objects.filter(owner=request.user).select_related("plan").order_by("-created_at")[:5],
        "fire_flyer_ids": ",".join(FIRE_FLYER_COMPARISON),
    })


ACRONYMS = {"tdp": "TDP", "sm": "SM", "fp64": "FP64", "tf32": "TF32", "fp16": "FP16", "fp8": "FP8", "pcie": "PCIe",
            "nic": "NIC", "nics": "NICs", "cpu": "CPU", "cpus": "CPUs", "ssd": "SSD", "pue": "PUE", "gpu": "GPU",
            "p2p": "P2P", "nvlink": "NVLink", "bw": "bandwidth", "scaleup": "scale-up", "gpus": "GPUs"}


def field_unit(name: str) -> str:
    """The unit a catalogue field's name carries ("" for counts, names and choices)."""
    return next((unit for suffix, unit in UNIT_SUFFIXES if name.endswith(suffix)), "")


def field_label(field) -> str:
    """A field's label as a reader writes it: its verbose name where the model gives one, else its
    name without the unit suffix and with acronyms in capitals ("TDP", "Peak FP16")."""
    if field.verbose_name != field.name.replace("_", " "):
        return str(field.verbose_name)[:1].upper() + str(field.verbose_name)[1:]
    name = field.name
    suffix = next((suffix for suffix, _ in UNIT_SUFFIXES if name.endswith(suffix) and suffix != "rack_units"), "")
    words = [ACRONYMS.get(word, word) for word in name[: len(name) - len(suffix)].split("_") if word]
    text = " ".join(words)
    return text[:1].upper() + text[1:]


def _field_cell(entry, field) -> dict:
    """One field of a catalogue entry as a page shows it: the value (a choice's label, a linked part's
    name), its unit, and where a linked part's page is."""
    value = getattr(entry, field.name)
    link = None
    if isinstance(field, models.ForeignKey) and value is not None:
        table = next((t for t in CATALOG_TABLES.values() if t.model is field.related_model), None)
        link = (table.name, value.slug) if table else None
        value = value.name if table else str(value)  # a part's name; a price book's owner by username
    elif field.choices:
        value = getattr(entry, f"get_{field.name}_display")()
    elif isinstance(value, datetime.datetime):
        value = value.astimezone(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    number = isinstance(value, int | float | Decimal) and not isinstance(value, bool)
    unit = field_unit(field.name) if number else ""
    if isinstance(value, Decimal):  # money: the entry's currency
        value, unit = money(value), f"{entry.currency} {unit}".strip()
    elif number:
        value = figure(value)
    return {"name": field.name, "label": field_label(field), "value": value, "link": link, "number": number,
            "unit": unit, "help": field.help_text}


def _field_rows(entry) -> list[dict]:
    """Every concrete field of a catalogue entry, as :func:`_field_cell` shows it."""
    return [_field_cell(entry, field) for field in entry._meta.get_fields()
            if field.concrete and field.name != "id" and not field.many_to_many]


def _spec_columns(table) -> list[dict]:
    """A catalogue list's key-spec columns: the field, its label and its unit."""
    fields = [table.model._meta.get_field(name) for name in KEY_SPECS.get(table.name, [])]
    return [{"field": field, "label": field_label(field), "unit": field_unit(field.name)} for field in fields]


def _visible_entries(model, user):
    """A catalogue table's entries ``user`` may see: all of them, but for price books the shared
    ones and their own."""
    return model.objects.visible_to(user) if hasattr(model.objects, "visible_to") else model.objects.all()


@login_required
def catalog(request):
    """Every catalogue part, filtered by table, vendor, confidence and free text."""
    table_name = request.GET.get("table", "")
    tables = [CATALOG_TABLES[table_name]] if table_name in CATALOG_TABLES else list(CATALOG_TABLES.values())
    vendor, confidence, text = (request.GET.get(k, "").strip() for k in ("vendor", "confidence", "q"))
    chosen = {key: value for key, value in (("vendor", vendor), ("confidence", confidence), ("q", text)) if value}
    sections, vendors = [], set()
    for table in tables:  # the API's filter sets: the same filters mean the same thing on both
        entries = _visible_entries(table.model, request.user).order_by("slug")
        vendors.update(entries.values_list("vendor", flat=True))
        columns = _spec_columns(table)
        rows = [{"entry": entry, "specs": [_field_cell(entry, column["field"]) for column in columns]}
                for entry in FILTERSETS[table.model](chosen, queryset=entries).qs]
        sections.append({"table": table, "columns": columns, "rows": rows})
    return render(request, "frontend/catalog.html", {
        "sections": sections, "tables": CATALOG_TABLES.values(), "vendors": sorted(vendors),
        "confidences": Confidence.values,
        "selected": {"table": table_name, "vendor": vendor, "confidence": confidence, "q": text},
        "count": sum(len(s["rows"]) for s in sections),
    })


def _price_rows(book) -> list[dict]:
    """A price book's items with the priced part's name and page (the slug where the part is gone)."""
    items = list(book.items.order_by("part_kind", "part_slug"))
    names = {}
    for kind, model in PART_MODELS.items():
        slugs = [item.part_slug for item in items if item.part_kind == kind]
        found = model.objects.filter(slug__in=slugs).values_list("slug", "name")
        names.update({(kind, slug): name for slug, name in found})
    tables = {kind: next((t.name for t in CATALOG_TABLES.values() if t.model is model), None)
              for kind, model in PART_MODELS.items()}
    return [{"item": item, "name": names.get((item.part_kind, item.part_slug), item.part_slug),
             "table": tables[item.part_kind] if (item.part_kind, item.part_slug) in names else None}
            for item in items]


@login_required
def catalog_entry(request, table, slug):
    if table not in CATALOG_TABLES:
        raise Http404("no such catalogue table")
    spec = CATALOG_TABLES[table]
    entry = get_object_or_404(_visible_entries(spec.model, request.user), slug=slug)
    measured = (measurement_services.node_type_measurements(node_type=entry, user=request.user)
                if table == "compute-node-types" else None)
    return render(request, "frontend/catalog_entry.html", {
        "table": spec, "entry": entry, "rows": _field_rows(entry), "measurements": measured,
        "collectives": COLLECTIVES, **(_price_book_context(request, entry) if table == "price-books" else {}),
    })


def _price_book_context(request, book) -> dict:
    """A price book's page: its prices, and either the form that adds your quote (your own book, or a
    shared one you may edit) or the offer to copy it as your own. ``?part=kind:slug`` picks the part
    to quote and ``?plan=`` the plan of yours to return to (and to price from a copy)."""
    user = request.user
    plan = ClusterPlan.objects.visible_to(user).filter(slug=request.GET.get("plan", "")).first()
    own_plan = plan if plan is not None and plan.owner_id == user.id else None
    may_quote = book.owner_id == user.id or (book.owner_id is None and user.has_perm("planner.change_pricebook"))
    return {"prices": _price_rows(book), "may_quote": may_quote, "plan": plan, "own_plan": own_plan,
            "quote_parts": _quotable_parts() if may_quote or own_plan else [],
            "quote_part": request.GET.get("part", ""), "terms": RentTerm.choices,
            "confidences": Confidence.choices, "today": datetime.date.today().isoformat(),
            "copy_slug": f"{book.slug}-{user.username}".lower()[:100]}


def _quotable_parts() -> list[dict]:
    """Every catalogue part a price book can price, as ``kind:slug`` options grouped by kind."""
    return [{"kind": label, "options": [(f"{kind}:{slug}", f"{name} ({slug})") for slug, name in
                                         model.objects.order_by("slug").values_list("slug", "name")]}
            for kind, label in PartKind.choices for model in [PART_MODELS[kind]]]


@login_required
def plan_list(request):
    return render(request, "frontend/plans.html", {
        "plans": _visible_plans(request.user), "fire_flyer_ids": ",".join(FIRE_FLYER_COMPARISON),
    })


def _choices(field, user):
    """A select's options: a catalogue reference's entries as ``user`` may see them (price books:
    the shared ones and their own), or the field's choices."""
    if isinstance(field, models.ForeignKey):
        entries = _visible_entries(field.related_model, user)
        return [(entry.slug, f"{entry.name} ({entry.slug})") for entry in entries.order_by("slug")]
    return [(str(value), label) for value, label in field.choices] if field.choices else None


def _unit_label(field) -> str:
    """A model field's form label: its label with the unit its name carries ("Rack power limit (W)")."""
    unit = field_unit(field.name)
    return f"{field_label(field)} ({unit})" if unit else field_label(field)


def _form_fields(model, field_groups, sections, user):
    """Form fields in groups: the model's own (``field_groups``) and the engine fields it stores from
    ``sections``, each with its kind, choices, label (with its unit), help and whether optional."""
    declared = stored_fields(sections)
    names = {title: list(own) for title, own in field_groups}
    for stored in declared.values():
        names.setdefault(stored.rule.group, []).append(stored.name)
    groups = []
    for title, group_names in names.items():
        fields = []
        for name in group_names:
            field = model._meta.get_field(name)
            kind = "select" if field.choices or isinstance(field, models.ForeignKey) else (
                "checkbox" if isinstance(field, models.BooleanField) else
                "textarea" if isinstance(field, models.TextField) else
                "json" if isinstance(field, models.JSONField) else
                "number" if isinstance(field, models.IntegerField | models.FloatField) else "text")
            label = declared[name].label if name in declared else FIELD_LABELS.get(name, _unit_label(field))
            fields.append({
                "name": name, "label": label, "kind": kind, "choices": _choices(field, user),
                "optional": field.null or field.blank or field.has_default(), "help": field.help_text,
                "step": "1" if isinstance(field, models.IntegerField) else "any",
            })
        groups.append({"title": title, "fields": fields})
    return groups


def _form_start(request, visible, slug, noun):
    """(the entry being edited or None, the entry the form starts from or None): your own entry (or
    any, for staff) by ``slug``, or a visible one to copy by ``?from=slug``."""
    if slug is not None:
        entry = get_object_or_404(visible, slug=slug)
        if entry.owner_id != request.user.id and not request.user.is_staff:
            raise PermissionDenied(f"only the {noun}'s owner may edit it; start a new {noun} from it instead")
        return entry, entry
    if request.GET.get("from"):
        return None, get_object_or_404(visible, slug=request.GET["from"])
    return None, None


@login_required
def plan_builder(request, slug=None):
    """Create a plan (optionally starting from a visible one, ``?from=slug``) or edit your own."""
    plan, start = _form_start(request, _visible_plans(request.user), slug, "plan")
    initial = _initial(ClusterPlan, ClusterPlanSerializer, start, copying=plan is None)
    if plan is None:  # a site plan's row: the build as the site sized it (the form checks each value)
        initial.update({key: request.GET[key] for key in SIZED_FIELDS if request.GET.get(key)})
    return render(request, "frontend/plan_builder.html", {
        "plan": plan, "groups": _form_fields(ClusterPlan, PLAN_FIELD_GROUPS, PLAN_SECTIONS, request.user),
        "initial": initial,
        "workloads": _visible_workloads(request.user),
    })


# What a new plan takes from its link besides ``from``: a site plan's row sizes its build on the site's
# book, hall (or PUE) and rack power limit.
SIZED_FIELDS = ("node_count", "price_book", "hall", "pue", "rack_power_limit_w")


def _initial(model, serializer_class, start, copying):
    """A form's starting values: an existing entry's (a copy gets no slug and a private, renamed start)
    or the model's defaults."""
    initial = serializer_class(start).data if start else {
        field.name: field.default for field in model._meta.concrete_fields
        if field.has_default() and not callable(field.default)}
    if start is not None and copying:
        initial = {**initial, "slug": "", "name": f"{start.name} (variant)", "visibility": "private"}
    return dict(initial)


@login_required
def workload_list(request):
    return render(request, "frontend/workloads.html", {"workloads": _visible_workloads(request.user)})


@login_required
def workload_editor(request, slug=None):
    """Create a workload (optionally from a visible one, ``?from=slug``) or edit your own, with a
    live evaluation on a chosen plan."""
    workload, start = _form_start(request, _visible_workloads(request.user), slug, "workload")
    plans = list(_visible_plans(request.user))
    preview_plan = _preview_plan(request, plans, start)
    if start is None:  # a blank form cannot be evaluated: start from a preset that runs
        start = Workload.objects.filter(owner__isnull=True, slug=NEW_WORKLOAD_START).first()
    return render(request, "frontend/workload_editor.html", {
        "workload": workload, "groups": _form_fields(Workload, WORKLOAD_FIELD_GROUPS, WORKLOAD_SECTIONS, request.user),
        "initial": _initial(Workload, WorkloadSerializer, start, copying=workload is None),
        "plans": plans, "preview_plan": preview_plan, "start": start,
    })


def _preview_plan(request, plans, start) -> str:
    """The plan a workload is first previewed on: ``?plan=`` if visible; else, for a workload with a
    GPU count, the smallest plan that holds its GPUs (yours first among equals); else your most
    recently changed plan; else the Fire-Flyer 2 preset (a plan too small for the job would only
    preview its refusal)."""
    slugs = {plan.slug for plan in plans}
    if request.GET.get("plan") in slugs:
        return request.GET["plan"]
    gpus = getattr(start, "gpus", None)
    holding = sorted((plan for plan in plans if gpus and plan.gpu_count >= gpus),
                     key=lambda plan: (plan.gpu_count, plan.owner_id != request.user.id))
    if holding:
        return holding[0].slug
    own = [plan for plan in plans if plan.owner_id == request.user.id]
    return max(own, key=lambda plan: plan.updated_at).slug if own else "ff2-pcie-2zone"


def _scaleup_link(plan) -> str:
    """The name of the link the plan's GPUs scale up over ("" where they have none and talk over PCIe)."""
    accelerator = plan.node_type.accelerator
    return "" if accelerator.scaleup_link == ScaleUpLink.NONE else accelerator.get_scaleup_link_display()


def _comparable(plan, others):
    """Plans to compare ``plan`` with, the likeliest first: its accelerator family's, then by how
    near their GPU count is to its own, then their GPU's memory (the generation within a family:
    a GB200 rack's first choice is the B200 server, a GB300's the B300), so a plan's first choice is
    its nearest sibling, not the first preset."""
    accelerator = plan.node_type.accelerator

    def memory_apart(other):
        sizes = (accelerator.memory_gb, other.node_type.accelerator.memory_gb)
        return abs(math.log(sizes[1] / sizes[0])) if None not in sizes else 0.0

    return sorted(others, key=lambda other: (other.node_type.accelerator.family != accelerator.family,
                                             abs(math.log(other.gpu_count / plan.gpu_count)), memory_apart(other),
                                             other.slug))


@login_required
def plan_detail(request, slug):
    plan = get_object_or_404(_visible_plans(request.user), slug=slug)
    return render(request, "frontend/plan_detail.html", {
        "plan": plan, "workloads": _visible_workloads(request.user),
        "plan_json": {**ClusterPlanSerializer(plan).data, "scaleup_link": _scaleup_link(plan),
                      "nvlink_topology": plan.node_type.nvlink_topology},
        "may_edit": plan.owner_id == request.user.id or request.user.is_staff,
        "heights_needed": netbox.parts_without_height(plan),
        "compare_with": _comparable(plan, [p for p in _visible_plans(request.user) if p.pk != plan.pk])[:12],
        "measurements": measurement_services.plan_measurements(plan=plan, user=request.user),
        "collectives": COLLECTIVES,
        "owns": plan.owner_id == request.user.id,
        "runs": run_services.plan_runs(plan, request.user),
        "carried": measurement_services.plan_carried(plan=plan, user=request.user),
    })


@login_required
def compare(request):
    """2-4 plans side by side (``?ids=a,b[,c,d]&workload=slug``; ``pick`` and ``with`` add plans,
    as the plan list's checkboxes and a plan page's chooser send them); with no plans, a chooser."""
    slugs = [s for s in request.GET.get("ids", "").split(",") if s]
    slugs += [s for key in ("pick", "with") for s in request.GET.getlist(key) if s and s not in slugs]
    plans = list(_visible_plans(request.user))
    context = {"plans": plans, "workloads": _visible_workloads(request.user), "slots": (slugs + [""] * 4)[:4],
               "workload": request.GET.get("workload", ""), "fire_flyer_ids": ",".join(FIRE_FLYER_COMPARISON),
               "blackwell_ids": ",".join(BLACKWELL_COMPARISON), "supernode_ids": ",".join(SUPERNODE_COMPARISON),
               "current_ids": ",".join(CURRENT_COMPARISON)}
    if slugs:
        found = {plan.slug: plan for plan in plans if plan.slug in slugs}
        workload = None
        if context["workload"]:
            workload = next((w for w in context["workloads"] if w.slug == context["workload"]), None)
        errors = plan_services.compare_choice_problems(slugs)
        errors += [f"no plan '{slug}' is visible to you" for slug in slugs if slug not in found]
        if context["workload"] and workload is None:
            errors.append(f"no workload '{context['workload']}' is visible to you")
        context["errors"] = errors
        if not errors:
            try:
                context["comparison"] = plan_services.plan_compare(
                    plans=[found[s] for s in slugs], workload=workload, work_budget_s=settings.API_WORK_BUDGET_S)
                context["columns"], context["slugs"] = [found[s] for s in slugs], slugs
            except ScenarioError as error:
                context["errors"] = [str(error)]
    return render(request, "frontend/compare.html", context)


@login_required
def sweep_list(request):
    """Your sweeps, and a form for a new one: axes from the scenario fields, an optional goal; from a
    plan's page, its workload chosen and the build swept around its own size
    (:func:`planner.services.plans.sweep_around`)."""
    numeric_axes = [path for path, kind, _, _ in field_docs() if kind.startswith(("integer", "number"))]
    plans, workloads = _visible_plans(request.user), _visible_workloads(request.user)
    chosen = next((p for p in plans if p.slug == request.GET.get("plan")), None)
    workload = next((w for w in workloads if w.slug == request.GET.get("workload")), None)
    around_path, around_values = (plan_services.sweep_around(chosen, workload) if chosen else
                                  ("cluster.node_count", "200..1240 step 40"))
    return render(request, "frontend/sweeps.html", {
        "sweeps": Sweep.objects.filter(owner=request.user).select_related("plan", "workload").order_by("-created_at"),
        "plans": plans, "workloads": workloads,
        "plan": request.GET.get("plan", ""), "workload": request.GET.get("workload", ""),
        "around_path": around_path, "around_values": around_values,
        "axis_paths": [*CATEGORICAL_AXES, DATA_PARALLEL_AXIS, *numeric_axes], "metrics": outputs.selected("sweep"),
    })


@login_required
def site_new(request):
    """The site-first form: a facility, a budget and a goal; it posts to ``/api/sweeps/site/``."""
    return render(request, "frontend/site_new.html", {
        "builds": ClusterPlan.objects.visible_to(request.user).filter(
            models.Q(visibility=Visibility.SHARED) | models.Q(owner=request.user)).order_by("slug"),
        "workloads": _visible_workloads(request.user),
        "books": PriceBook.objects.visible_to(request.user).order_by("slug"),
        "halls": [(hall, f"{hall} (PUE {pue})") for hall, pue in HALL_PUE.items()],
        "deadline": (datetime.date.today() + datetime.timedelta(days=365)).isoformat()})


@login_required
def sweep_detail(request, sweep_id):
    sweep = get_object_or_404(Sweep.objects.select_related("plan", "workload").visible_to(request.user), pk=sweep_id)
    sweep.site_result = site_result_for(sweep, request.user)
    per_combination = sweep.calibration
    found = Counter((constant, value) for calibration in per_combination for constant, value in calibration.items())
    carried = sweep.base_document.get("carried", {})
    overrides = [(constant, value, 0 if count == len(per_combination) else count, carried.get(constant))
                 for (constant, value), count in sorted(found.items())]
    return render(request, "frontend/sweep_detail.html", {
        "sweep": sweep, "overrides": overrides, "names": _sweep_names(sweep),
        "site_bands": _site_bands(sweep, request.user),
        "better": {o.path: o.better for o in outputs.OUTPUTS if o.path and o.better}})


def _site_bands(sweep, user) -> list[dict]:
    """A site plan's time bands, one per GPU family its ranked builds use (and another where the
    owner's runs join the bands of their own builds), each as a sentence."""
    found = {}
    yours = "your own" if user.pk == sweep.owner_id else "its owner's"
    for row in (sweep.site_result or {}).get("builds", []):
        band = row.get("time_band")
        key = (row["family"], band.get("own_cases", 0) if band else 0)
        if band and key not in found:
            off = f"{band['low_error']:+.1%} to {band['high_error']:+.1%}"
            own = band.get("own_cases", 0)
            published = band["cases"] - own
            runs = " and ".join(part for part in (
                f"{published} {band['basis']}" if published else "",
                f"{own} of {yours} run{'s' if own > 1 else ''}" if own else "") if part)
            found[key] = {"family": row["family"], "message": (
                f"{'outside everything validated: ' if not band['validated'] else ''}on {runs} the step time "
                f"was predicted {off} off; a time to train takes its step time's band")}
    return list(found.values())


def _sweep_names(sweep) -> dict[str, str]:
    """What the sweep chart calls each axis and output: its label and unit ("axis:" paths from the
    scenario's field declaration, outputs from the registry, prices in the plan's currency)."""
    currency = sweep.plan.price_book.currency if sweep.plan.price_book_id else "price"
    unit = {"currency": currency, "fraction": "fraction"}
    names = {f"axis:{path}": f"{label} ({units})" if units else label
             for path, (label, units) in field_labels().items()}
    names.update({o.path: f"{o.label} ({unit.get(o.unit, o.unit)})" if o.unit else o.label
                  for o in outputs.OUTPUTS if o.path})
    return names


@login_required
def twin_list(request):
    return render(request, "frontend/twins.html", {
        "twins": Twin.objects.select_related("plan", "owner").visible_to(request.user).order_by("-created_at"),
        "plans": _visible_plans(request.user), "workloads": _visible_workloads(request.user),
        "plan": request.GET.get("plan", ""),
    })


@login_required
def twin_detail(request, twin_id):
    twin = get_object_or_404(Twin.objects.select_related("plan", "owner").visible_to(request.user), pk=twin_id)
    categories = twin_categories(twin)
    return render(request, "frontend/twin_detail.html", {
        "twin": twin, "may_control": twin.owner_id == request.user.id or request.user.is_staff,
        "categories": categories, "category_names": {c["key"]: c["label"] for c in categories},
    })


@login_required
def validation(request):
    """Every published reference case, the engine's prediction and its error, grouped by model."""
    rows, summary = engine_validation()
    groups = [{"model": model, "summary": summary[model], "rows": [r for r in rows if r["model"] == model]}
              for model in summary]
    return render(request, "frontend/validation.html", {"groups": groups, "total": len(rows),
                                                        "passing": sum(r["passes"] for r in rows),
                                                        "weak_checks": sum(r["weak_check"] for r in rows),
                                                        "weak_passing": sum(r["weak_check"] and r["passes"]
                                                                            for r in rows),
                                                        "constants": constant_rows(fitted.values()),
                                                        "bands": [{"group": group, **band} for group, band
                                                                  in sorted(engine_bands().items())],
                                                        "coverage": engine_band_coverage(),
                                                        "measurements": measurement_services.user_measurements(
                                                            user=request.user),
                                                        "runs": run_services.user_runs(request.user)})


@login_required
def reliability_profiles(request):
    """The failure and restart profiles with every rate, part and source."""
    return render(request, "frontend/reliability.html", describe_profiles())


@login_required
def tokens(request):
    return render(request, "frontend/tokens.html")


def favicon(request):
    """The site icon, for pages without an icon link (the admin's): browsers ask for /favicon.ico."""
    return HttpResponseRedirect(static("frontend/favicon.svg"))
