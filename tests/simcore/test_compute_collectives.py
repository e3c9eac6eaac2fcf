"""GEMM under a power cap (FF Table II) and the collectives of FF Fig. 7."""
import numpy as np
import pytest

from simcore import evaluate
from simcore.formulas.collectives import CollectiveParams, NodeIO, hfreduce, hfreduce_memory_units, nccl_allreduce
from simcore.formulas.compute import accelerator_power_w, gemm_tflops, sustained_clock_factor
from simcore.formulas.devices import FAMILIES
from simcore.tools.charts import curves
from simcore.tools.references import DGX_3LAYER, FF_2ZONE, FF_NODE

MIB = 2**20
GPUS = np.array([16, 32, 64, 128, 256, 512, 1024, 1440])


@pytest.mark.parametrize("peak,tdp,published", [(156, 250, 107), (312, 250, 220), (156, 400, 131), (312, 400, 263)])
def test_gemm_within_5_percent_of_ff_table_ii(peak, tdp, published):
    assert gemm_tflops(peak, tdp, 400, FAMILIES["ampere"].gemm_fraction) == pytest.approx(published, rel=0.05)


def test_power_cap_lowers_the_clock_by_a_cube_root():
    assert sustained_clock_factor(400, 400) == 1.0
    factor = sustained_clock_factor(250, 400)
    assert factor == pytest.approx(((250 - 50) / (400 - 50)) ** (1 / 3))
    power, idle = accelerator_power_w(250, 400)
    assert power == pytest.approx(250) and idle == pytest.approx(50)


def ff_io(**changes) -> NodeIO:
    fields = dict(gpus_per_node=8.0, nic_bw_gbyte_s=25.0, host_mem_bw_gbyte_s=320.0, pcie_bw_gbyte_s=27.0,
                  root_port_bw_gbyte_s=37.5, shared_root_ports=1.0, p2p_bw_gbyte_s=9.66,
                  scaleup_bw_gbyte_s=300.0, numa_domains=2.0)
    fields.update(changes)
    return NodeIO(**{k: np.asarray(v) for k, v in fields.items()})


def test_hfreduce_memory_traffic_is_24_units_per_unit_of_data():
    assert hfreduce_memory_units(8, 100, 2, nvlink=False) == 24


def test_hfreduce_at_186_mib_stays_in_the_published_range_with_both_ceilings_named():
    result = hfreduce(186 * MIB, GPUS / 8, ff_io())
    assert np.all((result.algbw_gbyte_s >= 6.3) & (result.algbw_gbyte_s <= 8.1))
    assert set(result.binding) == {"shared PCIe root port"}
    bounds = result.bounds_gbyte_s
    assert bounds["host memory bandwidth"][-1] == pytest.approx(320 / 24)
    assert bounds["shared PCIe root port"][-1] == pytest.approx(37.5 * 0.89 / 4)
    assert np.all(np.diff(result.algbw_gbyte_s) < 0)


def test_without_the_shared_root_port_hfreduce_is_bound_by_the_nic():
    """FF IV-D3: with the root port out of the way the NIC's 2-unit bound (12.5 GB/s) binds."""
    shared = hfreduce(186 * MIB, 100, ff_io())
    result = hfreduce(186 * MIB, 100, ff_io(shared_root_ports=0.0))
    assert result.binding == "NIC bandwidth"
    assert float(result.bounds_gbyte_s["NIC bandwidth"]) == 12.5
    assert float(shared.algbw_gbyte_s) < float(result.algbw_gbyte_s) < 12.5


def test_nccl_in_range_and_its_fall_at_1024_gpus_is_the_tree_on_the_p2p_path():
    result = nccl_allreduce(186 * MIB, GPUS / 8, ff_io())
    assert np.all((result.algbw_gbyte_s >= 1.6) & (result.algbw_gbyte_s <= 4.8))
    below, above = GPUS < 1024, GPUS >= 1024
    assert all(label.startswith("ring") for label in result.binding[below])
    assert set(result.binding[above]) == {"tree: GPU-to-NIC peer-to-peer limit"}
    assert result.algbw_gbyte_s[above].max() < 0.6 * result.algbw_gbyte_s[below].min()


def test_hfreduce_with_nvlink_is_faster_and_cross_zone_slower():
    nodes = np.array([16, 32, 64, 128])
    plain = hfreduce(186 * MIB, nodes, ff_io())
    nvlink = hfreduce(186 * MIB, nodes, ff_io(), nvlink=True)
    cross = hfreduce(186 * MIB, nodes, ff_io(), nvlink=True, cross_zone=True)
    assert np.all(nvlink.algbw_gbyte_s > plain.algbw_gbyte_s)
    assert np.all(cross.algbw_gbyte_s < nvlink.algbw_gbyte_s)
    assert set(nvlink.binding) == {"NIC bandwidth"}
    two_nodes = hfreduce(186 * MIB, 2, ff_io(), nvlink=True)  # two nodes swap 1 unit: memory binds
    assert two_nodes.binding == "host memory bandwidth"
    assert float(two_nodes.bounds_gbyte_s["host memory bandwidth"]) == pytest.approx(320 / 13.5)
    assert float(two_nodes.algbw_gbyte_s) > 16


def test_scenario_reports_collectives_with_bounds():
    report = evaluate({"cluster": FF_2ZONE, "options": {"message_bytes": 186 * MIB}})["collectives"]
    assert report["hfreduce"]["bound"] == "shared PCIe root port"
    assert report["hfreduce"]["bounds_gbyte_s"]["host memory bandwidth"] == pytest.approx(13.33, abs=0.01)
    assert report["hfreduce_nvlink"]["algbw_gbyte_s"] > report["hfreduce"]["algbw_gbyte_s"]
    assert FF_NODE["nvlink_topology"] == "pairs"


def test_the_nccl_curve_steps_only_where_it_switches_from_ring_to_tree_and_ends_at_the_report():
    document = {"cluster": {**DGX_3LAYER, "node_count": 256}}
    by_gpus = curves(document)["allreduce_vs_gpus"]
    algorithms, nccl = by_gpus["nccl_algorithm"], by_gpus["nccl"]
    switch = CollectiveParams().nccl_tree_min_ranks
    assert algorithms == ["ring" if gpus < switch else "tree" for gpus in by_gpus["gpus"]]
    rises = [gpus for gpus, before, after in zip(by_gpus["gpus"][1:], nccl, nccl[1:]) if after > before]
    assert rises == [switch]  # the ring falls with its latency; the tree lifts the curve once
    assert nccl[-1] == pytest.approx(evaluate(document)["collectives"]["nccl"]["algbw_gbyte_s"])
