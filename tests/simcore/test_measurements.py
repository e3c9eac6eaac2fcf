"""Reading nccl-tests output and GEMM CSVs, and predicting the same runs (simcore.tools.measurements)."""
from pathlib import Path

import pytest

from simcore import ScenarioError, evaluate
from simcore.tools import measurements as m
from simcore.tools.references import DGX_A100_NODE

DATA = Path(__file__).resolve().parent.parent / "data"
EIGHT = (DATA / "nccl_all_reduce_dgx_a100_8gpu.txt").read_text()
TWO_NODES = (DATA / "nccl_all_reduce_dgx_a100_2node.txt").read_text()


def _rows(text):
    return [line for line in text.splitlines() if line.strip()[:1].isdigit()]


def test_the_columns_come_from_the_header_so_extra_or_missing_ones_do_not_shift_them():
    plain = m.parse_nccl_tests(EIGHT)
    stamped = "\n".join(f"{line}  2026-11-30 10:42:07" if line.strip()[:1].isdigit() else line
                        for line in EIGHT.splitlines())
    no_redop = "\n".join(
        line.replace(" redop    root", "") if "#wrong" in line else
        (" ".join(line.split()[:3] + line.split()[5:]) if line.strip()[:1].isdigit() else line)
        for line in EIGHT.splitlines())
    for text in (stamped, no_redop):
        run = m.parse_nccl_tests(text)
        assert run.busbw_gbyte_s.tolist() == plain.busbw_gbyte_s.tolist()
        assert run.time_us.tolist() == plain.time_us.tolist()
    assert (plain.size_bytes[-1], plain.time_us[-1], plain.algbw_gbyte_s[-1], plain.busbw_gbyte_s[-1]) == (
        8589934592, 63913.83, 134.40, 235.20)  # the out-of-place columns, not the in-place ones


def test_a_zero_time_or_a_row_before_the_header_names_its_line():
    first = _rows(EIGHT)[0]
    zero = EIGHT.replace(first, first.replace(first.split()[5], "0.00", 1), 1)
    with pytest.raises(ScenarioError, match=r"line \d+: time 0.00 us must be positive"):
        m.parse_nccl_tests(zero)
    headless = "\n".join(line for line in EIGHT.splitlines() if "#wrong" not in line)
    with pytest.raises(ScenarioError, match="before the '#  size"):
        m.parse_nccl_tests(headless)


def test_a_run_on_part_of_each_node_uses_that_part_of_its_nics():
    whole = m.compare_nccl(DGX_A100_NODE, m.parse_nccl_tests(TWO_NODES), "all_reduce")
    half_lines = [line for line in TWO_NODES.splitlines()
                  if not (line.startswith("#  Rank") and int(line.split()[2]) % 8 >= 4)]
    half = m.compare_nccl(DGX_A100_NODE, m.parse_nccl_tests("\n".join(half_lines)), "all_reduce")
    assert whole["link"] == half["link"] == "network" and (whole["hosts"], half["ranks"]) == (2, 8)
    # 8 x 200 Gb/s HDR per DGX-A100: 200 GB/s of ring bus bandwidth across nodes, 100 with four GPUs' NICs.
    assert whole["rows"][-1]["predicted_busbw_gbyte_s"] == pytest.approx(200, rel=0.01)
    assert half["rows"][-1]["predicted_busbw_gbyte_s"] == pytest.approx(100, rel=0.01)


def test_a_gemm_fit_uses_the_compute_bound_16_bit_rows_and_is_the_median_ratio():
    table = m.parse_gemm_csv("m,n,k,dtype,tflops\n8192,8192,8192,bf16,236.2\n16384,16384,16384,fp16,249.4\n"
                             "8192,8192,8192,tf32,120\n")
    result = m.compare_gemm(DGX_A100_NODE, table)
    predicted = [row["predicted_tflops"] for row in result["rows"]]
    ratio = sorted([236.2 / predicted[0], 249.4 / predicted[1]])
    fit = result["fitted"]["gemm_fraction"]
    assert fit["rows"] == 2 and fit["value"] == pytest.approx(fit["family_value"] * sum(ratio) / 2)
    assert "fp8_gemm_fraction" not in result["fitted"]


def test_the_collective_report_the_training_and_the_nccl_tests_comparison_see_one_scale_up_bandwidth():
    # Azure ND_A100_v4's 231.6 GB/s bus bandwidth on 8 x A100 is the Ampere family's scale-up share.
    cluster = {"node_count": 1, "node": DGX_A100_NODE, "fabric": {"switch_radix": 40, "switch_gbit_s": 200}}
    report = evaluate({"cluster": cluster})["collectives"]["nccl"]
    assert report["bound"] == "ring: scale-up link"
    assert report["bounds_gbyte_s"]["ring: scale-up link"] == pytest.approx(231.6)
    uploaded = m.compare_nccl(DGX_A100_NODE, m.parse_nccl_tests(EIGHT), "all_reduce")
    assert uploaded["rows"][-1]["predicted_busbw_gbyte_s"] == pytest.approx(231.6, rel=0.01)
    # A calibrated share moves the report as it moves the training's TP groups.
    calibrated = {**cluster, "calibration": {"scaleup_fraction": 0.5}}
    halved = evaluate({"cluster": calibrated})["collectives"]["nccl"]["bounds_gbyte_s"]["ring: scale-up link"]
    assert halved == pytest.approx(150.0)
    tp8 = {"kind": "transformer", "layers": 4, "hidden": 8192, "heads": 64, "vocab": 32000, "seq_len": 8192,
           "global_batch": 4, "micro_batch": 4, "precision": "bf16", "tp": 8, "gpus": 8}
    tp_s = [evaluate({"cluster": c, "workload": tp8})["training"]["step_parts_s"]["tp_traffic"]
            for c in (cluster, calibrated)]
    assert tp_s[1] / tp_s[0] == pytest.approx(231.6 / 150.0, rel=0.01)


def test_every_constant_a_measurement_fits_is_one_the_scenario_can_override():
    """One list: the scenario's calibration fields; the fits and the engine's override take them from it."""
    from simcore.document import SPEC
    from simcore.formulas.devices import CONSTANT_NAMES
    from simcore.stages.cluster import CALIBRATED

    assert CALIBRATED == tuple(SPEC["cluster"]["calibration"])
    assert {*m.FIT_BY_DTYPE.values(), "scaleup_fraction"} == set(CALIBRATED) <= set(CONSTANT_NAMES)
    table = m.parse_gemm_csv("m,n,k,dtype,tflops\n8192,8192,8192,bf16,280\n")
    assert set(m.compare_gemm(DGX_A100_NODE, table)["fitted"]) == {"gemm_fraction"}
