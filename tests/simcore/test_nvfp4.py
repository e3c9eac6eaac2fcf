"""NVFP4 GEMMs (NVIDIA's recipe): the FP4 peak at the family's measured share, the layers the recipe
keeps in BF16 at BF16's, the cast's bytes; refused, naming the field, where a part has no FP4; and
the new families' constants listed with their sources."""
import copy

import pytest

from simcore import evaluate
from simcore.errors import ScenarioError
from simcore.formulas import transformer
from simcore.formulas.devices import FAMILIES, constant_rows
from simcore.stages.job import nvfp4_gemm_fraction
from simcore.tools.references import DGX_B200_NODE, DGXC_FABRIC, DGXC_LLAMA_70B

B200_FP4 = {**DGX_B200_NODE, "accelerator": {**DGX_B200_NODE["accelerator"], "peak_fp4_tflops": 9000}}


def scenario(precision: str, node=B200_FP4, **workload) -> dict:
    return {"cluster": {"node_count": 8, "node": copy.deepcopy(node), "fabric": DGXC_FABRIC,
                        "prices": {"currency": "REL"}},
            "workload": {**DGXC_LLAMA_70B, "gpus": 64, "global_batch": 128, "precision": precision,
                         "fp8_recipe": "mxfp8", **workload}}


def step_s(document: dict) -> float:
    return float(evaluate(document)["training"]["step_time_s"])


def test_the_recipes_bf16_layers_take_the_share_of_a_flop_at_bf16s_rate():
    blackwell = FAMILIES["blackwell"]
    ratio = 9000 / 2250  # a B200's FP4 peak over its BF16 peak
    assert nvfp4_gemm_fraction(blackwell, ratio, 0.0) == pytest.approx(blackwell.fp4_gemm_fraction)
    # All in BF16: the NVFP4 peak's share that is BF16's achieved rate.
    assert nvfp4_gemm_fraction(blackwell, ratio, 1.0) == pytest.approx(blackwell.gemm_fraction / ratio)
    # A quarter in BF16: the time of a FLOP is a quarter at BF16's achieved rate, three quarters at FP4's.
    fp4_rate, bf16_rate = 9000 * blackwell.fp4_gemm_fraction, 2250 * blackwell.gemm_fraction
    assert 9000 * nvfp4_gemm_fraction(blackwell, ratio, 0.25) == pytest.approx(1 / (0.75 / fp4_rate + 0.25 / bf16_rate))


def test_the_nvfp4_cast_reads_for_the_amax_then_writes_two_half_byte_copies_with_their_scales():
    assert transformer.NVFP4_OPERAND_BYTES == 0.5 + 1 / 16
    assert transformer.nvfp4_cast_bytes() == pytest.approx(2 + 2 + 2 * (0.5 + 1 / 16))


def test_a_step_in_nvfp4_beats_fp8_and_bf16_and_slows_with_each_layer_kept_in_bf16():
    bf16, fp8, fp4 = (step_s(scenario(p)) for p in ("bf16", "fp8", "nvfp4"))
    assert fp4 < fp8 < bf16
    kept = [step_s(scenario("nvfp4", nvfp4_bf16_layers=n)) for n in (0, 4, 20, 80)]
    assert kept == sorted(kept) and kept[0] == fp4 and kept[-1] < bf16 * 1.05
    detail = evaluate(scenario("nvfp4"))["training"]["compute_detail_s"]
    assert detail["fp8_quantize"] > 0  # NVFP4's casts are the step's quantize time
    assert evaluate(scenario("nvfp4", nvfp4_bf16_layers=80))["training"]["compute_detail_s"]["fp8_quantize"] == 0


@pytest.mark.parametrize("node", [DGX_B200_NODE,  # a B200 document that gives no FP4 peak
                                  {**DGX_B200_NODE, "accelerator": {**DGX_B200_NODE["accelerator"],
                                                                    "family": "cdna4", "peak_fp4_tflops": 9000}}])
def test_nvfp4_is_refused_naming_the_precision_without_an_fp4_peak_or_a_measured_share(node):
    with pytest.raises(ScenarioError) as refused:
        evaluate(scenario("nvfp4", node=node))
    assert refused.value.field == "workload.precision"
    assert "NVFP4 needs FP4 tensor cores" in refused.value.reason or "FP4 is MXFP4 (precision mxfp4)" in \
        refused.value.reason


def test_every_new_familys_constants_are_listed_with_their_sources():
    rows = constant_rows(__import__("simcore").fitted.values())
    by_family = {family: {row["constant"]: row for row in rows if row["family"] == family}
                 for family in ("rubin", "cdna3", "cdna4", "blackwell")}
    assert by_family["blackwell"]["fp4_gemm_fraction"]["source"].startswith("deepseek-ai/DeepGEMM PR #348")
    rubin = by_family["rubin"]  # nothing of Rubin's measured: every constant an estimate saying whose
    assert rubin and all(row["confidence"] == "estimate" for name, row in rubin.items()
                         if not name.startswith("attention_rates"))
    # CDNA 4's GEMM shares are measured on an MI355X, its sustained clock fitted; the rest CDNA 3's, estimates.
    cdna4 = by_family["cdna4"]
    assert {name for name, row in cdna4.items() if row["confidence"] == "measured"} == {
        "gemm_fraction", "fp8_gemm_fraction", "fp4_gemm_fraction"}
    assert cdna4["full_clock_power_w"]["confidence"] == "fitted"
    assert cdna4["hbm_fraction"]["confidence"] == "estimate" and "CDNA 3" in cdna4["hbm_fraction"]["source"]
    assert "Blackwell's" in by_family["rubin"]["gemm_fraction"]["source"]
    assert by_family["cdna3"]["fp8_gemm_fraction"]["confidence"] == "measured"
    assert by_family["cdna3"]["scaleup_fraction"]["value"] == pytest.approx(317 / 448)
    assert FAMILIES["cdna4"].fp4_gemm_fraction == pytest.approx(5255 / 10066.3, rel=1e-4)
    assert FAMILIES["cdna4"].vendor == "AMD"
