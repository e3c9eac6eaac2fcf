"""MoE dispatch and combine across nodes at the dispatchers' measured rates (DeepEP's and HybridEP's
benchmarks count a copy per token and destination node, the sender's own node included)."""
from dataclasses import replace

import numpy as np
import pytest

from simcore import evaluate
from simcore.formulas import collectives
from simcore.formulas.devices import FAMILIES
from simcore.formulas.training import Dispatch, Link, all_to_all_s, dispatch_copies
from simcore.tools.references import LLAMA3_NODE

# A Qwen3-30B-A3B-shaped MoE (128 experts of 768, 8 a token) over EP 16 on two DGX H100 nodes.
MOE = {"kind": "transformer", "layers": 48, "hidden": 2048, "heads": 32, "kv_heads": 4, "head_dim": 128,
       "ffn_hidden": 6144, "gated_mlp": True, "tied_embeddings": False, "vocab": 151936, "seq_len": 4096,
       "experts": 128, "moe_top_k": 8, "expert_ffn_hidden": 768, "ep": 16, "zero_stage": 1, "global_batch": 256,
       "moe_router_fusion": True}
CLUSTER = {"node_count": 2, "node": LLAMA3_NODE, "fabric": {"switch_radix": 64, "switch_gbit_s": 400, "layers": 2},
           "prices": {"currency": "REL"}}


def test_a_measured_rate_counts_the_senders_own_node_beside_the_remote_ones():
    network = Link(np.array(50.0), np.array(3.7e-6))
    dispatch = Dispatch(inside=Link(np.array(370.0), np.array(3.3e-6)), network=network, ranks_in_domain=np.array(8.0),
                        domains=np.array(2.0), hierarchical=True, max_domains=np.array(np.nan), overlap=False,
                        comm_sm_share=np.array(0.0))
    copies = dispatch_copies(8, 8.0, 2.0, True, np.nan)
    assert copies[0] == pytest.approx(2 * (1 - 0.5**8) / 2)  # remote copies a token: one per remote node it needs
    line_s = all_to_all_s(1e6, copies, dispatch)
    measured_s = all_to_all_s(1e6, copies, dispatch, network_rate_gbyte_s=np.array(54.47))
    # Counted over both nodes (two copies for every remote one here) at 54.47 GB/s: a remote copy at 27.2 GB/s.
    assert float(measured_s - 3.7e-6) == pytest.approx(copies[0] * 2 * 1e6 / (54.47 * collectives.GB))
    assert float(measured_s) > 1.6 * float(line_s)  # the line rate would be 50 GB/s a remote copy


def test_hybridep_across_two_h100_nodes_runs_at_its_measured_rate_not_the_line_rate(monkeypatch):
    def ep_s(dispatcher):
        return evaluate({"cluster": CLUSTER, "workload": {**MOE, "moe_dispatcher": dispatcher}})["training"][
            "step_parts_s"]["ep_all_to_all"]

    measured = ep_s("hybridep")
    hopper = FAMILIES["hopper"]
    monkeypatch.setitem(FAMILIES, "hopper", replace(hopper, dispatcher_network_gbyte_s={}))
    at_line_rate = ep_s("hybridep")
    assert measured == pytest.approx(1.916, rel=0.01)
    assert 1.6 < measured / at_line_rate < 2.0
    # The plain all-to-all (NCCL, every pair sent) has no measured rate: it is where it was.
    monkeypatch.setitem(FAMILIES, "hopper", hopper)
    assert ep_s("alltoall") == pytest.approx(4.135, rel=0.01) and ep_s("alltoall") > measured
