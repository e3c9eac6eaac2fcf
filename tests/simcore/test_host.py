"""The host's side of a step: kernel launches counted from the layer, at the node CPU's measured
time per eager op, against the GPU's compute; CUDA graphs and fused kernels as workload features."""
import copy
from types import SimpleNamespace

import numpy as np
import pytest

from simcore import evaluate
from simcore.formulas import training
from simcore.formulas.devices import FAMILIES
from simcore.formulas.host import X86_HOST_MODULE_S, X86_HOST_OP_S, Host, layer_launches, synchronized_s, te_modules
from simcore.formulas.transformer import rope_elements
from simcore.tools.references import GB200_TRAY, LLAMA3_NODE, NVL72_RACKS

LLAMA = SimpleNamespace(gated=np.asarray(True), mla=np.asarray(False), q_lora_rank=np.asarray(0.0),
                        experts=np.asarray(0.0), shared_experts=np.asarray(0.0), heads=np.asarray(32.0),
                        head_dim=np.asarray(64.0), rope_head_dim=np.asarray(0.0),
                        kv_heads_per_rank=lambda tp: np.asarray(8.0))
MOE = SimpleNamespace(**{**vars(LLAMA), "experts": np.asarray(64.0), "shared_experts": np.asarray(1.0)})


def layout(**changes):
    values = {"tp": np.asarray(1.0), "sp": np.asarray(False), "ep": np.asarray(8.0), "fp8": np.asarray(False),
              "fused": np.asarray(True), "rope_fused": np.asarray(True)}
    return SimpleNamespace(**{**values, **{key: np.asarray(value) for key, value in changes.items()}})


def host(dispatcher_fused=False, **changes):
    values = {"op_s": np.asarray(X86_HOST_OP_S), "module_s": np.asarray(X86_HOST_MODULE_S),
              "cuda_graphs": np.asarray(False),
              "router_fused": np.asarray(False), "permute_fused": np.asarray(True)}
    return Host(**{**values, **{key: np.asarray(value) for key, value in changes.items()}},
                dispatcher_fused=dispatcher_fused)


def test_a_dense_layer_launches_what_its_structure_needs():
    # Forward: norm, QKV, rotary on query and key, attention, projection, residual; norm, fc1,
    # SwiGLU, fc2, residual. Backward: every GEMM twice, attention's two kernels.
    plain = layer_launches(LLAMA, layout(), host())
    assert (plain["dense_f"], plain["dense_b"]) == (12, 17)
    fp8 = layer_launches(LLAMA, layout(fp8=True), host())
    assert (fp8["dense_f"], fp8["dense_b"]) == (12 + 4, 17 + 4)  # a quantization per GEMM each way
    sp = layer_launches(LLAMA, layout(tp=8.0, sp=True), host())
    assert (sp["dense_f"], sp["dense_b"]) == (12 + 4, 17 + 6)  # Megatron's 10 collectives a layer
    unfused = layer_launches(LLAMA, layout(rope_fused=False, fused=False), host())
    assert (unfused["dense_f"] - 12, unfused["dense_b"] - 17) == (8 + 2 + 1, 8 + 1)


def test_moe_routing_launches_as_the_gb200_write_up_counted_them():
    base = layer_launches(MOE, layout(), host())
    fused = layer_launches(MOE, layout(), host(router_fused=True))
    assert base["moe_f"] - fused["moe_f"] == 72 - 31
    deepep = layer_launches(MOE, layout(), host(dispatcher_fused=True))
    # DeepEP: router and preprocessing in 17; the token-count exchange, permute and unpermute inside its kernels.
    assert base["moe_f"] - deepep["moe_f"] == (72 - 17) + 3
    # One GEMM launch per local expert: twice as many experts a rank, two more launches a GEMM.
    assert (layer_launches(MOE, layout(ep=4.0), host())["moe_f"] - base["moe_f"]) == 2 * 8
    graphed = layer_launches(MOE, layout(), host(cuda_graphs=True))
    # Attention and the router's graph replay once each; the routed experts stay eager.
    assert graphed["moe_f"] == 2 + 2 + 3 + 2 * 8 + 1
    assert layer_launches(LLAMA, layout(), host(cuda_graphs=True))["dense_f"] == 1
    # Transformer Engine modules forward: attention's 2 linears and core, the router's plain linear none, two
    # grouped linears and the shared expert's two; graphed, the routed experts' two stay eager.
    assert te_modules(MOE, host())["moe_f"] == 3 + 2 + 2
    assert te_modules(MOE, host(cuda_graphs=True))["moe_f"] == 2


SMALL = {"kind": "transformer", "layers": 16, "hidden": 2048, "heads": 32, "kv_heads": 8, "ffn_hidden": 8192,
         "gated_mlp": True, "vocab": 128256, "seq_len": 512, "global_batch": 64, "micro_batch": 1}
TWO_TRAYS = {**NVL72_RACKS, "node_count": 2}


def train(cluster=TWO_TRAYS, **changes):
    return evaluate({"cluster": copy.deepcopy(cluster), "workload": {**SMALL, **changes}})["training"]


def test_a_small_model_on_grace_waits_for_its_host_and_cuda_graphs_remove_the_wait():
    eager = train()
    waited = eager["step_parts_s"]["host_launch"]
    assert waited > 0.05 * eager["step_time_s"]
    graphed = train(cuda_graphs=True)
    assert graphed["step_parts_s"]["host_launch"] == 0
    assert graphed["step_time_s"] == pytest.approx(eager["step_time_s"] - waited)
    # Host-bound both ways, each launch adds its host time: 8 micro-batches x 16 layers x 29 launches, but
    # the forward's 5 Transformer Engine modules (QKV, attention, projection, fc1, fc2) cost their measured
    # time per module instead of a launch each.
    assert te_modules(LLAMA, host())["dense_f"] == 5
    slower = {**TWO_TRAYS, "node": {**GB200_TRAY, "host_op_us": 2 * GB200_TRAY["host_op_us"]}}
    more = train(cluster=slower)["step_parts_s"]["host_launch"] - waited
    assert more == pytest.approx(8 * 16 * (12 - 5 + 17) * GB200_TRAY["host_op_us"] * 1e-6)
    heavier = {**TWO_TRAYS, "node": {**GB200_TRAY, "host_module_us": 2 * GB200_TRAY["host_module_us"]}}
    more = train(cluster=heavier)["step_parts_s"]["host_launch"] - waited
    assert more == pytest.approx(8 * 16 * 5 * GB200_TRAY["host_module_us"] * 1e-6)
    # An x86 host (no measurement given: a DGX H100's Xeon) launches faster.
    x86 = {**TWO_TRAYS, "node": {**GB200_TRAY, "host_op_us": None}}
    assert train(cluster=x86)["step_parts_s"]["host_launch"] < waited


def test_a_moe_dispatch_waits_on_the_host_and_splits_the_forward_in_two():
    """Megatron-Core's dispatchers copy the token counts to the host before the exchange: each side
    of that wait takes the longer of its host and GPU time."""
    # Host-heavy routing after a GPU-heavy attention: 1 + 2.5 ms against max(3, 2) = 3 ms unsynchronized.
    assert synchronized_s(0.5e-3, 2.5e-3, 1.0e-3, 1.0e-3) == pytest.approx(0.5e-3)
    assert synchronized_s(1.0e-3, 1.0e-3, 2.0e-3, 2.0e-3) == 0.0  # the GPU binds on both sides: nothing added
    assert synchronized_s(2.0e-3, 2.0e-3, 1.0e-3, 1.0e-3) == 0.0  # the host binds on both sides: nothing added
    # Before the wait: attention's launches (a dense layer's but its MLP block's five: norm, fc1, SwiGLU,
    # fc2, residual) and the router's (its gate GEMM and 72 kernels), not the experts'.
    split = layer_launches(MOE, layout(), host())
    assert split["moe_f_before_sync"] == layer_launches(LLAMA, layout(), host())["dense_f"] - 5 + 1 + 72
    assert te_modules(MOE, host())["moe_f_before_sync"] == 3
    assert layer_launches(MOE, layout(), host(cuda_graphs=True))["moe_f_before_sync"] == 2


def test_the_dispatchs_wait_adds_host_time_to_a_moe_step_on_grace(monkeypatch):
    """On GB200 trays a MoE layer's long attention binds on the GPU and its routing on the host: the
    wait between them shows in the step; a dense model has no wait."""
    moe = {"experts": 16, "moe_top_k": 2, "expert_ffn_hidden": 2048, "ep": 8, "gpus": 8, "seq_len": 8192,
           "global_batch": 16}
    synced = train(**moe)["step_parts_s"]["host_launch"]
    dense = train(seq_len=8192, global_batch=16, gpus=8)["step_parts_s"]["host_launch"]
    monkeypatch.setattr(training, "synchronized_s", lambda *sides: 0.0)
    assert synced > train(**moe)["step_parts_s"]["host_launch"] * 1.2
    assert train(seq_len=8192, global_batch=16, gpus=8)["step_parts_s"]["host_launch"] == dense


def test_a_large_layer_hides_its_launches():
    assert train(hidden=8192, heads=64, ffn_hidden=28672, layers=4, seq_len=8192)["step_parts_s"]["host_launch"] == 0


def test_fused_cross_entropy_and_rotary_embedding_move_fewer_bytes():
    cluster = {"node_count": 1, "node": LLAMA3_NODE, "fabric": {"switch_radix": 64, "switch_gbit_s": 400}}
    hbm_bytes_s = 3350e9 * FAMILIES["hopper"].hbm_fraction
    fused, plain = train(cluster), train(cluster, cross_entropy_fusion=False)
    tokens_logits = 8 * SMALL["seq_len"] * 128256  # micro-batches x tokens x vocabulary
    for part, saved in (("forward", 10 - 2), ("backward", 6 - 4)):  # bytes a logit, unfused against fused
        assert plain["step_parts_s"][part] - fused["step_parts_s"][part] == pytest.approx(
            tokens_logits * saved / hbm_bytes_s)
    unfused = train(cluster, rope_fusion=False)
    rotated = (32 + 8) * 64  # query and key heads x head width, per token
    assert rope_elements(LLAMA, layout()) == 2 * rotated
    assert unfused["step_parts_s"]["forward"] - fused["step_parts_s"]["forward"] == pytest.approx(
        8 * 16 * SMALL["seq_len"] * 8 * rotated * 2 / hbm_bytes_s)
