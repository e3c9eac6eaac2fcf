"""The validation suite: every published reference case the engine carries, against its criterion."""
import math

import pytest

from simcore.tools.references import CASES, KNOWN_MISSES, validate


def _expected(case):
    """A known miss (:data:`simcore.tools.references.KNOWN_MISSES`) is a strict expected failure: it
    fails the suite the day the engine meets it, so the list cannot go stale."""
    if case.key in KNOWN_MISSES:
        return pytest.param(case, id=case.key, marks=pytest.mark.xfail(strict=True, reason=KNOWN_MISSES[case.key]))
    return pytest.param(case, id=case.key)


@pytest.mark.parametrize("case", [_expected(c) for c in CASES])
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
    assert {"gemm-sxm-tf32", "hfreduce-16", "hfreduce-nvlink-1024", "nccl-1024", "vgg16-nccl-32",
            "gpt2-medium-nccl-128"} <= calibrated
    assert not {"gemm-pcie-tf32", "nccl-512", "vgg16-hfreduce-32", "gpt2-medium-hfreduce-16", "llama-13b-64",
                "sc21-t1-1.7b"} & calibrated


def test_a_window_around_one_published_value_is_a_weak_check_and_says_what_it_admits():
    """NCCL at 1,024 GPUs (FF Fig. 7a: 1.63 GB/s) passes a 1.6-4.8 window 37% off: the window is the
    curve's span, not the figure's, so the row is flagged; a publication's own range is not."""
    rows = {row["key"]: row for row in validate()[0]}
    nccl = rows["nccl-1024"]
    assert nccl["weak_check"] and nccl["passes"] and nccl["error"] > 0.3
    assert nccl["admits"] == pytest.approx([1.6 / 1.63 - 1, 4.8 / 1.63 - 1])
    assert not rows["cluster-power"]["weak_check"] and not rows["restart-10k-fast-restart"]["weak_check"]
    assert rows["ff-2zone-switches"]["admits"] == [0.0, 0.0] and not rows["ff-2zone-switches"]["weak_check"]
    assert {row["key"] for row in rows.values() if row["weak_check"]} == {
        f"{library}-{gpus}" for library in ("hfreduce", "nccl") for gpus in (16, 32, 64, 128, 256, 512, 1024, 1440)}


def test_every_published_run_evaluates_as_it_ran():
    """A planner must not refuse what ran in production: every training row (its layout, schedule and
    HBM as published) fits and gets a step time; an infeasible layout would predict NaN."""
    rows = [row for row in validate()[0] if row["model"].startswith("training")]
    assert len(rows) >= 73
    refused = [row["key"] for row in rows if not (math.isfinite(row["predicted"]) and row["predicted"] > 0)]
    assert refused == []


def test_the_cases_are_read_from_the_data_file_and_predict_from_their_scenarios(tmp_path):
    """The record is data: a case file of the same form, with one case changed, predicts from the
    changed scenario; a ratio divides by its denominator's output, and a case without a tolerance,
    or with a measure the engine does not know, is refused naming the field."""
    import yaml

    from simcore.errors import ScenarioError
    from simcore.tools.references import CASES_PATH, case_from, load_cases, predict, run_document

    data = yaml.safe_load(CASES_PATH.read_text())
    assert data["schema_version"] == 1 and len(data["cases"]) == len(CASES)
    entry = next(e for e in data["cases"] if e["key"] == "llama-13b-64")
    scenario = entry["predict"]["scenario"]
    half = {**entry, "predict": {**entry["predict"], "scenario": {
        **scenario, "workload": {**scenario["workload"], "global_batch": 2048}}}}
    path = tmp_path / "cases.yaml"
    path.write_text(yaml.safe_dump({"schema_version": 1, "parts": {}, "cases": [entry, half]}))
    _, (full_case, half_case) = load_cases(path)
    params = __import__("simcore").EngineParams()
    assert full_case.predict(params) == pytest.approx(64.1, rel=0.15)
    assert half_case.predict(params) == pytest.approx(full_case.predict(params) / 2, rel=0.05)
    fused = entry["predict"]["scenario"]
    ratio = {"measure": "ratio", "scenario": fused, "denominator": fused, "output": "training.step_time_s"}
    assert predict(ratio, params) == 1.0
    step_s = float(run_document(fused, params)["training"]["step_time_s"])
    assert predict({"scenario": fused, "output": "training.step_time_s", "divide_by": 4}, params) == step_s / 4
    with pytest.raises(ScenarioError) as refused:
        case_from({k: v for k, v in entry.items() if k != "rel_tolerance"})
    assert refused.value.field == "cases.llama-13b-64.rel_tolerance"
    with pytest.raises(ScenarioError) as refused:
        case_from({**entry, "predict": {**entry["predict"], "measure": "median"}})
    assert refused.value.field == "cases.llama-13b-64.predict.measure"
    path.write_text(yaml.safe_dump({"schema_version": 2, "parts": {}, "cases": []}))
    with pytest.raises(ScenarioError, match="this engine reads 1"):
        load_cases(path)
