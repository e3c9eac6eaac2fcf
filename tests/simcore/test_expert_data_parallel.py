"""The experts' gradients reduced over the expert-data-parallel group, apart from the dense ones
(Megatron-Core's expert buffers and expt_dp group), as MLPerf v6.0's DeepSeek-V3 runs on GB200."""
import pytest

from simcore.formulas import collectives
from simcore.tools.references import run_document, scenario


def test_the_experts_gradients_reduce_over_their_own_group_on_each_ranks_own_nic():
    document = scenario("mlperf-v6-deepseek-v3-a4-4096")  # 4,096 GB200, TP 2, PP 4, EP 32, DP 512, 64 GPUs a domain
    training = run_document(document)["training"]
    expert_local = float(training["expert_params"]) / (4 * 32)
    dense_local = (float(training["params"]) - float(training["mtp_params"]) - float(training["expert_params"])) / 8
    # Expert-data-parallel group: 512 x 2 / 32 = 32 ranks, 64 / 32 = 2 of them in a domain (16 domains), each
    # with its own 400 Gb/s NIC; the dense group: 512 ranks, 32 to a domain, all its NICs shared by two TP ranks.
    nic = 50.0
    expert_io = collectives.NodeIO(gpus_per_node=2.0, nic_bw_gbyte_s=2 * nic, host_mem_bw_gbyte_s=float("inf"),
                                   pcie_bw_gbyte_s=float("nan"), root_port_bw_gbyte_s=float("inf"),
                                   shared_root_ports=0.0, p2p_bw_gbyte_s=float("inf"),
                                   scaleup_bw_gbyte_s=1800 / 2 * 682 / 900, numa_domains=2.0)
    experts = collectives.nccl_allreduce(expert_local * 4, 16, expert_io, nvlink_all_to_all=True)
    grad_reduce = float(training["dp_detail_s"]["grad_reduce"])
    assert grad_reduce > float(experts.time_s) > 0.2
    # The dense rest over 16 domains of 32 ranks is the smaller part: most of its ring runs on NVLink.
    assert grad_reduce - float(experts.time_s) < float(experts.time_s)
    assert dense_local * 4 < expert_local * 4
    assert grad_reduce == pytest.approx(0.433, rel=0.02)  # engine 0.15.0 (0.090 s pooled with the dense, 0.14.0)
