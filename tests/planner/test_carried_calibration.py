"""A trace's calibration carried to another build of the same family: the plan's evaluation uses the
carried shares, marked as carried, and shows the family's figures beside them with the band of the
trace's spread over its ranks; refused, naming the field, for another family or the trace's own plan."""
import gzip
import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from planner.models import ClusterPlan
from tests.planner.test_trace_measurements import SLOW_STEP

WORKLOAD = "llama-13b-512"
# Two ranks of the synthetic LLaMa-13B layer: the second 20% slower in every kernel, so the shares spread.
TWO_RANKS = [*SLOW_STEP, *({**event, "pid": 1, "ts": event["ts"] * 1.2, "dur": event["dur"] * 1.2}
                           for event in SLOW_STEP)]


def copy_plan(preset: str, slug: str, owner, node_count: int) -> ClusterPlan:
    plan = ClusterPlan.objects.get(slug=preset)
    plan.pk, plan.slug, plan.owner, plan.visibility, plan.node_count = None, slug, owner, "private", node_count
    plan.save()
    return plan


@pytest.fixture
def traced(reader_client, my_plan):
    """The reader's trace of two ranks against their DGX-A100 plan."""
    file = SimpleUploadedFile("two-ranks.json.gz", gzip.compress(json.dumps({"traceEvents": TWO_RANKS}).encode()))
    response = reader_client.post("/api/measurements/", {"kind": "trace", "file": file, "plan": my_plan.slug,
                                                         "workload": WORKLOAD, "dense_layers": 1}, format="multipart")
    assert response.status_code == 201, response.json()
    return response.json()


def evaluate(client, slug):
    response = client.post(f"/api/plans/{slug}/evaluate/", {"workload": WORKLOAD}, format="json")
    assert response.status_code == 200, response.json()
    return response.json()


def test_a_carried_calibration_moves_the_other_builds_figures_and_shows_the_familys_beside_with_a_band(
        reader_client, user, traced, eager_celery, client):
    fitted = traced["fitted"]["gemm_fraction"]
    assert fitted["low"] < fitted["value"] < fitted["high"] < fitted["family_value"]  # the slow rank's share lowest
    pcie = copy_plan("ff2-pcie-2zone", "my-pcie", user, 64)  # the A100 PCIe: the same family, another build
    before = evaluate(reader_client, pcie.slug)
    assert before["overrides"] == {} and before["carried"] is None
    response = reader_client.post(f"/api/measurements/{traced['id']}/carry/", {"plan": pcie.slug}, format="json")
    assert response.status_code == 201, response.json()
    assert response.json()["plan"] == pcie.slug and response.json()["fitted"]["gemm_fraction"] == fitted
    after = evaluate(reader_client, pcie.slug)
    gemm = after["overrides"]["gemm_fraction"]
    assert gemm["carried"] == {"plan": "my-dgx", "node_type": "dgx-a100", "low": fitted["low"], "high": fitted["high"]}
    assert after["result"]["calibration"]["gemm_fraction"] == {"value": fitted["value"], "source": "measured"}
    step_s, family_s = after["result"]["training"]["step_time_s"], after["carried"]["family"]["training.step_time_s"]
    assert family_s == pytest.approx(before["result"]["training"]["step_time_s"])
    assert step_s > family_s  # the traced GEMMs ran below the family's share
    low_s, high_s = after["carried"]["spread"]["training.step_time_s"]
    assert low_s < step_s < high_s
    assert after["carried"]["constants"]["gemm_fraction"] == {"value": fitted["value"], "low": fitted["low"],
                                                              "high": fitted["high"]}
    # A sweep of the build runs on the carried shares and says where they came from.
    sweep = reader_client.post("/api/sweeps/", {"plan": pcie.slug, "axes": {"cluster.node_count": [64, 128]},
                                                "outputs": ["compute.gemm_fp16_tflops"]}, format="json").json()
    assert set(after["overrides"]) == {"gemm_fraction", "attention_scale", "hbm_fraction"}
    assert sweep["calibration"] == [{name: fit["value"] for name, fit in after["overrides"].items()}]
    client.force_login(user)
    assert b"carried from your trace on <code>dgx-a100</code>" in client.get(f"/sweeps/{sweep['id']}/").content
    # A site plan weighing the build ranks it on the carried shares and says so; the preset beside it not.
    site = reader_client.post("/api/sweeps/site/", {
        "price_book": "usd-2026", "builds": [pcie.slug, "ff2-pcie-2zone"],
        "facility": {"power_mw": 20, "floor_racks": 400, "cooling": "air", "hall": "hyperscale"},
        "goal": {"workload": WORKLOAD, "objective": "per_dollar", "tokens": 1e9}}, format="json")
    assert site.status_code == 201, site.json()
    carried_by_build = {row["build"]: row["carried"] for row in site.json()["site_result"]["builds"]}
    assert carried_by_build == {pcie.slug: ["dgx-a100"], "ff2-pcie-2zone": []}
    site_page = client.get(f"/sweeps/{site.json()['id']}/").content
    assert b"calibrated from your trace on dgx-a100" in site_page
    # The trace's own plan is unchanged: there it is an override only when marked so.
    assert reader_client.post("/api/plans/my-dgx/evaluate/", {}, format="json").json()["carried"] is None
    again = reader_client.post(f"/api/measurements/{traced['id']}/carry/", {"plan": pcie.slug}, format="json")
    assert again.status_code == 400 and "already carried" in again.json()["errors"]["plan"][0]
    stopped = reader_client.delete(f"/api/measurements/{traced['id']}/carry/?plan={pcie.slug}")
    assert stopped.status_code == 204
    assert evaluate(reader_client, pcie.slug)["overrides"] == {}


def test_a_calibration_is_carried_only_to_your_own_builds_of_its_family(reader_client, user, traced, editor_client):
    hopper = copy_plan("llama3-h100-16k", "my-h100", user, 64)
    for slug, reason in ((hopper.slug, "a trace of ampere GPUs calibrates ampere builds"),
                         ("my-dgx", "use it as an override instead")):
        response = reader_client.post(f"/api/measurements/{traced['id']}/carry/", {"plan": slug}, format="json")
        assert response.status_code == 400 and reason in response.json()["errors"]["plan"][0], response.json()
    shared = reader_client.post(f"/api/measurements/{traced['id']}/carry/", {"plan": "ff2-pcie-2zone"}, format="json")
    assert shared.status_code == 403  # a preset: not the reader's to change
    stranger = editor_client.post(f"/api/measurements/{traced['id']}/carry/", {"plan": "my-h100"}, format="json")
    assert stranger.status_code == 404  # another user's private trace
    missing = reader_client.delete(f"/api/measurements/{traced['id']}/carry/?plan={hopper.slug}")
    assert missing.status_code == 400 and "not carried" in missing.json()["errors"]["plan"][0]
