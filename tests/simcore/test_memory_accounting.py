"""Memory as the frameworks count it: ZeRO's shards over the data-parallel x context-parallel ranks, and
the loss's logits on the last pipeline stage."""
import copy

import pytest

from simcore import evaluate
from simcore.formulas.training import GIB, LOGIT_BYTES
from simcore.tools.references import DGXC_FABRIC, LLAMA3_NODE

LLAMA_8B = {"kind": "transformer", "layers": 32, "hidden": 4096, "heads": 32, "kv_heads": 8, "ffn_hidden": 14336,
            "gated_mlp": True, "tied_embeddings": False, "vocab": 128256, "seq_len": 8192, "micro_batch": 1,
            "global_batch": 8, "zero_stage": 1, "grad_bytes": 4, "recompute": "full"}
CLUSTER = {"node_count": 1, "node": LLAMA3_NODE, "fabric": DGXC_FABRIC, "prices": {"currency": "REL"}}


def memory(**changes):
    return evaluate({"cluster": copy.deepcopy(CLUSTER), "workload": {**LLAMA_8B, **changes}})["training"]["memory"]


def test_optimizer_states_shard_over_the_data_and_context_parallel_ranks():
    # 8 GPUs as DP 8 or as DP 4 x CP 2: Megatron-Core's distributed optimizer shards over dp_cp, 8 ranks either way.
    plain, with_cp = memory(), memory(cp=2, global_batch=4)
    assert with_cp["optimizer_states_gib"] == pytest.approx(plain["optimizer_states_gib"])
    params = 32 * (4096 * (4096 + 2 * 1024 + 4096) + 3 * 4096 * 14336 + 2 * 4096) + 2 * 128256 * 4096 + 4096
    assert plain["optimizer_states_gib"] == pytest.approx(params * 12 / 8 / GIB, rel=0.001)


def test_the_last_stage_holds_one_micro_batchs_logits_as_its_loss_keeps_them():
    fused, unfused = memory(), memory(cross_entropy_fusion=False)
    logits = 8192 * 128256  # one micro-batch's tokens times the vocabulary (TP 1, CP 1)
    assert unfused["activations_gib"] - fused["activations_gib"] == pytest.approx(
        logits * (LOGIT_BYTES[False] - LOGIT_BYTES[True]) / GIB)
    # Split over TP (the vocabulary) and CP (the tokens): a quarter with TP 2 x CP 2.
    split = memory(tp=2, cp=2, global_batch=2, sequence_parallel=True)
    split_unfused = memory(tp=2, cp=2, global_batch=2, sequence_parallel=True, cross_entropy_fusion=False)
    assert split_unfused["activations_gib"] - split["activations_gib"] == pytest.approx(
        logits / 4 * (LOGIT_BYTES[False] - LOGIT_BYTES[True]) / GIB)
