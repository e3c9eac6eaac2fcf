"""Blackwell as measured: its sustained clock under a board's power, HBM at the bus's peak, NVLink 5
collectives and fused attention at the published B200 points. Built from the 8 x B200 and B200
microbenchmarks; the GB200 NVL72 72-rank allreduce and the GB200's best GEMM are the held-out checks."""
import copy

import numpy as np
import pytest

from simcore import evaluate
from simcore.formulas import collectives
from simcore.formulas.attention import attention_shares, kernel_row
from simcore.formulas.compute import full_clock_power_from, sustained_clock_factor
from simcore.formulas.devices import FAMILIES
from simcore.tools.references import DGX_B200_NODE, GB200_TRAY

BLACKWELL = FAMILIES["blackwell"]
DENSE = {"kind": "transformer", "layers": 8, "hidden": 8192, "heads": 64, "kv_heads": 8, "ffn_hidden": 28672,
         "gated_mlp": True, "vocab": 128256, "seq_len": 8192, "global_batch": 8, "micro_batch": 1}


def run(node, **workload):
    cluster = {"node_count": 1, "node": copy.deepcopy(node), "fabric": {"switch_radix": 64, "switch_gbit_s": 400}}
    return evaluate({"cluster": cluster, "workload": {**DENSE, **workload}})


def test_a_b200_at_1000_w_sustains_the_measured_share_and_a_gb200_at_1200_w_more():
    assert full_clock_power_from(0.85, 1000.0) == pytest.approx(BLACKWELL.full_clock_power_w)
    assert sustained_clock_factor(1000, BLACKWELL.full_clock_power_w) == pytest.approx(0.85)
    b200 = run(DGX_B200_NODE)["compute"]
    gb200 = run({**GB200_TRAY, "scaleup_domain_gpus": 4})["compute"]
    assert b200["sustained_clock_factor"] == pytest.approx(0.85)
    assert 0.85 < gb200["sustained_clock_factor"] < 0.95
    # Held out: the GB200's best GEMM burst, 1,822 of 2,500 TFLOPS BF16 (ml-engineering), against the
    # B200's share at full clock and the GB200's sustained rate either side of it.
    assert BLACKWELL.gemm_fraction * 2500 * gb200["sustained_clock_factor"] < 1822 < BLACKWELL.gemm_fraction * 2500
    # A catalogue figure for the part wins over the family's; a cap above it never binds.
    measured = {**DGX_B200_NODE, "accelerator": {**DGX_B200_NODE["accelerator"], "full_clock_power_w": 900}}
    assert run(measured)["compute"]["sustained_clock_factor"] == 1.0
    # Every compute rate runs at the sustained clock: the same step on the uncapped part is faster by it.
    uncapped = run(measured)["training"]["step_parts_s"]["forward"]
    assert run(DGX_B200_NODE)["training"]["step_parts_s"]["forward"] > uncapped / 0.86


def test_hbm_runs_at_the_measured_share_of_the_buses_peak():
    assert BLACKWELL.hbm_fraction * BLACKWELL.reference_hbm_gbyte_s == pytest.approx(6460)
    assert DGX_B200_NODE["accelerator"]["memory_bandwidth_gbyte_s"] == 7670


def test_nvlink5_allreduce_bus_bandwidth_on_72_ranks_matches_the_held_out_nvl72_measurement():
    one_way = 1800 / 2
    ring = one_way * BLACKWELL.scaleup_fraction
    assert ring == pytest.approx(682)
    nvls = ring * BLACKWELL.nvls_allreduce_gain
    size = 8e9
    time_s = collectives.ring_allreduce_time_s(size, 72, nvls, 3.33e-6)
    bus_gbyte_s = 2 * 71 / 72 * size / time_s / 1e9
    # CoreWeave's nccl-tests (PR 43): 72 ranks of a GB200 NVL72, all_reduce at 8 GB, 835-847 GB/s.
    assert 835 * 0.97 < bus_gbyte_s < 847 * 1.03


def test_blackwell_attention_reaches_the_published_best_points_and_refuses_hopper_kernels():
    flash4, cudnn = kernel_row("blackwell", "flash4"), kernel_row("blackwell", "cudnn")
    def best_forward_tflops(row):
        return 2250 * max(float(attention_shares(row, width, 2**power, False)[0])
                          for width in (64, 128, 256) for power in range(9, 15))

    assert best_forward_tflops(flash4) == pytest.approx(1613)
    assert best_forward_tflops(cudnn) == pytest.approx(1613 / 1.3)
    forward, backward = attention_shares(flash4, 128, 8192, False)
    hopper_forward, hopper_backward = attention_shares(kernel_row("hopper", "flash3"), 128, 8192, False)
    assert backward / forward == pytest.approx((hopper_backward / hopper_forward) * (1000 / 1460) / (561 / 648))
    assert kernel_row("blackwell", "flash3") is None
    assert kernel_row("blackwell", "default") == cudnn
    faster = run(DGX_B200_NODE, attention_kernel="flash4")["training"]["step_parts_s"]["forward"]
    assert faster < run(DGX_B200_NODE)["training"]["step_parts_s"]["forward"]


def test_grouped_expert_gemms_run_at_the_measured_grouped_share_by_group_count():
    from dataclasses import replace

    from simcore.formulas.transformer import grouped_gemm_fraction
    from simcore.stages.job import device_at

    acc = {key: np.asarray(value, float) for key, value in DGX_B200_NODE["accelerator"].items() if key != "family"}
    acc["peak_tf32_tflops"] = np.asarray(1100.0)
    device, _ = device_at(acc, BLACKWELL, np.asarray(0.85), "bf16")
    share = [float(grouped_gemm_fraction(device, np.asarray(g))) for g in (1, 2, 8, 32)]
    assert share[0] * 2250 == pytest.approx(860) and share[2] * 2250 == pytest.approx(712)
    assert share[1] == pytest.approx((share[0] ** 2 * share[2]) ** (1 / 3))  # geometric in log2 of the groups
    assert share[3] == share[2]  # held beyond the measured eight
    fp8, _ = device_at(acc, BLACKWELL, np.asarray(0.85), "fp8")
    assert float(grouped_gemm_fraction(fp8, np.asarray(8.0))) * 5000 == pytest.approx(2672)
    # A family without a grouped measurement runs its experts at the dense share.
    hopper = replace(device, grouped_gemm_fraction=np.asarray(np.nan), grouped_eight_ratio=np.asarray(1.0))
    assert float(grouped_gemm_fraction(hopper, np.asarray(8.0))) == pytest.approx(BLACKWELL.gemm_fraction)


def test_the_step_names_what_its_compute_spends_on_the_clock_casts_experts_and_shuffles():
    uncapped = {**DGX_B200_NODE, "accelerator": {**DGX_B200_NODE["accelerator"], "full_clock_power_w": 900}}

    def compute_s(training):
        parts = training["step_parts_s"]
        return parts["forward"] + parts["backward"] + parts["recomputation"]

    sustained, full = run(DGX_B200_NODE)["training"], run(uncapped)["training"]
    assert full["compute_detail_s"]["sustained_clock"] == 0
    # The FLOP-bound work's time at 0.85 of the clock, x 0.15: what running at full clock would save.
    assert sustained["compute_detail_s"]["sustained_clock"] == pytest.approx(compute_s(sustained) - compute_s(full),
                                                                            rel=0.05)
    assert sustained["compute_detail_s"]["fp8_quantize"] == 0 and sustained["compute_detail_s"]["grouped_gemm"] == 0
    assert run(DGX_B200_NODE, precision="fp8")["training"]["compute_detail_s"]["fp8_quantize"] > 0
    moe = {"experts": 64, "moe_top_k": 8, "expert_ffn_hidden": 2048, "ep": 8, "dense_layers": 0}
    detail = run(DGX_B200_NODE, **moe)["training"]["compute_detail_s"]
    assert detail["grouped_gemm"] > 0 and detail["moe_permute"] > 0
    assert run(DGX_B200_NODE, moe_dispatcher="hybridep", **moe)["training"]["compute_detail_s"]["moe_permute"] == 0
