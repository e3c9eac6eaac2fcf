"""AMD CDNA 4: MXFP4 as a GEMM precision, and each part's clock under its power cap from the fitted
full-clock power, with the GEMM shares measured on an MI355X at its own 1,400 W."""
import copy

import pytest

from simcore import ScenarioError, evaluate, fitted
from simcore.formulas.compute import sustained_clock_factor
from simcore.formulas.devices import FAMILIES, with_fitted
from simcore.formulas.transformer import MXFP4_OPERAND_BYTES, mxfp4_cast_bytes
from simcore.tools.references import LLAMA3_NODE, PARTS, scenario

FULL_CLOCK_W = fitted.values()["cdna4_full_clock_power_w"]


def test_the_shares_measured_on_an_mi355x_are_its_own_rates_and_a_lower_cap_slows_the_mi350x():
    family = with_fitted(FAMILIES["cdna4"], fitted.values())
    assert family.full_clock_power_w == FULL_CLOCK_W and 1000 <= FULL_CLOCK_W <= 4075
    at_1400 = float(sustained_clock_factor(1400.0, FULL_CLOCK_W))
    assert family.gemm_fraction == pytest.approx(FAMILIES["cdna4"].gemm_fraction / at_1400)
    assert family.gemm_fraction <= 0.9875 + 1e-9  # within the matrix cores' measured busy share at full clock
    computes = {}
    for name in ("mi355x-node", "mi350x-node"):
        computes[name] = evaluate({"cluster": {"node_count": 1, "node": copy.deepcopy(PARTS[name]),
                                               "fabric": PARTS["dgxc-fabric"], "prices": {"currency": "REL"}}})[
            "compute"]
    # The MI355X at 1,400 W reaches what was measured on it (Bekman's 1,565 TFLOPS BF16, AMD's 5,255 MXFP4).
    assert computes["mi355x-node"]["gemm_fp16_tflops"] == pytest.approx(1565.0, rel=1e-3)
    assert computes["mi355x-node"]["gemm_fp4_tflops"] == pytest.approx(5255.0, rel=1e-3)
    # The MI350X (2.2 GHz, 1,000 W) sustains less of its clock than the MI355X of its own.
    assert computes["mi350x-node"]["sustained_clock_factor"] < computes["mi355x-node"]["sustained_clock_factor"]
    ratio = computes["mi355x-node"]["gemm_fp16_tflops"] / computes["mi350x-node"]["gemm_fp16_tflops"]
    assert ratio > 2516.6 / 2306.9 + 0.05  # more than the peaks' ratio alone


def test_mxfp4_runs_on_the_fp4_peak_at_its_measured_share_and_casts_per_32_element_block():
    assert MXFP4_OPERAND_BYTES == 0.5 + 1 / 32 and mxfp4_cast_bytes() == 2 + 2 * (0.5 + 1 / 32)
    document = scenario("mlperf-v6.0-mi350x-over-mi355x-llama2-70b-lora")
    mxfp4 = evaluate(document)["training"]
    fp8 = evaluate({**document, "workload": {**document["workload"], "precision": "fp8"}})["training"]
    assert mxfp4["step_time_s"] < fp8["step_time_s"] and mxfp4["compute_detail_s"]["fp8_quantize"] > 0
    # NVFP4 is NVIDIA's format: refused on CDNA 4 naming the precision to use; MXFP4 where no FP4 peak is.
    with pytest.raises(ScenarioError, match=r"family.s FP4 is MXFP4 \(precision mxfp4\)") as refused:
        evaluate({**document, "workload": {**document["workload"], "precision": "nvfp4"}})
    assert refused.value.field == "workload.precision"
    hopper = {"cluster": {"node_count": 1, "node": LLAMA3_NODE, "fabric": PARTS["dgxc-fabric"],
                          "prices": {"currency": "REL"}}, "workload": {**document["workload"], "precision": "mxfp4"}}
    with pytest.raises(ScenarioError, match="MXFP4 needs FP4 matrix cores"):
        evaluate(hopper)
