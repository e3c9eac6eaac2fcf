"""Activation offloading: layers whose activations wait in host memory between their forward and their
backward, in memory and in time."""
import numpy as np
import pytest

from simcore import ScenarioError
from simcore.formulas import training
from simcore.tools.references import LLAMA3_405B, LLAMA3_CLUSTER, LLAMA3_NODE, run

ON_8192 = {**LLAMA3_CLUSTER, "node_count": 1024}


def llama(**changes):
    return run(ON_8192, {**LLAMA3_405B, "gpus": 8192, **changes})["training"]


def test_offloaded_layers_leave_hbm_but_two_in_flight():
    assert float(training.offloaded_activation_bytes(80.0, 2.0, np.asarray(2.0), np.asarray(8.0))) == 80 * 6 / 8 + 4
    assert float(training.offloaded_activation_bytes(80.0, 2.0, np.asarray(0.0), np.asarray(8.0))) == 80
    # 4 GB over a 25 GB/s host link: 0.16 s each way, hidden behind a 0.1 s forward only in part.
    assert float(training.offload_exposed_s(4e9, 25.0, 0.1, 0.5)) == pytest.approx(0.06)


def test_llama3_405b_on_8192_gpus_fits_with_two_layers_offloaded_and_loses_no_time():
    plain, offloaded = llama(), llama(offload_activation_layers=2)
    assert not plain["memory"]["fits"] and offloaded["memory"]["fits"]
    layer_gib = 8192 * 65024 / 2**30  # a Llama 3 405B layer's activations on one rank (TP 8, SP): 65,024 B a token
    expected = plain["memory"]["activations_gib"] * (1 - 2 / 8) + 2 * layer_gib
    assert float(offloaded["memory"]["activations_gib"]) == pytest.approx(expected)
    # Two layers' activations (1.07 GB) over a 27 GB/s host link take 40 ms, inside a stage's forward.
    assert offloaded["step_parts_s"]["activation_offload"] == 0


def test_a_slow_host_link_shows_the_copies_that_outlast_the_compute():
    slow = {**ON_8192, "node": {**LLAMA3_NODE, "pcie_bw_gbyte_s": 2.0}}
    result = run(slow, {**LLAMA3_405B, "gpus": 8192, "offload_activation_layers": 4})["training"]
    layer_bytes = 8192 * 65024
    copy_s = 4 * layer_bytes / 2e9
    parts = result["step_parts_s"]
    micro_batches = 32
    forward, backward = parts["forward"] / micro_batches, (parts["backward"] + parts["recomputation"]) / micro_batches
    expected = micro_batches * (max(copy_s - forward, 0) + max(copy_s - backward, 0))
    assert parts["activation_offload"] == pytest.approx(expected, rel=1e-6) and expected > 0
    assert result["step_time_s"] > llama(offload_activation_layers=4)["step_time_s"]


def test_offloading_more_layers_than_a_stage_holds_is_a_field_error():
    with pytest.raises(ScenarioError) as raised:
        llama(offload_activation_layers=9)
    assert raised.value.field == "workload.offload_activation_layers"
    assert "more layers than a pipeline stage holds" in raised.value.reason
