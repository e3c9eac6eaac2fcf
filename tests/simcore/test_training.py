"""Training model: FLOPs, memory verdicts, parallelism, MoE, scaling efficiency and preprocessing."""
import copy

import numpy as np
import pytest

from simcore import ScenarioError, evaluate
from simcore.formulas.training import strong_scaling_efficiency, weak_scaling_efficiency
from simcore.tools.references import FF_2ZONE, GPT2_MEDIUM, LLAMA_13B, VGG16

# DeepSeekMoE-16B (Dai et al. 2024): 28 layers (the first dense, MLP 10,944), h = 2048, 64 routed
# experts of width 1,408 with 6 per token and 2 shared; FF V-D trains it with PP 10.
MOE = {
    "kind": "transformer", "layers": 28, "hidden": 2048, "heads": 16, "ffn_hidden": 10944, "gated_mlp": True,
    "tied_embeddings": False, "vocab": 102400, "seq_len": 4096, "experts": 64, "moe_top_k": 6,
    "expert_ffn_hidden": 1408, "shared_experts": 2, "dense_layers": 1,
    "global_batch": 4608, "micro_batch": 1, "pp": 10, "ep": 8, "zero_stage": 1, "precision": "bf16",
    "collective": "hfreduce",
}


def train(workload, gpus, cluster=FF_2ZONE):
    return evaluate({"cluster": copy.deepcopy(cluster), "workload": {**workload, "gpus": gpus}})["training"]


def test_llama_13b_without_flash_attention_or_zero_does_not_fit_40_gb():
    plain = train({**LLAMA_13B, "zero_stage": 0, "flash_attention": False}, 64)
    assert not plain["feasible"]
    assert plain["infeasible_reason"] == "does not fit in HBM"
    assert plain["memory"]["dominant_term"] == "activations"
    assert plain["step_time_s"] is None
    flash = train({**LLAMA_13B, "zero_stage": 0}, 64)
    assert flash["memory"]["activations_gib"] < plain["memory"]["activations_gib"] / 2
    recompute = train({**LLAMA_13B, "zero_stage": 0, "flash_attention": False, "recompute": "full"}, 64)
    assert recompute["feasible"] and recompute["hfu"] > recompute["mfu"]
    zero1 = train(LLAMA_13B, 64)
    assert zero1["memory"]["optimizer_states_gib"] == pytest.approx(flash["memory"]["optimizer_states_gib"] / 8)


def test_infeasible_layouts_say_why():
    assert train({**LLAMA_13B, "tp": 4, "pp": 3},
                 64)["infeasible_reason"] == "TP x PP x CP does not divide the job's GPUs"
    too_wide = train({**LLAMA_13B, "tp": 10, "pp": 1}, 640)
    assert too_wide["infeasible_reason"] == ("TP is larger than a scale-up domain (a node, or the NVLink rack it "
                                             "belongs to)")
    assert train(LLAMA_13B, 20_000)["infeasible_reason"] == "the job needs more GPUs than the cluster has"
    odd_batch = train({**LLAMA_13B, "global_batch": 4095}, 64)
    assert odd_batch["infeasible_reason"] == "the global batch does not split evenly into micro-batches"


def test_llama_strong_scaling_efficiency_falls_with_gpus():
    steps = {n: train(LLAMA_13B, n)["step_time_s"] for n in (64, 128, 256, 512)}
    efficiency = [strong_scaling_efficiency(n, steps[n], 64, steps[64]) for n in (128, 256, 512)]
    assert all(0 < e <= 1 for e in efficiency)
    assert efficiency == sorted(efficiency, reverse=True)
    parts = train(LLAMA_13B, 512)["step_parts_s"]
    assert parts["pipeline_bubble"] > 0 and parts["tp_traffic"] > 0
    assert parts["dp_exposed"] > 0  # with PP the allreduce waits for the flush


def test_hfreduce_halves_vgg16_step_against_nccl():
    hf = train({**VGG16, "global_batch": 50 * 256, "collective": "hfreduce"}, 256)
    nccl = train({**VGG16, "global_batch": 50 * 256, "collective": "nccl"}, 256)
    assert nccl["step_time_s"] / hf["step_time_s"] == pytest.approx(2.0, rel=0.15)
    exposed = "dp_exposed"
    assert hf["step_parts_s"][exposed] < nccl["step_parts_s"][exposed] / 5
    weak = weak_scaling_efficiency(train({**VGG16, "global_batch": 50 * 512, "collective": "hfreduce"}, 512)
                                   ["step_time_s"], train({**VGG16, "global_batch": 50 * 32, "collective": "hfreduce"},
                                                          32)["step_time_s"])
    assert 0.85 <= weak <= 1.0


def test_fsdp_shards_weights_and_hides_traffic_behind_the_whole_step():
    fsdp = train({**GPT2_MEDIUM, "global_batch": 32 * 64, "collective": "hfreduce"}, 64)
    ddp = train({**GPT2_MEDIUM, "zero_stage": 0, "global_batch": 32 * 64, "collective": "hfreduce"}, 64)
    assert fsdp["memory"]["weights_gib"] < ddp["memory"]["weights_gib"] / 60
    # Two gathers and a reduce-scatter, each a whole HFReduce allreduce, against the whole step's compute.
    assert fsdp["dp_allreduce_s"] == pytest.approx(3 * ddp["dp_allreduce_s"])
    compute = fsdp["step_parts_s"]["forward"] + fsdp["step_parts_s"]["backward"]
    assert fsdp["step_parts_s"]["dp_exposed"] == pytest.approx(
        max(0.0, fsdp["dp_allreduce_s"] - 0.8 * compute))
    # The step names the gathers: two of the three allreduces, the third the gradients' reduction.
    assert fsdp["dp_detail_s"]["param_gather"] == pytest.approx(2 * ddp["dp_allreduce_s"])
    assert fsdp["dp_detail_s"]["grad_reduce"] == pytest.approx(ddp["dp_allreduce_s"])
    assert ddp["dp_detail_s"] == {"param_gather": 0.0, "grad_reduce": ddp["dp_allreduce_s"], "fsdp_calls": 0.0}
    assert fsdp["dp_detail_s"]["fsdp_calls"] == 0.0  # HFReduce's FSDP reduces whole buffers
    nccl = train({**GPT2_MEDIUM, "global_batch": 32 * 64, "recompute": "full", "weight_bytes": 2}, 64)
    assert nccl["dp_detail_s"]["param_gather"] == pytest.approx(1.5 * nccl["dp_detail_s"]["grad_reduce"])


def test_mixture_of_experts_with_expert_parallelism():
    result = train(MOE, 640)
    assert result["feasible"], result["infeasible_reason"]
    assert result["model_flops_per_step"] < 6 * result["params"] * MOE["global_batch"] * MOE["seq_len"] / 3
    assert result["step_parts_s"]["ep_all_to_all"] > 0
    assert 0 < result["mfu"] < 1
    more_ep = train({**MOE, "ep": 16}, 640)
    assert more_ep["memory"]["weights_gib"] < result["memory"]["weights_gib"]
    assert result["placement"]["ep"] == "PCIe"  # 8 experts ranks in a node of NVLink pairs
    assert more_ep["placement"]["ep"] == "network"
    faster_nics = copy.deepcopy(FF_2ZONE)
    faster_nics["node"]["compute_nic_gbit_s"] = 400
    assert (train({**MOE, "ep": 16}, 640, faster_nics)["step_parts_s"]["ep_all_to_all"]
            < more_ep["step_parts_s"]["ep_all_to_all"])
    assert train({**MOE, "ep": 64}, 320)["infeasible_reason"] == ("EP x expert TP does not divide TP x CP x DP (the "
                                                                 "ranks of a pipeline stage)")
    with pytest.raises(ScenarioError, match="EP does not divide the routed experts"):
        train({**MOE, "ep": 7}, 640)


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
    assert cached["step_bound"] == "backward"


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


def test_pipeline_deeper_than_the_model_is_bad_input():
    with pytest.raises(ScenarioError, match="PP exceeds the layers") as error:
        train({**LLAMA_13B, "pp": 64, "tp": 1}, 512)
    assert error.value.field == "workload.pp"
    small = train({**LLAMA_13B, "global_batch": 8}, 512)
    assert small["infeasible_reason"] == "the global batch is smaller than one micro-batch per data-parallel rank"
