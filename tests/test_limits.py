"""Every limit answers with a status and a reason, before any work: request body size (413),
page size (400), twin size (400), and throttles on evaluation, sweep and twin creation (429).
The sweep point cap, Monte Carlo replica cap and scenario point cap are tested with their
features (tests/planner/test_sweeps.py, tests/planner/test_plans_api.py)."""
import json

import pytest
from rest_framework.settings import api_settings
from rest_framework.throttling import ScopedRateThrottle

from twin.models import Twin

FF = "ff2-pcie-2zone"


@pytest.fixture
def tight_rates():
    """Lower one scope's rate for a test (DRF reads the rates once, at import)."""
    original = ScopedRateThrottle.THROTTLE_RATES

    def set_rate(scope, rate):
        ScopedRateThrottle.THROTTLE_RATES = {**api_settings.DEFAULT_THROTTLE_RATES, scope: rate}

    yield set_rate
    ScopedRateThrottle.THROTTLE_RATES = original


def test_oversized_bodies_answer_413_before_being_read(catalog, reader_client, settings):
    settings.API_MAX_BODY_BYTES = 10_000
    body = json.dumps({"cluster": {"node_count": 8}, "padding": "x" * 20_000})
    response = reader_client.post("/api/evaluate/", body, content_type="application/json")
    assert response.status_code == 413
    detail = f"request body of {len(body):,} bytes; at most 10,000 bytes here (API_MAX_BODY_BYTES)"
    assert response.json()["detail"] == detail and response.json()["status"] == response.status_code
    small = reader_client.post("/api/evaluate/", {"cluster": {"node_count": 8}}, format="json")
    # Read, and answered on its merits.
    assert small.status_code == 400 and small.json()["errors"] == {"cluster.node": ["is required"]}


def test_page_size_over_the_cap_is_refused_with_the_limit(catalog, reader_client):
    over = reader_client.get("/api/catalog/accelerators/", {"page_size": 501})
    assert over.status_code == 400 and over.json()["errors"] == {"page_size": ["a whole number from 1 to 500"]}
    assert reader_client.get("/api/catalog/accelerators/", {"page_size": "lots"}).status_code == 400
    assert reader_client.get("/api/catalog/accelerators/", {"page_size": 500}).status_code == 200


def test_twins_larger_than_the_cap_are_refused(catalog, reader_client, settings):
    settings.TWIN_MAX_GPUS = 8192
    response = reader_client.post("/api/twins/", {"plan": FF}, format="json")
    assert response.status_code == 400
    assert response.json()["errors"] == {"plan": ["9,920 GPUs; a twin holds at most 8,192 (TWIN_MAX_GPUS)"]}
    assert not Twin.objects.exists()


def test_twin_creation_is_throttled(catalog, reader_client, tight_rates):
    tight_rates("twin", "2/minute")
    codes = [reader_client.post("/api/twins/", {"plan": FF}, format="json").status_code for _ in range(3)]
    assert codes == [201, 201, 429]
    assert Twin.objects.count() == 2


def test_sweep_submission_is_throttled(catalog, reader_client, tight_rates, monkeypatch):
    monkeypatch.setattr("planner.services.submission.sweep_enqueue", lambda sweep: None)
    tight_rates("sweep", "2/minute")
    body = {"plan": FF, "axes": {"cluster.node_count": [8, 16]}}
    codes = [reader_client.post("/api/sweeps/", {**body, "name": str(i)}, format="json").status_code for i in range(3)]
    assert codes == [201, 201, 429]
    refused = reader_client.post("/api/sweeps/", body, format="json").json()
    assert "throttled" in refused["detail"].lower()


@pytest.mark.parametrize("depth", [33, 50_000])
def test_json_nested_past_the_bound_answers_400_not_a_recursion_error(catalog, reader_client, depth):
    body = "[" * depth + "]" * depth
    response = reader_client.post("/api/evaluate/", body, content_type="application/json")
    assert response.status_code == 400
    assert response.json()["detail"] == "JSON nested deeper than 32 levels"
    shallow = reader_client.post("/api/evaluate/", json.dumps({"cluster": [[[[1]]]]}), content_type="application/json")
    assert shallow.status_code == 400 and "cluster" in shallow.json()["errors"]  # a normal field error


def test_cluster_sizes_past_the_physical_bound_are_refused_with_the_field_named(catalog, reader_client):
    """2^20 GPUs at most (simcore.document.MAX_CLUSTER_GPUS): a plan of 2,097,152 GPUs, a document's
    node_count of 1e30 and a job of 2 million GPUs answer 400 naming their field."""
    plan = reader_client.post("/api/plans/preview/", {"node_type": "dgx-a100", "node_count": 262_144,
                                                      "switch": "qm9700", "fabric_layers": 3,
                                                      "price_book": "fire-flyer-relative"}, format="json")
    assert plan.status_code == 400
    assert plan.json()["errors"]["node_count"] == ["2,097,152 GPUs (262,144 nodes of 8); at most 1,048,576 in a plan"]
    document = {"cluster": {"node_count": 1e30, "node": {"gpus": 8}}}
    evaluated = reader_client.post("/api/evaluate/", document, format="json")
    assert evaluated.status_code == 400 and "cluster.node_count" in evaluated.json()["errors"]
    job = reader_client.post("/api/workloads/", {"slug": "huge", "name": "huge", "kind": "transformer",
                                                 "gpus": 2_000_000, "global_batch": 1024}, format="json")
    assert job.status_code == 400 and "less than or equal to 1048576" in job.json()["errors"]["gpus"][0]


def test_a_nul_in_a_query_parameter_is_refused_naming_it(catalog, reader_client):
    """Schemathesis on the production stack found ?existing=%00 answering 500 (PostgreSQL's text
    cannot hold NUL); every query parameter is checked before any view runs."""
    response = reader_client.get("/api/plans/llama3-h100-16k/netbox/", {"existing": "\x00", "file": "devices"})
    assert response.status_code == 400 and response.json()["errors"] == {"existing": ["contains a NUL character"]}
    assert response.json()["detail"] == "existing: contains a NUL character"
    assert reader_client.get("/api/catalog/switches/", {"search": "q\x00"}).status_code == 400
    assert reader_client.get("/api/catalog/switches/", {"search": "qm"}).status_code == 200
