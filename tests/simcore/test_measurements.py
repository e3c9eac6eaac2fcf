"""Reading nccl-tests output and GEMM CSVs, and predicting the same runs (simcore.tools.measurements)."""
import re
from pathlib import Path

import pytest

from simcore import ScenarioError, evaluate
from simcore.tools import measurements as m
from simcore.tools.references import DGX_A100_NODE, LLAMA3_NODE

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


def test_nvfp4_gemm_rows_fit_the_fp4_share_and_are_refused_on_a_part_without_fp4():
    from simcore.tools.references import DGX_B200_NODE

    b200 = {**DGX_B200_NODE, "accelerator": {**DGX_B200_NODE["accelerator"], "peak_fp4_tflops": 9000}}
    result = m.compare_gemm(b200, m.parse_gemm_csv("m,n,k,dtype,tflops\n8192,8192,8192,nvfp4,5702\n"))
    fit = result["fitted"]["fp4_gemm_fraction"]
    assert fit["rows"] == 1 and fit["value"] == pytest.approx(fit["family_value"] * 5702 / result["rows"][0][
        "predicted_tflops"])
    with pytest.raises(ScenarioError, match="nvfp4 rows: the accelerator has no nvfp4 peak"):
        m.compare_gemm(DGX_B200_NODE, m.parse_gemm_csv("m,n,k,dtype,tflops\n8192,8192,8192,nvfp4,5702\n"))


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
    """One list: the scenario's calibration fields; the fits (GEMM CSVs, nccl-tests, a trace's GEMM and HBM
    shares and its attention scale) and the engine's override take them from it. Each is a family
    constant with its source, but the attention scale: 1 on the family's measured attention rates,
    which validate lists as ``attention_rates``."""
    from simcore.document import SPEC
    from simcore.formulas.devices import CONSTANT_NAMES
    from simcore.stages.cluster import CALIBRATED
    from simcore.tools.trace import GEMM_CONSTANT

    assert CALIBRATED == tuple(SPEC["cluster"]["calibration"])
    assert {*m.FIT_BY_DTYPE.values(), *GEMM_CONSTANT.values(), "scaleup_fraction", "hbm_fraction",
            "attention_scale"} == set(CALIBRATED) <= {*CONSTANT_NAMES, "attention_scale"}
    table = m.parse_gemm_csv("m,n,k,dtype,tflops\n8192,8192,8192,bf16,280\n")
    assert set(m.compare_gemm(DGX_A100_NODE, table)["fitted"]) == {"gemm_fraction"}


def _variant(text, *, rank=None, line=None, drop=()):
    """The sample run rewritten as another release or launcher would print it."""
    out = []
    for original in text.splitlines():
        if any(word in original for word in drop):
            continue
        changed = rank(original) if rank and original.startswith("#  Rank") else original
        out.append(line(changed) if line else changed)
    return "\n".join(out)


def _json_report(run, binary="/opt/nccl-tests/build/all_reduce_perf", cputime=False, summary=True):
    """The run as nccl-tests' -J report (util.cu, JSON file version 2)."""
    import json

    report = {"version": 2, "start_time": "2026-11-30 10:42:07", "args": [binary, "-b", "8", "-e", "8G", "-f", "2"],
              "env": [], "nccl_version": 21805,
              "config": {"nthreads": 1, "ngpus": 1, "minimum_bytes": 8, "maximum_bytes": 8589934592, "step_factor": 2,
                         "devices": [{"rank": r, "group": 0, "pid": 41230 + r, "hostname": "dgx-a100-01", "device": r,
                                      "device_hex": "0000:07:00", "device_info": "NVIDIA A100-SXM4-80GB"}
                                     for r in range(run.ranks)]},
              "results": [{"size": int(s), "count": int(s) // 4, "type": "float", "redop": "sum", "root": "    -1",
                           "out_of_place": {"cpu_time" if cputime else "time": t, "alg_bw": a, "bus_bw": b,
                                            "nwrong": 0.0},
                           "in_place": {"time": t, "alg_bw": a, "bus_bw": b, "nwrong": 0.0},
                           "actual_iterations": 20, "experiment_name": ""}
                          for s, t, a, b in zip(run.size_bytes, run.time_us, run.algbw_gbyte_s, run.busbw_gbyte_s)]}
    if summary:
        report |= {"out_of_bounds": {"count": 0, "okay": "true"},
                   "average_bus_bandwidth": {"bandwidth": 90.5585, "okay": "unchecked"}, "errors": []}
    return json.dumps(report)


def _per_iteration(text):
    """A line as a per-iteration run with timestamps prints it: i_min, i_max, i_p99 and i_cv% after
    each #wrong, a timestamp at the end."""
    if "#wrong" in text:
        return text.replace("#wrong", "#wrong   i_min   i_max   i_p99   i_cv%") + "  timestamp"
    if not text.strip()[:1].isdigit():
        return text
    tokens = text.split()
    per_iter = ["21.10", "25.30", "25.00", "3.10"]
    return "  ".join(tokens[:9] + per_iter + tokens[9:] + per_iter + ["2026-11-30 10:42:07"])


CORPUS = {
    "before 2.13.4: no Group, no collective line": _variant(
        EIGHT, rank=lambda text: re.sub(r"Group\s+\d+\s+", "", text), drop=("Collective test starting",)),
    "-C 1: cputime columns": _variant(EIGHT, line=lambda text: text.replace(" time ", " cputime ")),
    "srun -l": _variant(EIGHT, line=lambda text: f"0: {text}"),
    "mpirun --tag-output": _variant(EIGHT, line=lambda text: f"[1,0]<stdout>:{text}"),
    "per-iteration and timestamp columns": _variant(EIGHT, line=_per_iteration),
}


@pytest.mark.parametrize("name", list(CORPUS))
def test_every_output_format_reads_as_the_same_run(name):
    plain = m.parse_nccl_tests(EIGHT)
    run = m.parse_nccl_tests(CORPUS[name])
    assert (run.ranks, run.hosts, run.devices) == (8, ("dgx-a100-01",), ("NVIDIA A100-SXM4-80GB",))
    assert run.size_bytes.tolist() == plain.size_bytes.tolist() and len(run.size_bytes) == 31
    assert run.time_us.tolist() == plain.time_us.tolist() and run.busbw_gbyte_s.tolist() == plain.busbw_gbyte_s.tolist()
    assert run.collective == (None if name.startswith("before 2.13.4") else "all_reduce")


@pytest.mark.parametrize("cputime", [False, True])
def test_the_json_report_reads_as_the_text_does_and_names_its_collective_from_the_binary(cputime):
    plain = m.parse_nccl_tests(EIGHT)
    run = m.parse_nccl_tests(_json_report(plain, "/opt/nccl-tests/build/all_gather_perf", cputime=cputime))
    assert run.collective == "all_gather" and (run.ranks, run.hosts) == (8, ("dgx-a100-01",))
    assert run.busbw_gbyte_s.tolist() == plain.busbw_gbyte_s.tolist()
    assert run.time_us.tolist() == plain.time_us.tolist()


def test_the_collective_comes_from_a_command_line_in_the_file():
    old = CORPUS["before 2.13.4: no Group, no collective line"]
    launched = "+ srun -N 1 --ntasks-per-node 8 /opt/nccl-tests/build/reduce_scatter_perf -b 8 -e 8G -f 2\n" + old
    assert m.parse_nccl_tests(launched).collective == "reduce_scatter"


def test_a_truncated_run_is_reported_as_such():
    lines = EIGHT.splitlines()
    cut = "\n".join(lines[:next(i for i, text in enumerate(lines) if text.strip().startswith("8192 "))])
    with pytest.raises(ScenarioError, match=r"truncated: 10 of the 31 message sizes the run asked for \(the last "
                                            r"read is 4,096 B\)"):
        m.parse_nccl_tests(cut)
    no_summary = "\n".join(text for text in lines if not text.startswith(("# Avg bus", "# Out of bounds")))
    with pytest.raises(ScenarioError, match="truncated: no 'Avg bus bandwidth' line"):
        m.parse_nccl_tests(no_summary)
    plain = m.parse_nccl_tests(EIGHT)
    with pytest.raises(ScenarioError, match="truncated or not JSON"):
        m.parse_nccl_tests(_json_report(plain)[:5000])
    with pytest.raises(ScenarioError, match="truncated: no 'Avg bus bandwidth' line"):
        m.parse_nccl_tests(_json_report(plain, summary=False))


def test_a_run_on_a_smaller_card_is_read_up_to_the_max_bytes_it_reduced_to():
    """nccl-tests lowers maxBytes to what the card's memory holds and says so; the run is complete
    at that size, and cut short below it is still truncated."""
    lines = EIGHT.splitlines()
    last = next(i for i, text in enumerate(lines) if text.strip().startswith("67108864 "))
    footer = [text for text in lines if text.startswith(("# Out of bounds", "# Avg bus"))]
    reduced = "\n".join(lines[:last + 1] + ["#", "# Reducing maxBytes to 67108864 due to memory limitation"] + footer)
    run = m.parse_nccl_tests(reduced)
    assert run.size_bytes[-1] == 67108864 and len(run.size_bytes) == 24
    with pytest.raises(ScenarioError, match=r"truncated: 23 of the 24 message sizes"):
        m.parse_nccl_tests("\n".join(lines[:last] + ["# Reducing maxBytes to 67108864 due to memory limitation"]
                                     + footer))


def test_a_run_whose_own_check_failed_is_no_measurement():
    """A row counting wrong values (the collective corrupted its data) and a failed out-of-bounds
    check are refused naming their line; N/A (no check run) reads."""
    lines = EIGHT.splitlines()
    row = next(i for i, text in enumerate(lines) if text.strip().startswith("1048576 "))
    corrupt = lines[:row] + [lines[row][:lines[row].rindex(" 0")] + " 3"] + lines[row + 1:]
    with pytest.raises(ScenarioError, match=rf"line {row + 1}: 3 wrong values in the in-place result of 1048576 B"):
        m.parse_nccl_tests("\n".join(corrupt))
    failed = [text.replace("0 OK", "2 FAILED") if text.startswith("# Out of bounds") else text for text in lines]
    with pytest.raises(ScenarioError, match=r"the run's own check failed \(Out of bounds values : 2 FAILED\)"):
        m.parse_nccl_tests("\n".join(failed))
    unchecked = [text.replace("      0 ", "    N/A ").replace("      0", "    N/A") if text.strip()[:1].isdigit()
                 else text for text in lines]
    assert len(m.parse_nccl_tests("\n".join(unchecked)).size_bytes) == len(m.parse_nccl_tests(EIGHT).size_bytes)


def _all_reduce_run(rows_us: dict[int, float]) -> m.NcclRun:
    """An 8-rank, one-host all_reduce_perf run of the given out-of-place times (the DGX A100 file's
    header and devices)."""
    header = [line for line in EIGHT.split("#        (B)")[0].splitlines() if "minBytes" not in line]
    rows = "".join(f"{size:12d} {size // 4:13d}     float     sum      -1 {us:8.2f}    0.00    0.00      0 {us:8.2f}"
                   "    0.00    0.00      0\n" for size, us in rows_us.items())
    columns = ("#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)"
               "  (GB/s)\n")
    return m.parse_nccl_tests("\n".join(header) + "\n" + columns + rows + "# Avg bus bandwidth    : 1.0\n")


def _predicted_us(comparison: dict) -> list[float]:
    return [row["size_bytes"] * 2 * 7 / 8 / row["predicted_busbw_gbyte_s"] / 1e3 for row in comparison["rows"]]


def test_small_messages_on_nvlink_take_nccls_low_latency_protocol():
    """Built from NCCL's tuner constants (src/graph/tuning.cc): an 8-rank ring in the LL protocol
    starts in 6.6 us and takes 0.6 us a step at half the bandwidth, so an 8-byte all-reduce on 8
    NVLink GPUs takes 6.6 + 14 x 0.6 = 15.0 us (the Simple protocol's measured 3.33 us steps gave
    46.6); from a few megabytes on, Simple at the full bandwidth is faster and unchanged. Checked on
    published runs not used to build it: 8 x H20 (deepseek-ai/DeepEP issue 303, the H100's NVLink):
    12.49 / 14.50 / 16.26 / 16.69 us at 8 B / 64 B / 512 B / 4 KiB, each within 20% by the comparison's
    own error (on bus bandwidth, as the page shows it; the Simple model was 64-73% slow)."""
    a100 = m.compare_nccl(DGX_A100_NODE, _all_reduce_run({8: 20.0, 256 * 2**20: 2000.0}), "all_reduce")
    small, large = _predicted_us(a100)
    assert small == pytest.approx(15.0, rel=1e-3)
    assert large == pytest.approx(14 * 3.33 + 2 * 7 / 8 * 256 * 2**20 / 231.6e3, rel=1e-4)  # Simple at 231.6 GB/s
    h20 = {8: 12.49, 64: 14.50, 512: 16.26, 4096: 16.69}
    checked = m.compare_nccl(LLAMA3_NODE, _all_reduce_run(h20), "all_reduce")
    assert checked["link"] == "scale-up"
    assert [round(row["error_pct"]) for row in checked["rows"]] == [-17, -3, 8, 11]
    assert all(abs(row["error_pct"]) <= 20 for row in checked["rows"])
