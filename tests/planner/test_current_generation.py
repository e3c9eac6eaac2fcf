"""The generation bought in late 2026 through the API: GB300 NVL72, HGX B300, an MI355X cluster and
Vera Rubin NVL144 (announced) evaluate as any build does, NVFP4 runs only where the part has FP4,
and announced parts say so wherever their figures are shown."""
import math

import pytest

from simcore.formulas.devices import FAMILIES

BUILDS = ("gb300-nvl72-1152", "dgx-b300-1152", "mi355x-1152", "vera-rubin-nvl144-1152")
DENSE, NVFP4 = "llama3-70b-class-1152", "llama3-70b-class-1152-nvfp4"


def evaluate(client, plan, workload):
    return client.post(f"/api/plans/{plan}/evaluate/", {"workload": workload}, format="json")


@pytest.mark.parametrize("slug", BUILDS)
def test_each_build_of_the_generation_has_power_racks_a_priced_band_and_a_step_band(catalog, reader_client, slug):
    response = evaluate(reader_client, slug, DENSE)
    assert response.status_code == 200, response.json()
    body = response.json()
    result = body["result"]
    assert result["power"]["compute_nodes_w"] > 0 and result["racks"]["count"] > 0
    assert result["racks"]["units_used"] <= result["racks"]["units"]
    cost = result["cost"]
    assert cost["unpriced"] == [] and cost["capex_low"] < cost["capex_total"] < cost["capex_high"]
    assert body["bands"]["cost.capex_total"]["group"] == "price book"
    assert result["training"]["feasible"] and result["training"]["step_time_s"] > 0
    step = body["bands"]["training.step_time_s"]
    assert step["value"] == result["training"]["step_time_s"] and step["actual_low"] < step["actual_high"]


def test_racks_hold_what_each_builds_power_and_height_allow(catalog, reader_client):
    results = {slug: evaluate(reader_client, slug, DENSE).json()["result"] for slug in BUILDS}
    racks = {slug: result["racks"] for slug, result in results.items()}
    # NVL72-class racks: 18 trays and their switch trays and shelves, 16 racks for 288 trays.
    assert racks["gb300-nvl72-1152"]["gpus_per_rack"] == racks["vera-rubin-nvl144-1152"]["gpus_per_rack"] == 72
    assert racks["gb300-nvl72-1152"]["count"] == racks["vera-rubin-nvl144-1152"]["count"] == 16
    # Four DGX B300 at their 19.7 kW peak under an 80 kW budget (NVIDIA's SuperPOD places four).
    assert racks["dgx-b300-1152"]["nodes_per_rack"] == 80_000 // 19_700 == 4
    # The MI355X servers at their parts' peak (8 x 1,400 W GPUs and the rest: no vendor maximum) under 130 kW,
    # 4U each: nine, 36U of the 42.
    power, mi355x = results["mi355x-1152"]["power"], racks["mi355x-1152"]
    assert power["node_max_basis"] == "parts at nameplate" and 8 * 1400 < power["node_max_w"] < 130_000 / 9
    assert mi355x["nodes_per_rack"] == 9 and mi355x["units_used"] == 36
    assert mi355x["count"] == math.ceil(144 / 9)


def test_fp4_gemm_rates_follow_the_vendor_peaks_and_the_familys_measured_share(catalog, reader_client):
    share = FAMILIES["blackwell"].fp4_gemm_fraction
    assert share == pytest.approx(5702 / 9000)
    for slug, peak in (("gb300-nvl72-1152", 15_000), ("dgx-b300-1152", 13_500)):
        compute = evaluate(reader_client, slug, DENSE).json()["result"]["compute"]
        assert compute["gemm_fp4_tflops"] == pytest.approx(peak * share * compute["sustained_clock_factor"])
    # The MI355X's FP4 is MXFP4 at its measured share (AMD's Gluon GEMM tutorial: 5,255 TFLOPS on an MI355X).
    mi355x = evaluate(reader_client, "mi355x-1152", DENSE).json()["result"]["compute"]["gemm_fp4_tflops"]
    assert mi355x == pytest.approx(5255, rel=0.01)


def test_nvfp4_trains_faster_where_the_part_has_fp4_and_is_refused_naming_the_field_where_not(
        catalog, reader_client):
    for slug in ("gb300-nvl72-1152", "hgx-b200-1152"):
        dense = evaluate(reader_client, slug, DENSE).json()["result"]["training"]["step_time_s"]
        fp4 = evaluate(reader_client, slug, NVFP4).json()["result"]["training"]["step_time_s"]
        assert fp4 < 0.8 * dense, (slug, fp4, dense)
    for slug, why in (("mi355x-1152", "FP4 is MXFP4"), ("dgx-h200-1024", "NVFP4 needs FP4 tensor cores")):
        refused = evaluate(reader_client, slug, NVFP4)  # MXFP4 is not NVFP4; Hopper has no FP4 at all
        assert refused.status_code == 400, refused.json()
        assert "workload.precision" in str(refused.json()) and why in str(refused.json())


def test_announced_parts_are_named_on_the_evaluation_the_comparison_and_the_site_ranking(catalog, reader_client):
    rubin = evaluate(reader_client, "vera-rubin-nvl144-1152", DENSE).json()["announced"]
    assert [(part["part"], part["slug"]) for part in rubin] == [
        ("compute node", "vera-rubin-nvl144-tray"), ("accelerator", "rubin"), ("CPU", "nvidia-vera"),
        ("NIC", "cx9-800g")]
    assert all("2025" in part["source"] or "2026" in part["source"] for part in rubin)
    assert evaluate(reader_client, "gb300-nvl72-1152", DENSE).json()["announced"] == []
    compared = reader_client.get("/api/plans/compare/", {"ids": "gb300-nvl72-1152,vera-rubin-nvl144-1152",
                                                        "workload": DENSE}).json()
    assert list(compared["announced"]) == ["vera-rubin-nvl144-1152"]
