"""Properties that must hold for every valid input (hypothesis)."""
import copy

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from simcore import EngineParams
from simcore.arrays import MIN_POSITIVE
from simcore.document import parse
from simcore.formulas.collectives import NodeIO, hfreduce, nccl_allreduce
from simcore.formulas.compute import accelerator_power_w, sustained_clock_factor
from simcore.formulas.power import node_parts_w, node_power_w
from simcore.formulas.reliability import ettr_closed_form
from simcore.formulas.topology import fat_tree
from simcore.stages.scenario import evaluate_parsed
from simcore.tools.references import FF_2ZONE, LLAMA_13B

radix = st.sampled_from([8, 16, 24, 32, 40, 48, 64, 128])
counts = st.integers(min_value=1, max_value=200_000)
bw = st.floats(min_value=0.5, max_value=500, allow_nan=False)


def engine_floats(high: float):
    """Numbers from 0 to ``high`` a document may hold: zero, or at least the engine's smallest magnitude."""
    return st.one_of(st.just(0.0), st.floats(MIN_POSITIVE, high))


@given(radix, counts, st.integers(1, 5000), st.sampled_from([2, 3]), st.integers(1, 4), st.integers(1, 8),
       st.sampled_from([1.0, 2.0, 3.0]))
def test_more_endpoints_never_need_fewer_switches(k, endpoints, extra, layers, zones, planes, oversub):
    small = fat_tree(endpoints, k, layers=layers, zones=zones, planes=planes, oversubscription=oversub)
    large = fat_tree(endpoints + extra, k, layers=layers, zones=zones, planes=planes, oversubscription=oversub)
    assert large.switches >= small.switches
    assert large.switch_links >= small.switch_links


def io(**values):
    base = dict(gpus_per_node=8.0, nic_bw_gbyte_s=25.0, host_mem_bw_gbyte_s=320.0, pcie_bw_gbyte_s=27.0,
                root_port_bw_gbyte_s=37.5, shared_root_ports=1.0, p2p_bw_gbyte_s=9.66, scaleup_bw_gbyte_s=300.0,
                numa_domains=2.0)
    base.update(values)
    return NodeIO(**{k: np.asarray(v) for k, v in base.items()})


FIELDS = ["nic_bw_gbyte_s", "host_mem_bw_gbyte_s", "pcie_bw_gbyte_s", "root_port_bw_gbyte_s", "p2p_bw_gbyte_s",
          "scaleup_bw_gbyte_s"]


@given(st.sampled_from(FIELDS), bw, st.floats(1.0, 10.0), st.integers(1, 512),
       st.floats(1e5, 4e9), st.booleans())
def test_more_bandwidth_never_makes_a_collective_slower(field, value, factor, nodes, size, nvlink):
    slow, fast = io(**{field: value}), io(**{field: value * factor})
    assert hfreduce(size, nodes, fast, nvlink=nvlink).time_s <= hfreduce(size, nodes, slow, nvlink=nvlink).time_s
    assert nccl_allreduce(size, nodes, fast).time_s <= nccl_allreduce(size, nodes, slow).time_s


@given(st.floats(50, 1500), st.floats(1.0, 3.0), st.integers(1, 16), st.integers(0, 4), st.integers(0, 16),
       st.booleans())
def test_power_is_at_least_idle_and_clock_at_most_one(tdp, headroom, gpus, cpus, nics, liquid):
    full = tdp * headroom
    power, idle = accelerator_power_w(tdp, full)
    assert idle <= power <= max(tdp, full) + 1e-9
    assert 0 < sustained_clock_factor(tdp, full) <= 1
    node = node_power_w(np.nan, gpus, tdp, cpus, np.nan, nics, liquid)
    assert node >= gpus * idle
    assert node <= node_parts_w(gpus, tdp, 1.0, cpus, np.nan, nics, liquid)


@given(st.floats(1, 1e6), st.floats(0, 1e4), st.floats(0, 1e5), st.floats(0, 1e-2))
def test_ettr_is_a_fraction(interval, checkpoint, restart, rate):
    ettr = ettr_closed_form(interval, checkpoint, restart, rate)
    assert 0 <= ettr <= 1


@settings(max_examples=40, deadline=None)
@given(st.integers(8, 4000), radix, st.sampled_from([2, 3]), st.sampled_from([64, 128, 256, 512]),
       st.sampled_from(["nccl", "hfreduce"]), st.sampled_from(["none", "selective", "full"]))
def test_outputs_are_finite_and_efficiencies_bounded(nodes, k, layers, gpus, library, recompute):
    cluster = copy.deepcopy(FF_2ZONE)
    cluster.update(node_count=nodes, fabric={"switch_radix": k, "switch_gbit_s": 200, "layers": layers})
    workload = {**LLAMA_13B, "gpus": min(gpus, nodes * 8 // 64 * 64) or 64, "collective": library,
                "recompute": recompute}
    result = evaluate_parsed(parse({"cluster": cluster, "workload": workload}), EngineParams())
    # The A100 has no FP8 or FP4 peak; a basis is a label.
    unknown_by_design = {"gemm_fp8_tflops", "gemm_fp4_tflops", "node_max_basis", "pue_basis", "optics_basis"}
    for section in ("compute", "power", "fabric"):
        for key, value in result[section].items():
            if key not in unknown_by_design:
                assert np.all(np.isfinite(np.asarray(value, float))), (section, key)
    training = result["training"]
    if bool(training["feasible"]):
        assert 0 < training["mfu"] <= training["hfu"] <= 1
        assert np.isfinite(training["step_time_s"]) and training["step_time_s"] > 0
    else:
        assert np.isnan(training["step_time_s"]) and training["infeasible_reason"]
    assert 0 < result["reliability"]["ettr"] <= 1
    assert 0 < result["compute"]["sustained_clock_factor"] <= 1


@settings(max_examples=40, deadline=None)
@given(engine_floats(3.0), engine_floats(1.0), st.sampled_from(["sync", "async"]), st.booleans(),
       st.sampled_from(["fast-restart", "ascend-10k-2025", "ascend-mindcluster"]),
       st.sampled_from(["fire-flyer", "llama3"]))
def test_reliability_stays_in_range_and_a_buggier_job_never_gains(factor, flaps, mode, in_memory, restart, profile):
    from simcore import evaluate

    def rel(job_fault_factor):
        cluster = {**FF_2ZONE, "reliability": {"profile": profile, "checkpoint_mode": mode, "restart_profile": restart,
                                               "checkpoint_in_memory": in_memory, "link_flap_share": flaps}}
        workload = {**LLAMA_13B, "gpus": 512, "job_fault_factor": job_fault_factor}
        return evaluate({"cluster": cluster, "workload": workload})["reliability"]

    calm, buggy = rel(factor), rel(factor + 1.0)
    for r in (calm, buggy):
        assert 0 < r["ettr"] <= r["ettr_at_optimum"] + 1e-12 <= 1
        assert r["restart_time_s"] > 0 and r["job_interruptions_per_day"] >= r["job_caused_interruptions_per_day"] >= 0
        assert 0 <= r["fabric_interruption_share"] <= 1
    assert buggy["job_interruptions_per_day"] > calm["job_interruptions_per_day"]
    assert buggy["ettr_at_optimum"] < calm["ettr_at_optimum"]
    assert buggy["events_per_day"] == calm["events_per_day"]  # the fleet count does not depend on one job
