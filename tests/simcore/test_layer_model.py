"""The layer-level training model: GEMM shapes, layouts, memory forms and bad input."""
import copy

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simcore import ScenarioError, evaluate
from simcore.arrays import distinct_points
from simcore.formulas.devices import FAMILIES
from simcore.formulas.transformer import DISTINCT_SHAPES_FROM, gemm_efficiency
from simcore.tools.references import CASES, SC21_GPT, SELENE, validate

A100 = FAMILIES["ampere"]
# A Llama-style 8B-class dense model on DGX A100 80GB nodes (Selene), bf16, FlashAttention.
DENSE = {
    "kind": "transformer", "layers": 32, "hidden": 4096, "heads": 32, "kv_heads": 8, "ffn_hidden": 14336,
    "gated_mlp": True, "tied_embeddings": False, "vocab": 128256, "seq_len": 8192, "global_batch": 512,
    "micro_batch": 1, "precision": "bf16", "gpus": 256, "tp": 4, "pp": 2, "zero_stage": 1,
}
# DeepSeekMoE-16B-like: 28 layers, the first dense, 64 routed experts of width 1408 (6 per token) and 2 shared.
MOE = {
    "kind": "transformer", "layers": 28, "hidden": 2048, "heads": 16, "ffn_hidden": 10944, "gated_mlp": True,
    "tied_embeddings": False, "vocab": 102400, "seq_len": 4096, "experts": 64, "moe_top_k": 6,
    "expert_ffn_hidden": 1408, "shared_experts": 2, "dense_layers": 1, "global_batch": 512, "micro_batch": 1,
    "precision": "bf16", "gpus": 256, "pp": 4, "ep": 8, "zero_stage": 1,
}


def train(workload, cluster=SELENE, **changes):
    return evaluate({"cluster": copy.deepcopy(cluster), "workload": {**workload, **changes}})["training"]


def test_gemm_efficiency_falls_for_small_and_ragged_shapes_and_never_exceeds_the_large_gemm_share():
    large = gemm_efficiency(8192, 8192, 108, A100.gemm_fraction)
    assert large == pytest.approx(A100.gemm_fraction, rel=0.01)
    assert gemm_efficiency(256, 256, 108, A100.gemm_fraction) < 0.2 * large  # 4 tiles on 108 SMs
    ragged = gemm_efficiency(8192, 8200, 108, A100.gemm_fraction)  # a 65th column of tiles and a 20th wave
    assert ragged < 0.97 * large
    shapes = np.random.default_rng(1).integers(1, 20000, (2, 5000))
    assert np.all(gemm_efficiency(shapes[0], shapes[1], 108, A100.gemm_fraction) <= A100.gemm_fraction + 1e-12)


def test_parameter_and_flop_counts_match_megatron_and_llama():
    gpt3 = train({**SC21_GPT, "heads": 96, "hidden": 12288, "layers": 96, "global_batch": 1536, "gpus": 1536,
                  "tp": 8, "pp": 12})
    assert gpt3["params"] == pytest.approx(174.6e9, rel=0.002)
    # SC21: F = 96 B s l h^2 (1 + s / (6 h) + V / (16 l h)) with full recomputation.
    b, s, layers, h, v = 1536, 2048, 96, 12288, 51200
    narayanan = 96 * b * s * layers * h**2 * (1 + s / (6 * h) + v / (16 * layers * h))
    assert gpt3["hardware_flops_per_step"] == pytest.approx(narayanan)
    model_flops = 72 * b * s * layers * h**2 * (1 + s / (6 * h) + v / (12 * layers * h))
    assert gpt3["model_flops_per_step"] == pytest.approx(model_flops)
    llama = train(DENSE)
    assert llama["params"] == pytest.approx(8.03e9, rel=0.01)  # Llama 3 8B
    moe = train(MOE)
    assert moe["params"] == pytest.approx(16.4e9, rel=0.03)  # DeepSeekMoE 16B
    assert moe["active_params"] == pytest.approx(2.8e9, rel=0.05)


def test_sequence_parallelism_regathers_inputs_and_cuts_activations_by_the_published_factor():
    base = {**SC21_GPT, "heads": 48, "hidden": 6144, "layers": 40, "global_batch": 64, "gpus": 64,
            "tp": 8, "pp": 8, "recompute": "selective"}
    plain, sp = train(base), train(base, sequence_parallel=True)
    tp_traffic = "tp_traffic"
    # Four allreduces are eight gathers and scatters of one volume; SP's backward gathers each block's
    # input again for its weight gradient: ten (the latency terms differ slightly).
    assert sp["step_parts_s"][tp_traffic] == pytest.approx(plain["step_parts_s"][tp_traffic] * 10 / 8, rel=1e-3)
    # Korthikanti 2022, selective recomputation: s b h (10 + 24 / t) without SP, s b h 34 / t with it.
    ratio = sp["memory"]["activations_gib"] / plain["memory"]["activations_gib"]
    assert ratio == pytest.approx((34 / 8) / (10 + 24 / 8))


def test_selective_recomputation_costs_less_time_and_saves_less_memory_than_full():
    base = {**SC21_GPT, "heads": 48, "hidden": 6144, "layers": 40, "global_batch": 64, "gpus": 64, "tp": 8,
            "pp": 8, "recompute": "none"}
    none, selective, full = (train(base, recompute=r) for r in ("none", "selective", "full"))
    assert none["step_time_s"] < selective["step_time_s"] < full["step_time_s"]
    activations = [r["memory"]["activations_gib"] for r in (none, selective, full)]
    assert activations[0] > activations[1] > activations[2]
    assert 0 < selective["step_parts_s"]["recomputation"] < full["step_parts_s"]["recomputation"]


def test_doubling_context_parallelism_halves_attention_work_per_gpu():
    one = train(DENSE, gpus=256, cp=2)
    two = train(DENSE, gpus=512, cp=4)
    per_gpu = lambda r: r["hardware_flops_per_step"] / r["gpus"]  # noqa: E731
    assert per_gpu(two) == pytest.approx(per_gpu(one) / 2)
    assert two["step_parts_s"]["forward"] < one["step_parts_s"]["forward"]
    assert two["placement"]["cp"] == "network" and one["placement"]["cp"] == "scale-up"


def test_interleaving_shrinks_the_bubble_and_grows_first_stage_memory():
    base = {**DENSE, "pp": 4, "global_batch": 256}
    plain, interleaved = train(base), train(base, virtual_stages=2)
    assert interleaved["step_parts_s"]["pipeline_bubble"] == pytest.approx(plain["step_parts_s"]["pipeline_bubble"] / 2,
                                                                          rel=0.05)
    # Korthikanti 2022: with micro-batches enough (16 here) the first stage holds (1 + (p - 1) / (p v)) x
    # the activations; with only p of them (4) its warm-up runs out first and it holds 1F1B's.
    assert interleaved["memory"]["activations_gib"] / plain["memory"]["activations_gib"] == pytest.approx(1 + 3 / 8)
    few = {**base, "global_batch": 64}
    assert train(few, virtual_stages=2)["memory"]["activations_gib"] == pytest.approx(
        train(few)["memory"]["activations_gib"])
    pp_traffic = "pp_traffic"
    assert interleaved["step_parts_s"][pp_traffic] == pytest.approx(2 * plain["step_parts_s"][pp_traffic])


def test_fp8_gemms_run_faster_but_the_step_gains_less_than_twice():
    cluster = copy.deepcopy(SELENE)
    cluster["node"]["accelerator"].update(peak_fp16_tflops=989, peak_tf32_tflops=494.5, peak_fp8_tflops=1979,
                                          memory_bandwidth_gbyte_s=3350, sm_count=132, family="hopper", tdp_w=700,
                                          scaleup_bw_gbyte_s=900)
    bf16, fp8 = train(DENSE, cluster), train(DENSE, cluster, precision="fp8")
    assert fp8["step_time_s"] < bf16["step_time_s"] < 2 * fp8["step_time_s"]
    assert fp8["step_parts_s"]["forward"] < bf16["step_parts_s"]["forward"]


def test_moe_breakdown_places_expert_parallelism_and_counts_its_all_to_all():
    inside = train(MOE, ep=8)
    assert inside["placement"]["ep"] == "scale-up"
    assert inside["step_parts_s"]["ep_all_to_all"] > 0
    spread = train(MOE, tp=2, ep=8)
    assert spread["placement"]["ep"] == "network"
    assert spread["step_parts_s"]["ep_all_to_all"] > inside["step_parts_s"]["ep_all_to_all"]
    imbalanced = train(MOE, moe_imbalance=1.5)
    assert imbalanced["step_time_s"] > inside["step_time_s"]


@pytest.mark.parametrize("change, field, reason", [
    ({"kv_heads": 5}, "workload.kv_heads", "divide the 16 attention heads"),
    ({"tp": 3}, "workload.tp", "TP does not divide the attention heads"),
    ({"cp": 3}, "workload.cp", "CP does not divide the sequence"),
    ({"ep": 3}, "workload.ep", "EP does not divide the routed experts"),
    ({"moe_top_k": 65}, "workload.moe_top_k", "cannot exceed the 64 routed experts"),
    ({"dense_layers": 28}, "workload.dense_layers", "at least one MoE layer"),
    ({"virtual_stages": 29}, "workload.virtual_stages", "at least as many layers as virtual stages"),
    ({"recompute": True}, "workload.recompute", "must be one of none, selective, full"),
])
def test_bad_layouts_name_the_field(change, field, reason):
    with pytest.raises(ScenarioError, match=reason) as error:
        train(MOE, **change)
    assert error.value.field == field


def test_a_sweep_axis_over_tp_marks_points_instead_of_failing():
    result = train(MOE, gpus=[256, 768], cp=[1, 3])
    assert result["feasible"] == [True, False]
    assert result["infeasible_reason"][1] == "CP does not divide the sequence"


def sc21_table1_rows():
    return {row["key"]: row for row in validate()[0] if row["model"] == "training: SC21 Table 1"}


def test_sc21_table1_grows_with_model_size_as_published():
    rows = sc21_table1_rows()
    assert len(rows) == 10
    assert min(rows["sc21-t1-529.6b"]["predicted"],
               rows["sc21-t1-1008b"]["predicted"]) > rows["sc21-t1-1.7b"]["predicted"]


@pytest.mark.xfail(strict=True, reason="measured mean |error| 15.7% against the 5% target (docs/engine.md)")
def test_sc21_table1_mean_error_is_at_most_5_percent():
    assert np.mean([abs(row["error"]) for row in sc21_table1_rows().values()]) <= 0.05


def test_no_training_case_is_a_calibration_point_of_the_layer_model():
    assert not any(c.calibration for c in CASES if c.model.startswith(("training: SC21", "training: Korthikanti")))
    assert sum(c.model == "training: Korthikanti 2022" for c in CASES) == 6
    assert not any(c.calibration for c in CASES if c.key.startswith("llama-13b"))


@settings(max_examples=30, deadline=None)
@given(st.sampled_from(["scaleup_bw_gbyte_s", "memory_bandwidth_gbyte_s"]), st.floats(1.1, 4.0),
       st.sampled_from([1, 2, 4, 8]), st.sampled_from(["none", "selective", "full"]), st.booleans())
def test_more_bandwidth_is_never_slower_and_utilisations_stay_fractions(field, factor, tp, recompute, sp):
    fast = copy.deepcopy(SELENE)
    fast["node"]["accelerator"][field] *= factor
    workload = {**DENSE, "tp": tp, "recompute": recompute, "sequence_parallel": sp}
    slow_result, fast_result = train(workload), train(workload, fast)
    assert fast_result["step_time_s"] <= slow_result["step_time_s"] * (1 + 1e-12)
    for result in (slow_result, fast_result):
        assert 0 < result["mfu"] <= result["hfu"] <= 1
        assert all(np.isfinite(v) and v >= 0 for v in result["step_parts_s"].values())


def test_a_single_stage_pipeline_has_no_middle_or_last_stage():
    alone = train(MOE, pp=1, gpus=64, global_batch=64)
    assert alone["stage_time_s"]["middle"] is None and alone["stage_time_s"]["last"] is None
    more_dense = train(MOE, pp=1, gpus=64, global_batch=64, dense_layers=8)
    assert more_dense["step_parts_s"]["forward"] != pytest.approx(alone["step_parts_s"]["forward"])
    two = train(MOE, pp=2, gpus=64, global_batch=64)
    assert two["stage_time_s"]["middle"] is None and two["stage_time_s"]["last"] > 0


def test_a_point_gives_the_same_answer_alone_and_beside_others():
    dense = {**DENSE, "pp": 1, "gpus": 64, "global_batch": 64}
    alone = train(dense)
    together = train(dense, experts=[0, 8], moe_top_k=[0, 2], ep=[1, 1])
    for key in ("step_time_s", "mfu", "params"):
        assert together[key][0] == pytest.approx(alone[key]), key
    for stage, seconds in alone["stage_time_s"].items():
        assert together["stage_time_s"][stage][0] == (None if seconds is None else pytest.approx(seconds)), stage


def test_a_grid_that_repeats_layouts_gives_each_point_its_answer_alone():
    # 300 points (above DISTINCT_SHAPES_FROM) over 12 layouts: the GEMMs are timed once per distinct
    # layout and handed back to every point; each must equal the point evaluated alone.
    layouts = [(tp, mb, ep) for tp in (1, 2, 4) for mb in (1, 2) for ep in (1, 8)]
    chosen = [layouts[i % len(layouts)] for i in range(300)]
    assert len(chosen) >= DISTINCT_SHAPES_FROM
    grid = train(MOE, tp=[c[0] for c in chosen], micro_batch=[c[1] for c in chosen], ep=[c[2] for c in chosen])
    for index in range(len(layouts)):
        tp, mb, ep = layouts[index]
        alone = train(MOE, tp=tp, micro_batch=mb, ep=ep)
        for key in ("step_time_s", "mfu"):
            assert grid[key][index] == pytest.approx(alone[key], rel=1e-12), (layouts[index], key)
        assert grid["step_parts_s"]["forward"][index] == pytest.approx(alone["step_parts_s"]["forward"], rel=1e-12)


def test_distinct_points_groups_equal_points_and_never_groups_different_ones():
    rng = np.random.default_rng(0)
    base = rng.integers(1, 9, (3, 5)).astype(float)  # 5 distinct points of 3 values
    which = rng.integers(0, 5, 400)
    table, inverse = distinct_points(list(base[:, which]))
    assert np.array_equal(table[:, inverse], base[:, which]) and table.shape[1] <= 5
    assert distinct_points(list(rng.random((3, 400)))) is None  # every point distinct: not worth it
    with_nan = base[:, which].copy()
    with_nan[1, 7] = np.nan
    assert distinct_points(list(with_nan)) is None
    # Points whose weighted sums may collide (a step along one weight traded for one along the other)
    # are either told apart or refused, never merged.
    weights = 1.0 + np.modf(np.arange(1, 3) * (5 ** 0.5 - 1) / 2)[0]
    pair = np.array([[0.0, weights[1]], [0.0, -weights[0]]])[:, np.arange(200) % 2]
    found = distinct_points(list(pair))
    assert found is None or np.array_equal(found[0][:, found[1]], pair)


def test_zero_shards_expert_states_over_the_expert_copies_only():
    result = train(MOE, zero_stage=1)
    dp, ep = result["dp"], MOE["ep"]
    dense = (result["params"] - result["expert_params"]) / MOE["pp"]
    experts = result["expert_params"] / (MOE["pp"] * ep)
    assert result["memory"]["optimizer_states_gib"] * 2**30 == pytest.approx(12 * (dense / dp + experts / (dp / ep)))


def test_fewer_kv_heads_than_tp_ranks_are_replicated():
    mqa, gqa = train(DENSE, tp=8, kv_heads=1), train(DENSE, tp=8, kv_heads=8)
    assert mqa["memory"]["activations_gib"] == pytest.approx(gqa["memory"]["activations_gib"])
    assert mqa["step_parts_s"]["forward"] == pytest.approx(gqa["step_parts_s"]["forward"])
    assert mqa["params"] < gqa["params"]


def test_a_scale_up_topology_without_bandwidth_is_not_a_scale_up_domain():
    cluster = copy.deepcopy(SELENE)
    cluster["node"]["accelerator"]["scaleup_bw_gbyte_s"] = 0
    assert train(DENSE, cluster)["placement"]["tp"] == "PCIe"
    assert train(DENSE)["placement"]["tp"] == "scale-up"


def test_a_cnn_refuses_model_parallelism():
    with pytest.raises(ScenarioError, match="CNN trains data-parallel only") as error:
        train({"kind": "cnn", "flops_per_sample_forward": 3e10, "params": 1.4e8, "global_batch": 512,
               "gpus": 64, "precision": "tf32", "tp": 2})
    assert error.value.field == "workload.tp"
