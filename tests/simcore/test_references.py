"""The validation suite: every published reference case the engine carries, against its criterion."""
import math

import pytest

from simcore.tools.references import CASES, validate

# Cases the engine misses today, each a strict expected failure (it fails the suite the day the
# engine meets it, so the list cannot go stale); docs/engine.md ("Known misses") says why.
KNOWN_MISSES = {
    "gb200-nvl72-rack-power": "the trays' parts under training load (GPUs at 85% of TDP, Grace, NICs, board; cold "
                              "plates, no fans; 96% supplies) and the switch trays and power shelves come to 100.2 kW "
                              "against about 120 kW, which NVIDIA does not say is drawn rather than provisioned: the "
                              "trays' peak from parts gives 113.8 kW and their vendor maximum 124.4",
    "dgx-b200-parts-max-power": "its parts at nameplate (GPUs, CPUs, NICs, board, 12.5% fans, 96% supplies) come to "
                                "11.4 kW against the 14.3 kW rating: a rating sits above the parts' peak (the DGX "
                                "H100's measured peak is 18% under its 10.2 kW), and the DGX B200's two 150 W "
                                "BlueField-3 DPUs are not in the catalogue's node",
    **{key: "predicted 1.5-3.7x faster than published: DeepSpeed ZeRO-3 (2021) moved weights far slower than "
            "NCCL allows"
       for key in ("sc21-t2-174.6b-zero3-384", "sc21-t2-174.6b-zero3-768", "sc21-t2-174.6b-zero3-1536",
                   "sc21-t2-529.6b-zero3-640", "sc21-t2-529.6b-zero3-1120", "sc21-t2-529.6b-zero3-2240")},
    **{f"vgg16-nccl-{gpus}": "Torch DDP with NCCL on PCIe nodes loses more than the standalone NCCL bandwidth explains"
       for gpus in (32, 64, 128, 256, 512)},
    **{f"vgg16-hfreduce-{gpus}": "the published step grows 15% from 32 to 512 GPUs; HFReduce's fall explains 3%"
       for gpus in (256, 512)},
    **{f"sc21-t1-{billions}b": "with the authors' run configuration (examples/sc21) predicted 10-22% fast: "
       "Megatron-LM's 2021 code ran slower than its kernels and links allow (its 2022 code is within 4%)"
       for billions in ("1.7", "3.6", "7.5", "18.4", "39.1", "76.1", "145.6", "310.1", "529.6", "1008")},
    "sc21-fusion-gain-174.6b": "the unfused path counts one pass per operation; Megatron's 2021 unfused GeLU "
                               "and softmax took more",
    **{case.key: "Llama 3.1 70B in FP8 (delayed scaling, NeMo 24.09) predicted 18-20% fast where BF16 is within "
                 "9%: the recipe's FP8 work beyond the GEMMs and their casts (amax history, scaling updates, "
                 "the FP8 userbuffers' final reductions) has no cited measurement here"
       for case in CASES if case.key.startswith("dgxc-llama31-70b-fp8")},
    **{case.key: "DeepSeek-V3 in NeMo 25.04 ran at 10-17% MFU; predicted 31% (H100) and 58% (GB200) fast: its "
                 "kernel launches and Transformer Engine modules, at their measured host times, keep both rows "
                 "GPU-bound (2.5 ms of host against 3.4 of GPU a MoE layer forward on GB200); autograd's host "
                 "time backward, device-host synchronisations, token-drop padding and the router kernels' GPU "
                 "time are not modelled"
       for case in CASES if case.key.startswith("dgxc-deepseek")},
    "deepseek-v3-h800-2048": "predicted 27% more tokens per GPU-second than DeepSeek's 180K GPU hours per trillion "
                             "tokens, the same direction as the NeMo runs: FP8 GEMMs with 128-wide block scales "
                             "promoted to FP32 on CUDA cores and the permute and router kernels' GPU time are not "
                             "modelled",
    **{f"gpt2-medium-nccl-{gpus}": "Torch FSDP with NCCL on PCIe nodes loses more than the standalone NCCL bandwidth "
       "explains" for gpus in (64, 128)},
}


def _expected(case):
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
