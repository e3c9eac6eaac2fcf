"""Blackwell as measured: its sustained clock under a board's power, HBM at the bus's peak, NVLink 5
collectives and fused attention at the published B200 points. Built from the 8 x B200 and B200
microbenchmarks; the GB200 NVL72 72-rank allreduce and the GB200's best GEMM are the held-out checks."""
import copy

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
