"""Issue 16: a new output metric is one registry entry, shown everywhere with no other edit."""
import io

import pytest
from django.core.management import call_command

from planner.models import ClusterPlan
from planner.services.sweeps import sweep_create
from simcore import outputs
from simcore.outputs import Output

FF = "ff2-pcie-2zone"
LEAVES = Output("leaf_switches", "fabric.leaf_switches", "leaf switches", "switches", outputs.LOWER,
                chart=True, table=True, sweep=True)


@pytest.fixture
def leaves_registered(monkeypatch):
    monkeypatch.setattr(outputs, "OUTPUTS", [*outputs.OUTPUTS, LEAVES])


def test_a_new_entry_reaches_compare_the_cli_table_sweeps_and_the_pages(catalog, reader_client, user,
                                                                       leaves_registered):
    compared = reader_client.get(f"/api/plans/compare/?ids={FF},dgx-a100-3layer").json()
    metric = next(m for m in compared["metrics"] if m["key"] == "leaf_switches")
    assert metric["label"] == "leaf switches" and metric["better"] == "lower" and metric["chart"]
    assert metric["values"][0] == 80  # FF's two zones of 40-port leaves

    table = io.StringIO()
    call_command("evaluate_plan", FF, stdout=table)
    assert "leaf switches" in table.getvalue()

    sweep = sweep_create(owner=user, plan=ClusterPlan.objects.get(slug=FF), workload=None,
                         spec={"axes": {"cluster.node_count": [100, 200]}})
    assert "fabric.leaf_switches" in sweep.spec["outputs"]

    reader_client.force_login(user)
    assert "leaf switches (switches): fabric.leaf_switches" in reader_client.get("/sweeps/").content.decode()
    page = reader_client.get(f"/compare/?ids={FF},dgx-a100-3layer").content.decode()
    assert '"key": "leaf_switches"' in page or '"key":"leaf_switches"' in page
    described = reader_client.get("/api/outputs/", {"page_size": 500}).json()["results"]
    assert {"key": "leaf_switches", "path": "fabric.leaf_switches"}.items() <= next(
        o for o in described if o["key"] == "leaf_switches").items()


def test_every_registered_path_is_in_an_evaluation(catalog, reader_client):
    result = reader_client.post(f"/api/plans/{FF}/evaluate/", {"workload": "llama-13b-512"}, format="json").json()
    absent = object()
    missing = [o.path for o in outputs.OUTPUTS
               if o.path and outputs.dig(result["result"], o.path, absent) is absent]
    assert missing == []


def test_step_parts_are_keyed_by_identifiers_and_the_page_labels_each_as_the_engine_does():
    """The result keys a step's parts by identifier; the plan page's label map is the engine's."""
    import re
    from pathlib import Path

    from simcore.formulas.training import STEP_PARTS

    assert all(re.fullmatch(r"[a-z][a-z0-9_]*", key) for key in STEP_PARTS)
    script = (Path(__file__).resolve().parent.parent / "frontend/static/frontend/js/evaluation.js").read_text()
    block = script[script.index("const STEP_PARTS = {"):]
    page = dict(re.findall(r"(\w+): \"([^\"]+)\"", block[:block.index("};")]))
    assert page == STEP_PARTS


def test_one_number_format_for_tables_and_the_command_line():
    from simcore.outputs import display

    assert display(10000, "GPUs") == "10,000 GPUs" and display(9920.0) == "9,920"
    assert display(5.17e6, "W") == "5.17 MW" and display(1e5, "W") == "100 kW" and display(0, "W") == "0 W"
    assert display(48_000_096.0, "USD", money=True) == "48.0 M USD"
    assert display(375_000, "USD", money=True) == "375,000 USD"
    assert display(0.98745) == "0.9875" and display(149.66, "TFLOPS") == "149.7 TFLOPS"
    assert display(6.67e-4, "s") == "6.67e-04 s" and display(float("nan")) == "–" and display(None) == "–"
    assert display(True) == "yes"
