"""Catalogue services: load the seed YAML files and summarise what the catalogue holds.

The seed files are the source of truth for the entries they name: loading restores them (an
edit made through the API or admin to a seeded entry is undone by the next load), while entries
the files do not name are left alone. A preset never replaces a user's plan or workload.

Seed files live in ``planner/catalog/data/<table>/<slug>.yaml``, one part per file, and each
table has a JSON Schema in ``planner/catalog/schemas/<table>.schema.json``. Loading validates
every file against its schema, then through the same serializers the API uses (so the rules in
``Model.clean()`` apply), inside one transaction: a bad file leaves the catalogue as it was.
"""
import json
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from pathlib import Path

import jsonschema
import yaml
from django.db import transaction
from django.db.models import Count

from planner import models, serializers
from planner.models.declared import PLAN_SECTIONS, WORKLOAD_SECTIONS, preset_properties

CATALOG_DIR = Path(__file__).resolve().parent.parent / "catalog"
DATA_DIR = CATALOG_DIR / "data"
SCHEMA_DIR = CATALOG_DIR / "schemas"
DECLARED_SECTIONS = {models.Workload: WORKLOAD_SECTIONS, models.ClusterPlan: PLAN_SECTIONS}


@dataclass(frozen=True)
class CatalogTable:
    name: str  # folder, schema and API path name
    label: str
    model: type
    serializer: type
    api_path: str = ""  # under /api/; catalogue tables by default
    preset: bool = False  # plans and workloads shipped with the catalogue

    @property
    def path(self) -> str:
        return self.api_path or f"catalog/{self.name}"


# In dependency order: a table only refers to tables listed before it.
TABLES = [
    CatalogTable("accelerators", "Accelerators", models.Accelerator, serializers.AcceleratorSerializer),
    CatalogTable("cpus", "CPUs", models.CPU, serializers.CPUSerializer),
    CatalogTable("nics", "NICs", models.NIC, serializers.NICSerializer),
    CatalogTable("switches", "Switches", models.Switch, serializers.SwitchSerializer),
    CatalogTable("link-parts", "Cables and transceivers", models.LinkPart, serializers.LinkPartSerializer),
    CatalogTable(
        "compute-node-types", "Compute node types", models.ComputeNodeType, serializers.ComputeNodeTypeSerializer
    ),
    CatalogTable(
        "storage-node-types", "Storage node types", models.StorageNodeType, serializers.StorageNodeTypeSerializer
    ),
    CatalogTable("price-books", "Price books", models.PriceBook, serializers.PriceBookSerializer),
    CatalogTable("workloads", "Workload presets", models.Workload, serializers.WorkloadSerializer, "workloads", True),
    CatalogTable("plans", "Plan presets", models.ClusterPlan, serializers.ClusterPlanSerializer, "plans", True),
]


class CatalogFileError(Exception):
    """A seed file that does not pass its schema or the model's rules."""

    def __init__(self, path: Path, errors):
        self.path = path
        self.errors = errors
        super().__init__(f"{path}: {errors}")


@dataclass
class LoadReport:
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: int = 0

    def __str__(self):
        return f"{len(self.created)} created, {len(self.updated)} updated, {self.unchanged} unchanged"


def load_schema(table: CatalogTable) -> dict:
    """The table's JSON Schema: its file, with the engine fields its model stores as declared
    (:mod:`planner.models.declared`)."""
    schema = json.loads((SCHEMA_DIR / f"{table.name}.schema.json").read_text())
    sections = DECLARED_SECTIONS.get(table.model, ())
    return {**schema, "properties": {**schema["properties"], **preset_properties(sections)}} if sections else schema


def seed_files(table: CatalogTable, data_dir: Path = DATA_DIR) -> list[Path]:
    return sorted((data_dir / table.name).glob("*.yaml"))


def read_seed_file(path: Path, schema: dict) -> dict:
    """Parse one YAML file and check it against the table's JSON Schema."""
    try:
        document = yaml.safe_load(path.read_text())
    except yaml.YAMLError as error:
        raise CatalogFileError(path, [f"not valid YAML: {error}"]) from error
    validator = jsonschema.Draft202012Validator(schema)
    problems = [
        f"{'/'.join(str(p) for p in error.absolute_path) or '(document)'}: {error.message}"
        for error in validator.iter_errors(document)
    ]
    if problems:
        raise CatalogFileError(path, problems)
    if document["slug"] != path.stem:
        raise CatalogFileError(path, [f"slug: '{document['slug']}' must match the file name '{path.stem}'"])
    return document


def _normalise(value):
    """Compare numbers by value whether YAML gave a float or the serializer a decimal string."""
    if isinstance(value, float | int | Decimal | str) and not isinstance(value, bool):
        try:
            return Decimal(str(value)).normalize()
        except InvalidOperation:
            return value
    if isinstance(value, list):
        return sorted((_normalise(v) for v in value), key=repr)
    if isinstance(value, dict):
        return {k: _normalise(v) for k, v in value.items()}
    return value


def _unset_dropped(value):
    """``value`` without the unset fields (null or empty) of its nested entries, which a seed document
    may leave out (a price item's optional date and link)."""
    if isinstance(value, list):
        return [{key: v for key, v in entry.items() if v not in (None, "")} if isinstance(entry, dict) else entry
                for entry in value]
    return value


def _same(serializer_class, instance, document: dict) -> bool:
    """True when the stored entry already says exactly what the document says."""
    stored = serializer_class(instance).data
    return all(_normalise(_unset_dropped(stored.get(key))) == _normalise(_unset_dropped(value))
               for key, value in document.items())


@transaction.atomic
def catalog_load(*, data_dir: Path = DATA_DIR) -> LoadReport:
    """Create or update every seed entry; entries already identical are not touched."""
    report = LoadReport()
    for table in TABLES:
        schema = load_schema(table)
        for path in seed_files(table, data_dir):
            document = read_seed_file(path, schema)
            instance = table.model.objects.filter(slug=document["slug"]).first()
            owned = any(field.name == "owner" for field in table.model._meta.get_fields())
            if owned and instance is not None and instance.owner_id is not None:
                raise CatalogFileError(path, [f"slug: '{document['slug']}' belongs to a user's entry; rename the "
                                              "preset or that entry"])
            if instance is not None and _same(table.serializer, instance, document):
                report.unchanged += 1
                continue
            serializer = table.serializer(instance=instance, data=document)
            if not serializer.is_valid():
                raise CatalogFileError(path, serializer.errors)
            serializer.save()
            (report.created if instance is None else report.updated).append(f"{table.name}/{path.stem}")
    return report


def catalog_summary() -> list[dict]:
    """Entry counts per table (split by confidence for parts; presets only for plans and
    workloads), for the landing page."""
    summary = []
    for table in TABLES:
        if table.preset:
            by_confidence = []
            count = table.model.objects.filter(owner__isnull=True).count()
        else:  # the shared catalogue's entries, not users' own price books
            shared = table.model.objects.all()
            if any(field.name == "owner" for field in table.model._meta.get_fields()):
                shared = shared.filter(owner__isnull=True)
            rows = shared.values("confidence").annotate(n=Count("id")).order_by("confidence")
            by_confidence = [(row["confidence"], row["n"]) for row in rows]
            count = sum(n for _, n in by_confidence)
        summary.append({"name": table.name, "label": table.label, "preset": table.preset, "api_path": table.path,
                        "count": count, "by_confidence": by_confidence})
    return summary


def matching_parts(node_type: models.ComputeNodeType, switch: models.Switch | None = None) -> dict[str, list[dict]]:
    """The switches, endpoint cables, transceivers and fibres a plan on ``node_type`` can be built from,
    those that fit first (each group by slug), each with the reason it does not fit: the plan's
    own rule (:meth:`ClusterPlan.part_errors`). Cables and optics are judged against ``switch``,
    or the first switch that fits (none: no cable or optic is listed)."""
    def judged(place, candidates, **plan):
        rows = []
        for part in candidates:
            reason = models.ClusterPlan(node_type=node_type, **plan, **{place: part}).part_errors().get(place, "")
            rows.append({"slug": part.slug, "name": part.name, "fits": not reason, "reason": reason})
        return sorted(rows, key=lambda row: not row["fits"])

    switches = {part.slug: part for part in models.Switch.objects.order_by("slug")}
    out = {"switch": judged("switch", switches.values())}
    if switch is None:
        switch = next((switches[row["slug"]] for row in out["switch"] if row["fits"]), None)
    link_parts = list(models.LinkPart.objects.order_by("slug")) if switch is not None else []
    for place in ("endpoint_cable", "transceiver", "fiber"):
        out[place] = judged(place, link_parts, switch=switch)
    return out
