"""Failures as production clusters see them, through the API: who a fault hits, the fabric's share,
restart in parts, checkpoint policy, the Llama 3 profile, and bad input naming its field."""
import pytest
from rest_framework.test import APIClient

from planner.models import ClusterPlan
from simcore.formulas.reliability import FF_XID_COUNTS, XID_CLASSES
from twin.models import Twin

FF, FF3 = "ff2-pcie-2zone", "ff2-pcie-3layer"
SINGLE, MULTI = "ascend-910b-single-rail", "ascend-910b-multi-rail"


def evaluate(client, plan, workload=None, **body):
    response = client.post(f"/api/plans/{plan}/evaluate/", {"workload": workload, **body} if workload else body,
                           format="json")
    assert response.status_code == 200, response.json()
    return response.json()


def metrics(client, *plans):
    response = client.get("/api/plans/compare/", {"ids": ",".join(plans)})
    assert response.status_code == 200, response.json()
    return {m["key"]: m["values"] for m in response.json()["metrics"]}


def test_a_production_job_on_fire_flyer_stops_for_platform_faults_only(catalog, reader_client):
    reliability = evaluate(reader_client, FF, "llama-13b-512")["result"]["reliability"]
    by_category = reliability["job_by_category_per_day"]
    software = {f"xid-{code}" for code in XID_CLASSES["software"]}
    assert not software & {key for key, rate in by_category.items() if rate > 0}
    assert reliability["job_caused_interruptions_per_day"] == 0
    assert reliability["job_interruptions_per_day"] == pytest.approx(sum(by_category.values()))
    # The cluster still logs every Xid of FF's year (9,920 of its 10,000 GPUs).
    xid_year = sum(v for k, v in reliability["by_category_per_day"].items() if k.startswith("xid")) * 365
    assert xid_year == pytest.approx(sum(count for _, count, _, _ in FF_XID_COUNTS.values()) * 0.992)
    labels = {c["key"]: c for c in reliability["categories"]}
    assert labels["xid-31"]["cause"] == "job" and labels["xid-74"]["cause"] == "platform"
    assert labels["ib-link"]["unit"] == "link" and labels["ib-link"]["detection"] == "hang"


def test_the_llama3_plan_gives_table_5s_rate_and_an_ettr_above_90_percent(catalog, reader_client):
    body = evaluate(reader_client, "llama3-h100-16k", "llama3-405b-like")
    reliability = body["result"]["reliability"]
    assert reliability["job_interruptions_per_day"] == pytest.approx(419 / 54, rel=0.10)
    assert reliability["checkpoint_mode"] == "async" and reliability["restart_profile"] == "fast-restart"
    assert reliability["restart_time_s"] < 600  # a few minutes
    assert reliability["ettr"] > 0.90
    curve = body["curves"]["ettr_vs_restart"]
    assert curve["plan_restart_s"] == pytest.approx(reliability["restart_time_s"])
    assert curve["ettr"] == sorted(curve["ettr"], reverse=True)  # a longer restart never helps
    assert curve["restart_s"][0] < curve["plan_restart_s"] < curve["restart_s"][-1]


def test_restart_parts_of_the_ascend_and_fast_profiles(catalog, reader_client):
    ClusterPlan.objects.filter(slug=SINGLE).update(checkpoint_in_memory=True)  # no storage plane in the preset
    ascend = evaluate(reader_client, SINGLE, "llama-13b-512")["result"]["reliability"]
    parts = ascend["restart_parts_s"]
    assert ascend["restart_profile"] == "ascend-10k-2025"
    assert parts["init"] == pytest.approx(0.15 * 512)
    assert ascend["restart_by_kind_s"]["platform-hang"] - ascend["restart_by_kind_s"]["platform-crash"] == \
        pytest.approx(1836 - 30)


def test_compare_shows_the_fabric_share_of_two_against_three_layers_and_single_against_multi_rail(
        catalog, reader_client):
    trees = metrics(reader_client, FF, FF3)
    # The Ascend presets take a per-node rate (no published categories); on the Fire-Flyer profile
    # they keep its link and switch faults (not its NVIDIA Xids), which is what the rails change.
    ClusterPlan.objects.filter(slug__in=(SINGLE, MULTI)).update(failure_profile="fire-flyer",
                                                                 failures_per_1000_node_days=None)
    rails = metrics(reader_client, SINGLE, MULTI)
    for values in (trees["fabric_interruption_share"], trees["fabric_repair_hours_per_day"],
                   rails["fabric_interruption_share"], rails["fabric_repair_hours_per_day"]):
        assert values[1] > values[0] > 0
    assert rails["fabric_interruptions_per_day"][1] > 1.5 * rails["fabric_interruptions_per_day"][0]


@pytest.mark.parametrize("change,field,words", [
    ({"category_rates": {"xid-999": 1e-6}}, "category_rates", "no such category in the fire-flyer profile"),
    ({"category_rates": {"xid-74": -1}}, "category_rates", "zero or more"),
    ({"collective_timeout_s": -5}, "collective_timeout_s", "greater than"),
    ({"restart_profile": "instant"}, "restart_profile", "not a valid choice"),
    ({"checkpoint_mode": "sometimes"}, "checkpoint_mode", "not a valid choice"),
])
def test_bad_reliability_input_names_the_field_and_changes_nothing(change, field, words, catalog, reader_client):
    created = reader_client.post("/api/plans/", {"slug": "mine", "name": "Mine", "node_type": "ff-pcie-a100",
                                                 "node_count": 64, "switch": "qm8700",
                                                 "price_book": "fire-flyer-relative"}, format="json")
    assert created.status_code == 201, created.json()
    before = ClusterPlan.objects.get(slug="mine")
    response = reader_client.patch("/api/plans/mine/", change, format="json")
    assert response.status_code == 400 and words in str(response.json()[field]), response.json()
    after = ClusterPlan.objects.get(slug="mine")
    assert (after.category_rates, after.collective_timeout_s, after.restart_profile, after.checkpoint_mode) == (
        before.category_rates, before.collective_timeout_s, before.restart_profile, before.checkpoint_mode)
    preview = reader_client.post("/api/evaluate/", {"cluster": {"node_count": 1, "node": {
        "gpus": 8, "accelerator": {"family": "ampere", "peak_fp16_tflops": 312, "tdp_w": 400}, "compute_nics": 1,
        "compute_nic_gbit_s": 200}, "fabric": {"switch_radix": 40, "switch_gbit_s": 200},
        "reliability": {"category_rates": {"cosmic-ray": 1.0}}}}, format="json")
    assert preview.status_code == 400 and "cluster.reliability.category_rates.cosmic-ray" in preview.json()


def test_overrides_change_the_evaluation(catalog, reader_client):
    plan = {"slug": "no-nvlink-errors", "name": "x", "node_type": "ff-pcie-a100", "node_count": 64, "switch": "qm8700",
            "price_book": "fire-flyer-relative", "category_rates": {"xid-74": 0.0}, "collective_timeout_s": 120,
            "external_storage_write_gbyte_s": 100}
    response = reader_client.post("/api/plans/", plan, format="json")
    assert response.status_code == 201, response.json()
    reliability = evaluate(reader_client, "no-nvlink-errors", "llama-13b-512")["result"]["reliability"]
    assert reliability["by_category_per_day"]["xid-74"] == 0
    assert reliability["restart_by_kind_s"]["platform-hang"] - reliability["restart_by_kind_s"]["platform-crash"] == \
        pytest.approx(120 - 30)


def test_a_spare_pool_larger_than_the_cluster_is_refused_and_no_twin_is_stored(catalog, user):
    client = APIClient()
    client.force_authenticate(user)
    for spares, words in ((1240, "from 0 to 1239"), (-1, "from 0 to 1239")):
        response = client.post("/api/twins/", {"plan": FF, "spare_nodes": spares}, format="json")
        assert response.status_code == 400 and words in str(response.json()["spare_nodes"]), response.json()
    assert Twin.objects.count() == 0
    made = client.post("/api/twins/", {"plan": FF, "spare_nodes": 40}, format="json")
    assert made.status_code == 201 and made.json()["jobs"][0]["nodes"] == 1200


def test_ascend_presets_charge_no_nvidia_xids_and_say_why(catalog, reader_client):
    reliability = evaluate(reader_client, SINGLE, "llama-13b-512")["result"]["reliability"]
    assert not [key for key in reliability["by_category_per_day"] if key.startswith("xid")]
    assert [c["key"] for c in reliability["categories"]] == ["node-failure"]  # Meta's per-node rate
    # 1,250 nodes at 6.50 failures per 1,000 node-days
    assert reliability["events_per_day"] == pytest.approx(1250 * 6.5 / 1000)
    # The same cluster on the Fire-Flyer profile keeps its host and fabric faults, not the Xids.
    plan = ClusterPlan.objects.get(slug=SINGLE)
    plan.failure_profile, plan.failures_per_1000_node_days = "fire-flyer", None
    plan.save()
    fire_flyer = evaluate(reader_client, SINGLE, "llama-13b-512")["result"]["reliability"]
    assert {c["key"] for c in fire_flyer["categories"]} == {"ib-link", "switch", "host-memory-ecc"}
    excluded = {c["key"]: c["reason"] for c in fire_flyer["excluded_categories"]}
    assert set(excluded) == {f"xid-{code}" for code in FF_XID_COUNTS} and "does not report Xids" in excluded["xid-74"]
    plan.category_rates = {"xid-74": 1e-6}
    with pytest.raises(Exception, match="no such category"):
        plan.full_clean()


def test_xid_63_row_remapping_is_logged_but_does_not_interrupt_the_job(catalog, reader_client):
    reliability = evaluate(reader_client, FF, "llama-13b-512")["result"]["reliability"]
    labels = {c["key"]: c for c in reliability["categories"]}
    assert labels["xid-63"]["interrupts_job"] is False and labels["xid-64"]["interrupts_job"] is True
    assert reliability["by_category_per_day"]["xid-63"] > 0 and "xid-63" not in {
        key for key, rate in reliability["job_by_category_per_day"].items() if rate > 0}
