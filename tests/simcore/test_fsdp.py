"""ZeRO-3 / FSDP as each implementation runs its weight collectives (simcore.formulas.training.FSDP)."""
import copy

import pytest

from simcore import ScenarioError, evaluate, fitted
from simcore.formulas.collectives import CollectiveParams
from simcore.formulas.host import X86_HOST_OP_S as HOST_OP_S
from simcore.outputs import OUTPUTS
from simcore.tools.references import FF_2ZONE, GPT2_MEDIUM, scenario

HOP_S = CollectiveParams().hop_latency_s


def with_implementation(document, implementation):
    document = copy.deepcopy(document)
    document["workload"]["fsdp_implementation"] = implementation
    return evaluate(document)["training"]


def sc21_zero3(gpus, implementation):
    """SC21 Table 2's 174.6B model without model parallelism on Selene: 96 layers, one micro-batch of
    1,536 / gpus sequences a GPU, full recomputation (three gathers a layer and a reduce-scatter)."""
    return with_implementation(scenario(f"sc21-t2-174.6b-zero3-{gpus}"), implementation)


def test_deepspeed_2021_pays_a_collective_per_weight_matrix_per_rank_and_hides_nothing():
    run = sc21_zero3(1536, "deepspeed-zero3-v0.3")
    calls = 1 * (3 + 1) * 96 * 4
    host_ops = fitted.values()["deepspeed_v03_host_ops_per_rank"]  # fitted on SC21's ZeRO-3 rows, within 1-4
    assert 1.0 <= host_ops <= 4.0
    assert run["dp_detail_s"]["fsdp_calls"] == pytest.approx(calls * (1535 * HOP_S + host_ops * 1536 * HOST_OP_S))
    assert run["dp_detail_s"]["fsdp_calls"] > 26.0  # at least one op per rank: 26.8 s of calls
    # A device synchronize before every gather: all of the traffic is exposed, none slows the compute.
    assert run["step_parts_s"]["dp_exposed"] == pytest.approx(run["dp_allreduce_s"])
    assert run["dp_allreduce_s"] == pytest.approx(sum(run["dp_detail_s"].values()))
    assert run["step_parts_s"]["comm_sms"] == 0.0
    assert sc21_zero3(1536, "fsdp2")["step_parts_s"]["comm_sms"] > 0.0  # what FSDP2 hides slows the GEMMs beside it


def test_fsdp2_prefetches_a_layer_ahead_and_its_exposed_share_grows_with_the_data_parallel_size():
    runs = {gpus: sc21_zero3(gpus, "fsdp2") for gpus in (384, 768, 1536)}
    assert runs[1536]["dp_detail_s"]["fsdp_calls"] == pytest.approx(4 * 96 * 1535 * HOP_S)
    exposed_share = [runs[g]["step_parts_s"]["dp_exposed"] / runs[g]["step_time_s"] for g in (384, 768, 1536)]
    assert exposed_share == sorted(exposed_share) and exposed_share[-1] > 0.2
    # Of each gather and reduce-scatter round, the layer at its start or end has no compute beside it.
    assert runs[384]["step_parts_s"]["dp_exposed"] == pytest.approx(runs[384]["dp_allreduce_s"] / 96)
    deepspeed = sc21_zero3(1536, "deepspeed-zero3")
    assert deepspeed["dp_detail_s"]["fsdp_calls"] == pytest.approx(4 * runs[1536]["dp_detail_s"]["fsdp_calls"])
    as_ran = sc21_zero3(1536, "deepspeed-zero3-v0.3")
    assert runs[1536]["step_time_s"] < deepspeed["step_time_s"] < as_ran["step_time_s"]


def test_the_step_names_the_calls_and_refuses_an_unknown_implementation():
    assert "training.dp_detail_s.fsdp_calls" in {output.path for output in OUTPUTS}
    document = copy.deepcopy(scenario("sc21-t2-174.6b-zero3-384"))
    document["workload"]["fsdp_implementation"] = "megatron"
    with pytest.raises(ScenarioError) as refused:
        evaluate(document)
    assert refused.value.field == "workload.fsdp_implementation"


def test_hfreduce_a_cnn_and_one_rank_keep_their_whole_step_window_whatever_the_implementation():
    """The calls are modelled over NCCL for a transformer's layers between ranks: HFReduce's FSDP
    (HaiScale) reduces whole buffers, a CNN has no layers to gather one by one, and one rank has
    nothing to gather. Those keep the whole step's compute as their window."""
    hfreduce = {"cluster": copy.deepcopy(FF_2ZONE),
                "workload": {**GPT2_MEDIUM, "collective": "hfreduce", "global_batch": 32 * 64, "gpus": 64}}
    cnn = copy.deepcopy(scenario("vgg16-nccl-32"))
    cnn["workload"]["zero_stage"] = 3
    one_rank = {"cluster": copy.deepcopy(FF_2ZONE),
                "workload": {**GPT2_MEDIUM, "collective": "nccl", "global_batch": 32, "gpus": 1}}
    for document in (hfreduce, cnn, one_rank):
        runs = [with_implementation(document, name) for name in ("fsdp2", "deepspeed-zero3-v0.3")]
        assert runs[1]["feasible"], runs[1]["infeasible_reason"]
        assert runs[0]["step_time_s"] == pytest.approx(runs[1]["step_time_s"])
        assert runs[1]["dp_detail_s"]["fsdp_calls"] == 0.0
    assert runs[1]["dp_allreduce_s"] == 0.0
    sharded = with_implementation(cnn, "fsdp2")
    assert sharded["dp_detail_s"]["param_gather"] > 0
    assert sharded["step_parts_s"]["dp_exposed"] < sharded["dp_allreduce_s"]
