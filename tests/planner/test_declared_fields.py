"""One declaration per field: a field added to simcore.document.SPEC reaches the engine, the JSON
Schemas, the models, the API, the plan builder, the workload editor and the docs with nothing
else written."""
import json
from types import SimpleNamespace

import pytest
from django.contrib.auth.models import AnonymousUser
from django.db import models
from django.test.utils import isolate_apps

from frontend.views import PLAN_FIELD_GROUPS, WORKLOAD_FIELD_GROUPS, _form_fields
from planner.models import ClusterPlan, Workload
from planner.models.declared import PLAN_SECTIONS, WORKLOAD_SECTIONS, declared_base, section_values, stored_fields
from planner.models.plans import OwnedEntry
from planner.serializers import WorkloadSerializer
from planner.services.catalog import SCHEMA_DIR, TABLES, load_schema
from simcore import ScenarioError
from simcore.document import SPEC, Num, fields_markdown, json_schema, parse_workload

PROBE_WORKLOAD = Num(check="non_negative", default=3.0, required=False, unit="B", label="probe size",
                     group="State and checkpoints", doc="bytes a probe writes")
PROBE_PLAN = Num(check="positive", default=None, nullable=True, required=False, unit="s", label="probe wait",
                 group="Checkpoints and restarts", doc="seconds a probe waits; null: none")


@pytest.fixture
def probe_spec(monkeypatch):
    monkeypatch.setitem(SPEC["workload"], "probe_bytes", PROBE_WORKLOAD)
    monkeypatch.setitem(SPEC["cluster"]["reliability"], "probe_wait_s", PROBE_PLAN)


def _probe_model(name, sections):
    """A model built as Workload and ClusterPlan are: the owned entry and the declared fields."""
    meta = type("Meta", (), {"app_label": "planner"})
    return type(name, (OwnedEntry, declared_base(f"{name}Fields", sections, __name__)),
                {"__module__": __name__, "Meta": meta})


def _form_field(groups, title, name):
    group = next(group for group in groups if group["title"] == title)
    return next(field for field in group["fields"] if field["name"] == name)


@isolate_apps("planner")
def test_an_added_field_reaches_every_place_from_its_one_declaration(probe_spec):
    workload_model = _probe_model("ProbeWorkload", WORKLOAD_SECTIONS)
    plan_model = _probe_model("ProbePlan", PLAN_SECTIONS)

    column = workload_model._meta.get_field("probe_bytes")
    assert isinstance(column, models.FloatField) and column.default == 3.0 and not column.null
    assert column.verbose_name == "probe size" and column.help_text == "Bytes a probe writes."
    assert isinstance(plan_model._meta.get_field("probe_wait_s"), models.FloatField)
    assert plan_model._meta.get_field("probe_wait_s").null

    serializer = type("ProbeSerializer", (WorkloadSerializer,),
                      {"Meta": type("Meta", (WorkloadSerializer.Meta,), {"model": workload_model})})()
    api_field = serializer.fields["probe_bytes"]
    assert api_field.min_value == 0.0 and api_field.help_text == "Bytes a probe writes."
    assert serializer.fields["global_batch"].required  # the real fields come the same way

    editor = _form_field(_form_fields(workload_model, WORKLOAD_FIELD_GROUPS, WORKLOAD_SECTIONS, AnonymousUser()),
                         "State and checkpoints", "probe_bytes")
    assert (editor["label"], editor["kind"], editor["optional"]) == ("probe size (B)", "number", True)
    plan_own = [(title, [name for name in names if name in {"name", "slug", "description", "visibility"}])
                for title, names in PLAN_FIELD_GROUPS]  # the probe has the owned entry's fields alone
    builder = _form_field(_form_fields(plan_model, plan_own, PLAN_SECTIONS, AnonymousUser()),
                          "Checkpoints and restarts", "probe_wait_s")
    assert (builder["label"], builder["help"]) == ("probe wait (s)", "Seconds a probe waits; null: none.")

    scenario = json_schema()["properties"]
    assert scenario["workload"]["properties"]["probe_bytes"]["x-unit"] == "B"
    assert "probe_wait_s" in scenario["cluster"]["properties"]["reliability"]["properties"]
    preset = load_schema(next(table for table in TABLES if table.model is Workload))
    assert preset["properties"]["probe_bytes"] == {"type": "number", "minimum": 0, "x-unit": "B", "default": 3.0,
                                                   "description": "bytes a probe writes; unit: B"}
    assert "probe_wait_s" in load_schema(next(table for table in TABLES if table.model is ClusterPlan))["properties"]

    markdown = fields_markdown()
    assert "| `workload.probe_bytes` | number (non negative), B | 3.0 | bytes a probe writes |" in markdown
    assert "`cluster.reliability.probe_wait_s`" in markdown

    columns = SimpleNamespace(**{**dict.fromkeys(stored_fields(WORKLOAD_SECTIONS), 1.0), "probe_bytes": 5.0})
    assert section_values(columns, WORKLOAD_SECTIONS, "workload")["probe_bytes"] == 5.0
    assert float(parse_workload({"layers": 2, "hidden": 64, "heads": 4, "global_batch": 8,
                                 "probe_bytes": 5.0})["probe_bytes"]) == 5.0
    with pytest.raises(ScenarioError) as refused:
        parse_workload({"layers": 2, "hidden": 64, "heads": 4, "global_batch": 8, "probe_bytes": -1})
    assert refused.value.field == "workload.probe_bytes"


def test_every_input_field_of_the_engine_is_stored_once_and_nowhere_declared_twice():
    """Workloads store every workload field; plans every fabric, storage and reliability field
    with an editor group; the preset schema files declare none of them again."""
    assert set(stored_fields(WORKLOAD_SECTIONS)) == set(SPEC["workload"])
    for model, sections in ((Workload, WORKLOAD_SECTIONS), (ClusterPlan, PLAN_SECTIONS)):
        columns = {field.name for field in model._meta.fields}
        assert set(stored_fields(sections)) <= columns
    grouped = {key for key, rule in SPEC["cluster"]["reliability"].items() if rule.group}
    assert grouped == set(SPEC["cluster"]["reliability"]) - {"profile"}  # the plan's failure_profile
    for name in ("workloads", "plans"):
        written = json.loads((SCHEMA_DIR / f"{name}.schema.json").read_text())["properties"]
        sections = WORKLOAD_SECTIONS if name == "workloads" else PLAN_SECTIONS
        assert not set(written) & set(stored_fields(sections))


def test_a_declared_range_holds_on_the_model_the_engine_and_the_schema():
    """moe_imbalance and oversubscription are at least 1 on every path (the engine once took 0.5)."""
    with pytest.raises(ScenarioError) as refused:
        parse_workload({"layers": 2, "hidden": 64, "heads": 4, "global_batch": 8, "moe_imbalance": 0.5})
    assert (refused.value.field, refused.value.reason) == ("workload.moe_imbalance", "must be at least 1.0")
    oversubscription = ClusterPlan._meta.get_field("oversubscription")
    assert any(getattr(v, "limit_value", None) == 1.0 for v in oversubscription.validators)
    fabric = json_schema()["properties"]["cluster"]["properties"]["fabric"]["properties"]
    assert fabric["oversubscription"]["anyOf"][0]["minimum"] == 1.0
