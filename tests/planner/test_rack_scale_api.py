"""Today's builds through the API: HGX B200 against GB200 NVL72 on the same fabric, with the
MoE workload; every price row needs its basis."""
import math

import pytest
import yaml

import simcore
from planner.services.catalog import TABLES, CatalogFileError, load_schema, read_seed_file
from simcore.formulas.power import PowerParams

HGX, NVL72 = "hgx-b200-1152", "gb200-nvl72-1152"


def test_compare_hgx_b200_with_gb200_nvl72_on_the_moe_workload(catalog, reader_client):
    response = reader_client.get("/api/plans/compare/", {"ids": f"{HGX},{NVL72}", "workload": "deepseek-v3-class-1024"})
    assert response.status_code == 200, response.json()
    body = response.json()
    values = {m["key"]: m["values"] for m in body["metrics"]}
    assert body["placements"]["ep"] == ["network", "scale-up"] and body["placements"]["tp"] == ["scale-up"] * 2
    hgx_ep, rack_ep = values["ep_traffic_s"]
    assert hgx_ep > 5 * rack_ep and values["step_time_s"][0] > values["step_time_s"][1]
    assert values["scaleup_domain_gpus"] == [8, 72] and values["gpus_per_rack"][1] == 72
    # DGX B200's published 14.3 kW maximum provisions the 60 kW racks: 4 a rack, not 7 at the 8 kW average.
    assert values["node_max_power_w"][0] == 14_300
    assert values["racks"][1] == 16 and values["racks"][0] == math.ceil(144 / (60_000 // 14_300))
    p = PowerParams()  # the parts under training: GPUs at 0.85 of TDP with their board, CPUs, NICs, supply losses
    dgx_w = (8 * (1000 * 0.85 + p.board_w_per_gpu) + 2 * 350 + 8 * p.nic_w) * (1 + p.fan_share_air) / p.psu_efficiency
    tray_w = (4 * (1200 * 0.85 + p.board_w_per_gpu) + 2 * 250 + 4 * p.nic_w) / p.psu_efficiency  # cold plates: no fans
    assert values["rack_power_w"] == pytest.approx([4 * dgx_w, 18 * tray_w + 4400])
    # One hall class for both (the 2025 book gives no PUE): the air-cooled build's lower IT power is
    # the lower facility power too.
    assert values["pue"] == [1.10, 1.10]
    bases = {basis["key"]: basis["values"] for basis in body["bases"]}
    assert bases["pue"] == ["hyperscale hall: Google fleet-wide PUE 1.10 (Q2 2021)"] * 2
    assert bases["node_max_power"] == ["vendor maximum", "vendor maximum"]  # 14.3 kW; 6,667 W a tray (NVIDIA DPS)
    assert values["facility_power_w"] == pytest.approx([it * 1.10 for it in values["it_power_w"]])
    assert values["it_power_w"][0] < values["it_power_w"][1] and values["facility_power_w"][0] < values[
        "facility_power_w"][1]
    # Every part priced in one book (the fabric estimated): both totals, comparable on cost, each with its band.
    assert body["cost_comparable"] is True and body["unpriced"] == {plan: [] for plan in body["plans"]}
    totals = [m for m in body["metrics"] if m["key"] == "capex_total"][0]
    assert all(band["actual_low"] < value < band["actual_high"] for value, band in zip(totals["values"],
                                                                                        totals["bands"]))
    plan = reader_client.post(f"/api/plans/{NVL72}/evaluate/", {"workload": "deepseek-v3-class-1024"},
                              format="json").json()["result"]
    assert not [c for c in plan["constraints"] if c["code"] == "cost.unpriced"]


def test_the_dgx_h200_hall_is_racked_at_its_published_maximum_and_writes_to_its_storage(catalog, reader_client):
    result = reader_client.post("/api/plans/dgx-h200-1024/evaluate/", {"workload": "deepseek-v3-class-1024"},
                                format="json").json()["result"]
    assert result["power"]["node_max_w"] == 10_200 and result["power"]["node_max_basis"].startswith("vendor")
    assert result["racks"]["nodes_per_rack"] == 40_000 // 10_200 and result["racks"]["count"] == math.ceil(128 / 3)
    assert result["training"]["placement"]["ep"] == "network" and result["training"]["feasible"]
    # Its external storage system (Llama 3's sustained write per GPU, 125 GB/s): a time to train (issue 70, item 5).
    assert result["reliability"]["checkpoint_bound"] == "storage aggregate"
    assert result["training"]["time_to_train_days"] > 0
    assert result["cost"]["capex_low"] < result["cost"]["capex_total"] < result["cost"]["capex_high"]


def test_an_unsourced_price_row_is_refused_by_the_catalogue_schema(tmp_path):
    table = next(t for t in TABLES if t.name == "price-books")
    document = yaml.safe_load(open("planner/catalog/data/price-books/usd-2026.yaml").read())
    del document["items"][0]["basis"]
    path = tmp_path / "usd-2026.yaml"
    path.write_text(yaml.safe_dump(document))
    with pytest.raises(CatalogFileError) as raised:
        read_seed_file(path, load_schema(table))
    assert "items/0: 'basis' is a required property" in str(raised.value.errors)


def test_a_reference_that_cannot_be_a_slug_is_a_field_error_not_a_database_error(catalog, reader_client):
    for bad in ("Z\u0000", "two words", 7):
        response = reader_client.post("/api/plans/", {"slug": "x", "name": "x", "node_type": bad, "node_count": 8,
                                                      "switch": "qm8700", "price_book": "fire-flyer-relative"},
                                      format="json")
        assert response.status_code == 400 and "node_type" in response.json(), response.json()


def test_a_rack_scale_plan_comes_in_whole_domains(catalog, reader_client):
    body = {"slug": "few-trays", "name": "x", "node_type": "gb200-nvl72-tray", "switch": "qm9700",
            "price_book": "usd-2026"}
    refused = reader_client.post("/api/plans/", {**body, "node_count": 20}, format="json")
    assert refused.status_code == 400 and "multiple of 18" in str(refused.json()["node_count"])
    assert reader_client.post("/api/plans/", {**body, "node_count": 36}, format="json").status_code == 201


def test_a_rack_scale_plan_may_give_its_domain_failure_rate(catalog, reader_client):
    body = {"slug": "rated-racks", "name": "x", "node_type": "gb200-nvl72-tray", "node_count": 36, "switch": "qm9700",
            "price_book": "usd-2026", "category_rates": {"nvlink-switch-tray": 1e-4}}
    created = reader_client.post("/api/plans/", body, format="json")
    assert created.status_code == 201, created.json()
    rel = reader_client.post("/api/plans/rated-racks/evaluate/", {}, format="json").json()["result"]["reliability"]
    assert rel["by_category_per_day"]["nvlink-switch-tray"] == pytest.approx(1e-4 * 2 * 24)
    hgx = reader_client.post("/api/plans/", {**body, "slug": "hgx-rated", "node_type": "dgx-b200"}, format="json")
    assert hgx.status_code == 400 and "no such category" in str(hgx.json()["category_rates"])


def test_nodes_per_rack_come_from_the_plan_the_limit_or_a_12_kw_rack_and_never_override_the_system(
        catalog, reader_client):
    llama3 = reader_client.post("/api/plans/llama3-h100-16k/evaluate/", {}, format="json").json()["result"]["racks"]
    assert (llama3["nodes_per_rack"], llama3["count"], llama3["nodes_per_rack_basis"]) == (2, 1024, "given")
    ff = reader_client.post("/api/plans/ff2-pcie-2zone/evaluate/", {}, format="json").json()["result"]
    node_max_w = ff["power"]["node_max_w"]  # the PCIe node's parts at nameplate, 3.9 kW
    assert ff["racks"]["budget_w"] == 12_000 and ff["racks"]["nodes_per_rack"] == 12_000 // node_max_w == 3
    assert ff["racks"]["nodes_per_rack_basis"].startswith("default budget")
    body = {"slug": "tray-racks", "name": "x", "node_type": "gb200-nvl72-tray", "node_count": 36, "switch": "qm9700",
            "price_book": "usd-2026", "nodes_per_rack": 9}
    refused = reader_client.post("/api/plans/", body, format="json")
    assert refused.status_code == 400 and "fixes 18 nodes a rack" in str(refused.json()["nodes_per_rack"])
    zero = reader_client.post("/api/plans/", {**body, "node_type": "dgx-b200", "nodes_per_rack": 0}, format="json")
    assert zero.status_code == 400 and "nodes_per_rack" in zero.json()


def test_superpod_optics_a_module_at_each_nic_a_fibre_and_half_a_twin_port_leaf_module(catalog):
    """NDR as DGX SuperPOD cables it: a 400G module at each NIC, a fibre, a twin-port 2 x 400G module
    at the leaf serving two links; the bill counts them, and their datasheet power is the optics'
    power. A part without a figure leaves the engine to estimate it (and say so)."""
    from planner.adapters import cluster_document
    from planner.models import ClusterPlan, LinkPart
    from planner.services.plans import plan_bom
    from simcore import evaluate

    plan = ClusterPlan.objects.get(slug="dgx-h200-1024")
    plan.endpoint_cable, plan.transceiver, plan.fiber = (LinkPart.objects.get(slug=slug) for slug in (
        "ndr-sr4-transceiver-400g", "osfp-800g-2xsr4-transceiver", "mmf-fiber-cable"))
    assert plan.part_errors() == {}
    document = cluster_document(plan)
    optics = ("endpoint_link", "endpoint_cable_power_w", "transceiver_ports", "transceiver_power_w")
    assert tuple(document["fabric"][key] for key in optics) == ("optical", 8, 2, 15)
    result = evaluate({"cluster": document})
    fabric, nic_links = result["fabric"], result["fabric"]["endpoints"]
    assert fabric["endpoint_cables"] == nic_links == 1024
    assert fabric["fibers"] == fabric["switch_links"] + nic_links
    assert fabric["transceivers"] == (2 * fabric["switch_links"] + nic_links) / 2
    assert result["power"]["optics_w"] == pytest.approx(8 * nic_links + 15 * fabric["transceivers"])
    assert result["power"]["optics_basis"] == "the parts' figures"
    bill = {line["part"]: line["quantity"] for line in plan_bom(plan=plan, result=result)["lines"]}
    assert (bill["optical module at the NIC"], bill["optical transceiver"], bill["fibre"]) == (
        nic_links, fabric["transceivers"], fabric["fibers"])
    plan.endpoint_cable = plan.transceiver  # twin-port cages at the node too, as a DGX H100's
    assert plan.part_errors() == {}
    twin = evaluate({"cluster": cluster_document(plan)})
    assert twin["fabric"]["endpoint_cables"] == plan.node_count * 8 / 2 == nic_links / 2
    assert twin["power"]["optics_w"] == pytest.approx(15 * (nic_links / 2 + twin["fabric"]["transceivers"]))
    ff = cluster_document(ClusterPlan.objects.get(slug="ff2-pcie-2zone"))
    assert tuple(ff["fabric"][key] for key in optics) == ("cable", 0.2, 1, None)
    assert evaluate({"cluster": ff})["power"]["optics_basis"] == ("partly estimated: 8 W per 400 Gb/s of optics "
                                                                  "where a part has no figure")


def test_each_node_launches_at_its_cpus_measured_host_rate(catalog):
    from planner.adapters import node_document
    from planner.models import ComputeNodeType

    rates = {slug: node_document(ComputeNodeType.objects.get(slug=slug))["host_op_us"]
             for slug in ("gb200-nvl72-tray", "dgx-h100", "dgx-b200", "ff-pcie-a100")}
    # dgxc-benchmarking cpu_overhead on Grace, a DGX H100's and a DGX B200's Xeons; an EPYC has no measurement.
    assert rates == {"gb200-nvl72-tray": 14.55, "dgx-h100": 7.66, "dgx-b200": 7.65, "ff-pcie-a100": None}


def test_gemm_per_price_compares_nodes_of_different_gpu_counts_fairly(catalog, reader_client):
    """A GB200 tray holds 4 GPUs and a DGX B200 8: a node's GEMM over its price, so per GPU against
    each GPU's share of the price, never one GPU's GEMM over a whole node's price."""
    body = reader_client.get("/api/plans/compare/", {"ids": f"{HGX},{NVL72}"}).json()
    values = {m["key"]: m["values"] for m in body["metrics"]}
    per_gpu_price = [price / gpus for price, gpus in zip(values["node_price"], (8, 4))]
    assert per_gpu_price == pytest.approx([379273 / 8, 188889 / 4])
    assert values["gemm_per_node_price"] == pytest.approx(
        [gemm / price for gemm, price in zip(values["gemm_mean_tflops"], per_gpu_price)])


def test_every_preset_has_a_total_with_its_band_and_racks_that_fit_their_height(catalog, reader_client):
    """16 of 16 presets: a bill with a total, its band holding it, estimated lines marked; and no
    rack holding more U than it has, at the plan's own racks and over a grid of site rack limits."""
    import numpy as np

    from planner.adapters import scenario_document
    from planner.models import ClusterPlan

    presets = ClusterPlan.objects.filter(owner__isnull=True).select_related("node_type")
    assert presets.count() == 16
    for plan in presets:
        bom = reader_client.get(f"/api/plans/{plan.slug}/bom/").json()
        assert bom["unpriced"] == [] and bom["total_low"] <= bom["total"] <= bom["total_high"], plan.slug
        estimated = [line for line in bom["lines"] if line["confidence"] == "estimate"]
        assert (bom["total_low"] < bom["total_high"]) == any(
            line["extended_low"] < line["extended_high"] for line in estimated), plan.slug
        assert plan.node_type.rack_units, f"{plan.node_type.slug} has no height: the check would prove nothing"
        document = scenario_document(plan)
        own = simcore.evaluate(document)["racks"]
        assert own["units_used"] <= own["units"], plan.slug
        if document["cluster"]["rack"]["nodes_per_rack"] is None:  # a site's limit decides how many a rack
            document["cluster"]["rack"]["power_limit_w"] = [12_000.0, 40_000.0, 130_000.0, 1e6]
            racks = simcore.evaluate(document)["racks"]
            assert np.all(np.asarray(racks["units_used"]) <= racks["units"]), (plan.slug, racks["units_used"])
            assert np.any(np.asarray(racks["nodes_per_rack_basis"]) == "the rack's height"), plan.slug
