"""The validation suite: every published reference case the engine carries, against its criterion."""
import pytest

from simcore.references import CASES, validate


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.key)
def test_reference_case_meets_its_criterion(case):
    predicted = case.predict(__import__("simcore").EngineParams())
    assert case.passes(predicted), f"{case.key}: predicted {predicted:.4g}, published {case.published}"


def test_validation_report_lists_every_case_with_its_error():
    rows, summary = validate()
    assert len(rows) == len(CASES)
    assert {row["key"] for row in rows} == {case.key for case in CASES}
    for row in rows:
        assert row["error"] == pytest.approx(row["predicted"] / row["published"] - 1)
        assert row["source"]
    assert sum(entry["cases"] for entry in summary.values()) == len(CASES)
    assert summary["topology"]["max_abs_error"] == 0.0


def test_calibration_points_are_marked():
    calibrated = {c.key for c in CASES if c.calibration}
    assert {"gemm-sxm-tf32", "hfreduce-16", "hfreduce-nvlink-1024", "nccl-1024", "vgg16-hfreduce-32",
            "gpt2-medium-hfreduce-16", "llama-13b-64"} <= calibrated
    assert not {"gemm-pcie-tf32", "nccl-512", "vgg16-nccl-512", "llama-13b-512"} & calibrated
