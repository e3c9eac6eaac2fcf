"""Training model: FLOPs, memory verdicts, parallelism, MoE, scaling efficiency and preprocessing."""
import copy

import numpy as np
import pytest

from simcore import ScenarioError, evaluate
from simcore.references import FF_2ZONE, GPT2_MEDIUM, LLAMA_13B, VGG16
from simcore.training import (
    strong_scaling_efficiency,
    transformer_flops_per_token,
    transformer_params,
    weak_scaling_efficiency,
)

# A DeepSeekMoE-16B-like model: 28 layers, h = 2048, 16.4B parameters of which 2.8B are active
# per token; about 15.5B sit in the routed experts (6 of 64 per token).
MOE = {
    "kind": "transformer", "layers": 28, "hidden": 2048, "heads": 16, "vocab": 102400, "seq_len": 4096,
    "params": 16.4e9, "active_params": 2.8e9, "expert_params": 15.5e9, "moe_top_k": 6,
    "global_batch": 4608, "micro_batch": 1, "pp": 10, "ep": 8, "zero_stage": 1, "precision": "bf16",
    "collective": "hfreduce", "compute_efficiency": 0.4,
}


def train(workload, gpus, cluster=FF_2ZONE):
    return evaluate({"cluster": copy.deepcopy(cluster), "workload": {**workload, "gpus": gpus}})["training"]


def test_megatron_parameter_and_flop_counts():
    # GPT-3 175B: 96 layers, h = 12288, s = 2048, V = 51200 -> about 174.6B parameters.
    assert transformer_params(96, 12288, 2048, 51200) == pytest.approx(174.6e9, rel=0.005)
    model, hardware = transformer_flops_per_token(1e9, 10, 1000, 2000, recompute=True)
    assert model == 6e9 + 12 * 10 * 1000 * 2000
    assert hardware == 8e9 + 16 * 10 * 1000 * 2000


def test_llama_13b_without_flash_attention_or_zero_does_not_fit_40_gb():
    plain = train({**LLAMA_13B, "zero_stage": 0, "flash_attention": False}, 64)
    assert not plain["feasible"]
    assert plain["infeasible_reason"] == "does not fit in HBM"
    assert plain["memory"]["dominant_term"] == "activations"
    assert plain["step_time_s"] is None
    flash = train({**LLAMA_13B, "zero_stage": 0}, 64)
    assert flash["memory"]["activations_gb"] < plain["memory"]["activations_gb"] / 3
    recompute = train({**LLAMA_13B, "zero_stage": 0, "flash_attention": False, "recompute": True}, 64)
    assert recompute["feasible"] and recompute["hfu"] > recompute["mfu"]
    zero1 = train(LLAMA_13B, 64)
    assert zero1["memory"]["optimizer_states_gb"] == pytest.approx(flash["memory"]["optimizer_states_gb"] / 8)


def test_infeasible_layouts_say_why():
    assert train({**LLAMA_13B, "tp": 3}, 64)["infeasible_reason"] == "TP x PP does not divide the job's GPUs"
    assert train({**LLAMA_13B, "tp": 16, "pp": 1}, 64)["infeasible_reason"] == "TP is larger than a node"
    assert train(LLAMA_13B, 20_000)["infeasible_reason"] == "the job needs more GPUs than the cluster has"
    odd_batch = train({**LLAMA_13B, "global_batch": 4095}, 64)
    assert odd_batch["infeasible_reason"] == "the global batch does not split evenly into micro-batches"


def test_llama_strong_scaling_efficiency_falls_with_gpus():
    steps = {n: train(LLAMA_13B, n)["step_time_s"] for n in (64, 128, 256, 512)}
    efficiency = [strong_scaling_efficiency(n, steps[n], 64, steps[64]) for n in (128, 256, 512)]
    assert all(0 < e <= 1 for e in efficiency)
    assert efficiency == sorted(efficiency, reverse=True)
    parts = train(LLAMA_13B, 512)["step_parts_s"]
    assert parts["pipeline bubble"] > 0 and parts["tensor-parallel traffic"] > 0
    assert parts["exposed data-parallel traffic"] > 0  # with PP the allreduce waits for the flush


def test_hfreduce_halves_vgg16_step_against_nccl():
    hf = train({**VGG16, "global_batch": 50 * 256, "collective": "hfreduce"}, 256)
    nccl = train({**VGG16, "global_batch": 50 * 256, "collective": "nccl"}, 256)
    assert nccl["step_time_s"] / hf["step_time_s"] == pytest.approx(2.0, rel=0.15)
    assert hf["step_parts_s"]["exposed data-parallel traffic"] < 0.01
    weak = weak_scaling_efficiency(train({**VGG16, "global_batch": 50 * 512, "collective": "hfreduce"}, 512)
                                   ["step_time_s"], train({**VGG16, "global_batch": 50 * 32, "collective": "hfreduce"},
                                                          32)["step_time_s"])
    assert 0.85 <= weak <= 1.0


def test_fsdp_shards_weights_and_hides_traffic_behind_the_whole_step():
    fsdp = train({**GPT2_MEDIUM, "global_batch": 32 * 64, "collective": "hfreduce"}, 64)
    ddp = train({**GPT2_MEDIUM, "zero_stage": 0, "global_batch": 32 * 64, "collective": "hfreduce"}, 64)
    assert fsdp["memory"]["weights_gb"] < ddp["memory"]["weights_gb"] / 60
    assert fsdp["step_parts_s"]["exposed data-parallel traffic"] == 0


def test_mixture_of_experts_with_expert_parallelism():
    result = train(MOE, 640)
    assert result["feasible"], result["infeasible_reason"]
    assert result["model_flops_per_step"] < 6 * MOE["params"] * MOE["global_batch"] * MOE["seq_len"] / 3
    assert result["step_parts_s"]["expert all-to-all"] > 0
    assert 0 < result["mfu"] < 1
    more_ep = train({**MOE, "ep": 16}, 640)
    assert more_ep["memory"]["weights_gb"] < result["memory"]["weights_gb"]
    faster_nics = copy.deepcopy(FF_2ZONE)
    faster_nics["node"]["compute_nic_gbit_s"] = 400
    assert train(MOE, 640, faster_nics)["step_parts_s"]["expert all-to-all"] < result["step_parts_s"]["expert all-to-all"]
    assert train({**MOE, "ep": 7}, 640)["infeasible_reason"] == "EP does not divide the data-parallel degree"


def test_host_preprocessing_can_bound_the_step_until_encodings_are_cached():
    video = {**LLAMA_13B, "preprocess_s_per_sample": 10.0}
    with pytest.raises(ScenarioError, match="cluster.node.cpu_cores"):
        train(video, 512)
    cluster = copy.deepcopy(FF_2ZONE)
    cluster["node"]["cpu_cores"] = 64
    first_epoch = train(video, 512, cluster)
    cached = train({**video, "preprocess_cached": True}, 512, cluster)
    assert first_epoch["step_bound"] == "host data preprocessing"
    assert first_epoch["step_time_s"] == pytest.approx(4096 / 64 * 10.0 / 64)
    assert cached["step_time_s"] < first_epoch["step_time_s"]
    assert cached["step_bound"] == "compute"


def test_time_and_cost_to_train():
    document = {"cluster": {**FF_2ZONE, "prices": {**FF_2ZONE["prices"], "energy_per_kwh": 0.1, "pue": 1.2}},
                "workload": {**LLAMA_13B, "gpus": 512, "tokens_to_train": 1e12}}
    result = evaluate(document)
    training, rel = result["training"], result["reliability"]
    steps = np.ceil(1e12 / (4096 * 2048))
    assert training["steps_to_train"] == steps
    assert training["time_to_train_ideal_days"] == pytest.approx(steps * training["step_time_s"] / 86400)
    assert training["time_to_train_days"] == pytest.approx(training["time_to_train_ideal_days"] / rel["ettr"])
    assert training["energy_cost_to_train"] > 0


def test_pipeline_deeper_than_the_model_is_infeasible():
    assert train({**LLAMA_13B, "pp": 64, "tp": 1}, 512)["infeasible_reason"] == \
        "PP exceeds the layers (a stage needs a layer)"
    small = train({**LLAMA_13B, "global_batch": 8}, 512)
    assert small["infeasible_reason"] == "the global batch is smaller than one micro-batch per data-parallel rank"
