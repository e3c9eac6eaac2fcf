"""Where a real step's time goes: attention at measured rates, tensor-parallel overlap holding SMs,
and the slowest GPU pacing a synchronous step."""
import copy

import numpy as np
import pytest

from simcore import ScenarioError, evaluate
from simcore.formulas import overlap
from simcore.formulas.attention import attention_shares, kernel_row
from simcore.formulas.compute import expected_max_normal, straggler_slowdown
from simcore.formulas.devices import FAMILIES
from simcore.formulas.transformer import Device, gemm_time_s
from simcore.tools.references import DGXC_FABRIC, DGXC_LLAMA_70B, LLAMA3_NODE, SC21_GPT, SELENE

H100 = Device(peak_flops=np.asarray(989e12), attention_peak_flops=np.asarray(989e12), sm_count=np.asarray(132.0),
              gemm_fraction=np.asarray(794.5 / 989), attention_gemm_fraction=np.asarray(794.5 / 989),
              attention_kernel=np.asarray(kernel_row("hopper", "cudnn")), gemm_operand_bytes=np.asarray(2.0),
              hbm_bytes_s=np.asarray(2.97e12))
H100_CLUSTER = {"node_count": 8, "node": LLAMA3_NODE, "fabric": DGXC_FABRIC}
LLAMA_70B = {**DGXC_LLAMA_70B, "precision": "bf16", "global_batch": 128}


def train(workload, cluster=H100_CLUSTER, **changes):
    return evaluate({"cluster": copy.deepcopy(cluster), "workload": {**workload, **changes}})["training"]


def test_attention_rates_are_the_published_figures_at_the_measured_points():
    cudnn, flash3 = kernel_row("hopper", "cudnn"), kernel_row("hopper", "flash3")
    # FlashAttention-3 Fig. 5(c)/(d) and Fig. 6(b): head width 128 on H100 at 1,830 MHz.
    forward, backward = attention_shares(cudnn, 128, 8192, False)
    assert (forward * 989, backward * 989) == pytest.approx((600, 518))
    assert attention_shares(cudnn, 128, 8192, True)[0] * 989 == pytest.approx(529)
    assert attention_shares(flash3, 128, 2048, False)[0] * 989 == pytest.approx(625)
    # No causal backward was measured: the non-causal one scaled by the forward's causal ratio.
    assert attention_shares(flash3, 128, 4096, True)[1] * 989 == pytest.approx(542 * 579 / 638)
    # Between measured lengths by the logarithm; held at the ends.
    between = attention_shares(cudnn, 128, 2 ** 12.5, True)[0] * 989
    assert between == pytest.approx((518 + 529) / 2)
    assert attention_shares(cudnn, 128, 65536, True)[0] == attention_shares(cudnn, 128, 16384, True)[0]
    # FlashAttention-2 Fig. 4 on A100: forward and backward together, one rate for both passes.
    ampere = kernel_row("ampere", "default")
    assert [v * 312 for v in attention_shares(ampere, 128, 4096, True)] == pytest.approx([173, 173])


def test_context_parallel_chunks_run_attention_slower_per_flop():
    # The 70B recipe's CP 2 runs 4k-token chunks of its 8k sequence: per FLOP slower than 8k.
    one, two = train(LLAMA_70B, cp=1, tp=8, global_batch=64), train(LLAMA_70B, tp=8, global_batch=64)
    cudnn = kernel_row("hopper", "cudnn")
    assert attention_shares(cudnn, 128, 4096, True)[0] < attention_shares(cudnn, 128, 8192, True)[0]
    # CP halves each rank's tokens; its layers' compute more than halves only where attention is slower.
    assert two["step_parts_s"]["forward"] > one["step_parts_s"]["forward"] / 2


def test_an_unmeasured_kernel_is_a_field_error():
    with pytest.raises(ScenarioError) as error:
        train({**SC21_GPT, "heads": 32, "hidden": 4096, "layers": 4, "global_batch": 64, "gpus": 64,
               "flash_attention": True, "attention_kernel": "flash3"}, cluster=SELENE)
    assert error.value.field == "workload.attention_kernel"
    assert "Ampere" in error.value.reason


def test_a_chunked_gemm_pays_its_waves_per_chunk_and_held_sms_slow_it():
    whole = float(gemm_time_s(4096, 2560, 8192, H100))
    # QKV of Llama 3 70B at TP 4 in 4 ring-exchange chunks: 1,024 rows fill 80 of 132 SMs' tiles.
    chunked = float(gemm_time_s(4096, 2560, 8192, H100, chunks=4.0))
    assert chunked > 1.2 * whole
    held = float(gemm_time_s(4096, 28672 / 4, 8192, H100, held_sms=24.0))
    assert held > float(gemm_time_s(4096, 28672 / 4, 8192, H100)) * 1.1


def test_published_userbuffers_configurations_by_model_and_precision():
    bf16 = overlap.userbuffers(True, "hopper", False, np.asarray(8192.0), np.asarray(4.0), np.nan)
    assert (float(bf16.proj_sms), float(bf16.fc2_sms), float(bf16.qkv_wgrad_sms)) == (24, 16, 24)
    assert float(bf16.proj_method) == overlap.PIPELINE
    fp8 = overlap.userbuffers(True, "hopper", True, np.asarray(8192.0), np.asarray(4.0), np.nan)
    assert float(fp8.proj_method) == overlap.RING and float(fp8.reduce_scatter("proj", 4.0)[0]) == 4
    other = overlap.userbuffers(True, "hopper", False, np.asarray(5120.0), np.asarray(4.0), np.nan)
    assert float(other.proj_sms) == 16 and float(other.qkv_dgrad_sms) == 16  # Transformer Engine's defaults
    grid = overlap.userbuffers(True, "hopper", False, np.array([8192.0, 16384.0]), np.array([4.0, 8.0]), 8.0)
    assert list(grid.fc2_sms) == [8, 8] and list(grid.qkv_wgrad_sms) == [8, 8]


def test_overlap_formulas():
    # A ring exchange over 4 ranks: three exchanges, each behind a quarter of the GEMM.
    assert float(overlap.ring_gather_exposed_s(3.0, 8.0, 4.0)) == 0.0
    assert float(overlap.ring_gather_exposed_s(3.0, 2.0, 4.0)) == pytest.approx(3 * (1 - 0.5))
    # Pipelined over 4 splits: the last split's reduce-scatter always shows.
    assert float(overlap.reduce_scatter_exposed_s(4.0, 8.0, 4.0, overlap.PIPELINE, 9.0)) == pytest.approx(1.0)
    assert float(overlap.reduce_scatter_exposed_s(4.0, 8.0, 4.0, overlap.RING, 0.5)) == pytest.approx(1.5)
    exposed, sm_cost = overlap.bulk_s(3.0, 2.0, 0.25)
    assert (float(exposed), float(sm_cost)) == pytest.approx((1.0, 0.5))


def test_tp_overlap_hides_traffic_but_its_sms_and_chunks_cost_compute():
    plain, overlapped = train(LLAMA_70B, tp_comm_overlap=False), train(LLAMA_70B)
    assert overlapped["step_parts_s"]["tp_traffic"] < plain["step_parts_s"]["tp_traffic"] / 2
    # Without TP overlap the SMs communication holds are those of the hidden data-parallel traffic alone.
    hidden_dp_s = plain["dp_allreduce_s"] - plain["step_parts_s"]["dp_exposed"]
    assert plain["step_parts_s"]["comm_sms"] == pytest.approx(0.189 * hidden_dp_s)
    assert overlapped["step_parts_s"]["comm_sms"] > plain["step_parts_s"]["comm_sms"]
    assert overlapped["step_parts_s"]["forward"] > plain["step_parts_s"]["forward"]
    fewer = train(LLAMA_70B, tp_overlap_sms=4)
    assert fewer["step_parts_s"]["comm_sms"] < overlapped["step_parts_s"]["comm_sms"]
    # Without sequence parallelism userbuffers do not run (Megatron-Bridge turns the overlap off).
    no_sp = {**LLAMA_70B, "sequence_parallel": False}
    assert train(no_sp)["step_time_s"] == pytest.approx(train(no_sp, tp_comm_overlap=False)["step_time_s"])


def test_hidden_nccl_gradient_traffic_slows_the_compute_beside_it():
    """Lee et al. (arXiv:2507.03114): GEMMs beside NCCL collectives run 18.9% slower on A100/H100."""
    nccl = train(LLAMA_70B, tp_comm_overlap=False)
    hidden_s = nccl["dp_allreduce_s"] - nccl["step_parts_s"]["dp_exposed"]
    assert hidden_s > 0
    assert nccl["step_parts_s"]["comm_sms"] == pytest.approx(0.189 * hidden_s, rel=1e-9)
    # Nothing overlaps when the gradient reduction waits for the backward pass.
    serial = train(LLAMA_70B, tp_comm_overlap=False, overlap_grad_reduce=False)
    assert serial["step_parts_s"]["comm_sms"] == 0
    assert serial["step_parts_s"]["dp_exposed"] == pytest.approx(serial["dp_allreduce_s"])
    # HFReduce reduces on the host through copy engines and holds no SMs (FF section VI).
    hfreduce = train(LLAMA_70B, tp_comm_overlap=False, collective="hfreduce")
    assert hfreduce["dp_allreduce_s"] > hfreduce["step_parts_s"]["dp_exposed"]
    assert hfreduce["step_parts_s"]["comm_sms"] == 0


def test_the_slowest_gpu_paces_the_step():
    assert float(expected_max_normal(8)) == pytest.approx(1.42360, abs=1e-4)
    assert float(expected_max_normal(1000)) == pytest.approx(3.2414, abs=1e-3)  # tabulated order statistics
    # Hopper's 5% across a node: sigma = 5% / 2.847; 64 GPUs wait 2.34 sigma.
    assert float(straggler_slowdown(0.05, 64)) == pytest.approx(1 / (1 - 0.05 / 2.8472 * 2.3437) - 1, rel=1e-3)
    assert float(straggler_slowdown(float("nan"), 4096)) == 0.0
    small = train(LLAMA_70B)
    large = train(LLAMA_70B, cluster={**H100_CLUSTER, "node_count": 256}, global_batch=4096)
    parts = small["step_parts_s"]
    computing = sum(parts[k] for k in ("forward", "backward", "recomputation", "optimizer", "pipeline_bubble",
                                       "comm_sms"))
    assert parts["stragglers"] == pytest.approx(float(straggler_slowdown(0.05, 64)) * computing)
    assert np.isnan(FAMILIES["ampere"].rate_spread)
    ampere = train({**SC21_GPT, "heads": 32, "hidden": 4096, "layers": 4, "global_batch": 64, "gpus": 64},
                   cluster=SELENE)
    assert ampere["step_parts_s"]["stragglers"] == 0
    # 2,048 GPUs wait for a slower slowest GPU than 64 do: a larger share of the same per-GPU work.
    share = {name: r["step_parts_s"]["stragglers"] / r["step_time_s"] for name, r in (("64", small), ("2048", large))}
    assert share["2048"] > share["64"] * 1.3


def test_fp8_recipes_move_the_bytes_their_quantization_needs():
    from simcore.formulas.transformer import fp8_cast_bytes
    # Hopper: a row-wise and a transposed column-wise copy; Blackwell's tensor cores read one copy both ways.
    assert float(fp8_cast_bytes("delayed", False)) == 4.0
    assert float(fp8_cast_bytes("delayed", True)) == 3.0
    assert float(fp8_cast_bytes("tensorwise", False)) == 6.0  # the amax read first
    assert float(fp8_cast_bytes("mxfp8", True)) == pytest.approx(2 + 2 * (1 + 1 / 32))
    assert float(fp8_cast_bytes("blockwise", False)) == pytest.approx(2 + 2 * (1 + 4 / 128))
    delayed = train(LLAMA_70B, precision="fp8")
    current = train(LLAMA_70B, precision="fp8", fp8_recipe="tensorwise")
    assert current["step_parts_s"]["forward"] > delayed["step_parts_s"]["forward"]
    assert train(LLAMA_70B, fp8_recipe="tensorwise")["step_time_s"] == train(LLAMA_70B)["step_time_s"]  # BF16
    with pytest.raises(ScenarioError) as error:
        train(LLAMA_70B, precision="fp8", fp8_recipe="mxfp8")
    assert error.value.field == "workload.fp8_recipe"


def test_llama3_405b_fits_interleaved_as_meta_ran_it():
    from simcore.tools.references import LLAMA3_405B, LLAMA3_CLUSTER
    result = evaluate({"cluster": copy.deepcopy(LLAMA3_CLUSTER), "workload": LLAMA3_405B})["training"]
    memory = result["memory"]
    assert result["feasible"]
    # The busiest rank is a middle one: 8 layers x 16 micro-batches (16 on 16 stages caps the warm-up)
    # of 31.75 s b h / t bytes a layer (no dropout masks in a Llama-style layer).
    per_layer = 8192 * 16384 * 31.75 / 8
    assert memory["activations_gib"] == pytest.approx(128 * per_layer / 2**30, rel=0.02)
    assert memory["per_gpu_gib"] < memory["allocatable_gib"]
    # With 32 micro-batches the interleaved warm-up is no longer capped: more in flight than 1F1B.
    longer = {**LLAMA3_405B, "global_batch": 4096}
    interleaved = evaluate({"cluster": copy.deepcopy(LLAMA3_CLUSTER), "workload": longer})["training"]["memory"]
    plain = evaluate({"cluster": copy.deepcopy(LLAMA3_CLUSTER),
                      "workload": {**longer, "virtual_stages": 1}})["training"]["memory"]
    assert interleaved["activations_gib"] > plain["activations_gib"]


def test_moe_dispatchers_run_at_their_measured_rates_inside_a_rack():
    from simcore.tools.references import scenario
    gb200 = scenario("dgxc-deepseek-v3-gb200-128")  # DeepSeek-V3 on 128 GB200: EP 32 inside one NVL72 rack
    cluster, workload = gb200["cluster"], gb200["workload"]
    # An even split without MTP: the last stage (16 MoE layers and the output layer) is the slowest for every
    # dispatcher, so the ratio of their all-to-all times is the ratio of their rates.
    workload = {**workload, "first_stage_layers": None, "last_stage_layers": None, "mtp_layers": 0}
    a2a = {name: train(workload, cluster=cluster, moe_dispatcher=name)["step_parts_s"]["ep_all_to_all"]
           for name in ("alltoall", "hierarchical", "hybridep")}
    # DeepEP's measured 400 / 190 GB/s on GB200 against HybridEP's 715 / 658: (1/400 + 1/190) / (1/715 + 1/658).
    assert a2a["hierarchical"] / a2a["hybridep"] == pytest.approx((1 / 400 + 1 / 190) / (1 / 714.66 + 1 / 657.72),
                                                                  rel=0.02)
    assert a2a["alltoall"] < a2a["hierarchical"]  # NCCL at the link's measured share, DeepEP below it there
    # In a DGX H100 HybridEP's measured 369 GB/s is the NVLink's nccl-tests share (370 of 450), the rate
    # DeepEP, with no measurement of its own, runs at; across EP 64's eight nodes each runs at its measured
    # rate there (DeepEP v2 61 / 61 GB/s at 32 ranks, held beyond; HybridEP 41.2 / 46.6 at 64): HybridEP is slower.
    h100 = scenario("dgxc-deepseek-v3-h100-1024")
    h100_cluster, h100_workload = h100["cluster"], h100["workload"]
    hopper = {name: train(h100_workload, cluster=h100_cluster, moe_dispatcher=name)["step_parts_s"]["ep_all_to_all"]
              for name in ("hierarchical", "hybridep")}
    assert hopper["hybridep"] > 1.2 * hopper["hierarchical"]


def test_deepep_on_blackwell_slows_from_ep8_to_ep32_as_measured():
    from simcore.stages.job import dispatcher_rates

    blackwell = FAMILIES["blackwell"]

    def rates(ep):
        got = dispatcher_rates(blackwell.dispatcher_gbyte_s, "hierarchical", np.asarray(True), np.asarray(float(ep)))
        return float(got["dispatch_gbyte_s"]), float(got["combine_gbyte_s"])

    assert rates(8) == pytest.approx((726, 740)) and rates(32) == pytest.approx((400, 190))
    assert rates(16) == pytest.approx(((726 * 400) ** 0.5, (740 * 190) ** 0.5))  # geometric in log2 of the size
    assert rates(4) == rates(8) and rates(72) == rates(32)  # held beyond the measured sizes
    over_pcie = dispatcher_rates(blackwell.dispatcher_gbyte_s, "hierarchical", np.asarray(False), np.asarray(8.0))
    assert np.isnan(over_pcie["dispatch_gbyte_s"])
    ampere = dispatcher_rates(FAMILIES["ampere"].dispatcher_gbyte_s, "hybridep", np.asarray(True), 8.0)
    assert np.isnan(ampere["dispatch_gbyte_s"])


def test_the_alltoall_dispatcher_shuffles_tokens_through_hbm_and_deepep_inside_its_kernels():
    from types import SimpleNamespace

    from simcore.formulas.transformer import moe_permute_s

    model = SimpleNamespace(top_k=np.asarray(8.0), hidden=np.asarray(7168.0))
    per_element = 2 / 2.97e12
    tokens, pairs = np.asarray(4096.0), np.asarray(4096.0 / 2 * 8)

    def layout(permutes):
        return SimpleNamespace(tp=np.asarray(2.0), dispatcher_permutes=np.asarray(permutes))

    routed = 4096 / 2  # sequence-parallel MoE: each TP rank routes its share
    expected = (2 * routed + 2 * routed * 8 + 4 * pairs) * 7168 * per_element
    assert float(moe_permute_s(model, layout(False), tokens, pairs, per_element)) == pytest.approx(expected)
    assert float(moe_permute_s(model, layout(True), tokens, pairs, per_element)) == 0
    from simcore.tools.references import DEEPSEEK_V3_CLUSTER, scenario
    workload = scenario("dgxc-deepseek-v3-h100-1024")["workload"]
    # Stages of 4 MoE layers and no MTP: the last (with the output layer) is the slowest either way.
    workload = {**workload, "first_stage_layers": None, "last_stage_layers": None, "mtp_layers": 0, "layers": 64}
    alltoall = train(workload, cluster=DEEPSEEK_V3_CLUSTER)["step_parts_s"]["forward"]
    deepep = train(workload, cluster=DEEPSEEK_V3_CLUSTER, moe_dispatcher="hierarchical")["step_parts_s"]["forward"]
    assert alltoall > deepep
