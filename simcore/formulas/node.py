"""A node (or a scale-up domain of nodes) as the collectives and parallel groups see it."""
import numpy as np

from simcore.arrays import where
from simcore.errors import ScenarioError
from simcore.formulas import collectives
from simcore.formulas.collectives import CollectiveParams


def collective_json(result: collectives.CollectiveResult) -> dict:
    return {"algbw_gbyte_s": result.algbw_gbyte_s, "time_s": result.time_s, "bound": result.binding,
            "bounds_gbyte_s": result.bounds_gbyte_s}


def node_io(node, acc, g, scaleup_fraction, params: CollectiveParams = CollectiveParams()) -> collectives.NodeIO:
    """What a node offers collectives, from the scenario's node fields (NaN = not a limit).

    Host memory: the measured practical rate, else the peak x ``host_memory_efficiency``. Scale-up:
    half the datasheet's both-ways NVLink/HCCS figure x ``scaleup_fraction``, the family's measured
    (or calibrated) nccl-tests share, so that the collective report, the charts, the training's
    parallel groups and the nccl-tests comparison all see one bandwidth for the same link."""
    inf_if_nan = lambda a: where(np.isnan(a), np.inf, a)  # noqa: E731
    derated_peak = node["host_memory_peak_bw_gbyte_s"] * params.host_memory_efficiency
    host_memory = where(np.isnan(node["host_memory_bw_gbyte_s"]), derated_peak, node["host_memory_bw_gbyte_s"])
    return collectives.NodeIO(
        gpus_per_node=g,
        nic_bw_gbyte_s=node["compute_nics"] * node["compute_nic_gbit_s"] / 8,
        host_mem_bw_gbyte_s=inf_if_nan(host_memory),
        pcie_bw_gbyte_s=node["pcie_bw_gbyte_s"],
        root_port_bw_gbyte_s=inf_if_nan(node["root_port_bw_gbyte_s"]),
        shared_root_ports=node["shared_root_ports"],
        p2p_bw_gbyte_s=inf_if_nan(node["p2p_limit_gbyte_s"]),
        scaleup_bw_gbyte_s=where(acc["scaleup_bw_gbyte_s"] > 0, acc["scaleup_bw_gbyte_s"] / 2 * scaleup_fraction,
                                    np.inf),
        numa_domains=np.maximum(node["cpus"], 1),
    )


def scaleup_domain_gpus(node):
    """GPUs on one all-to-all scale-up fabric: the node's, or a rack's or supernode's (a whole
    number of nodes) where the scenario says so."""
    g, domain = node["gpus"], node["scaleup_domain_gpus"]
    given = ~np.isnan(domain)
    if (given & (node["nvlink_topology"] != "all-to-all")).any():
        raise ScenarioError("cluster.node.scaleup_domain_gpus", "needs an all-to-all scale-up fabric (nvlink_topology)")
    if (given & ((domain < g) | (domain % g != 0))).any():
        raise ScenarioError("cluster.node.scaleup_domain_gpus", "must be a whole number of nodes' GPUs")
    return where(given, domain, g)


def nccl_domain(node, w, g):
    """The GPUs a job's NCCL collectives and TP groups see as one scale-up domain: the fabric's
    where the job uses an all-to-all NVLink with bandwidth, else the node."""
    has_bandwidth = node["accelerator"]["scaleup_bw_gbyte_s"] > 0
    usable = (node["nvlink_topology"] == "all-to-all") & w["use_nvlink"] & has_bandwidth
    return where(usable, scaleup_domain_gpus(node), g)


def domain_io(io: collectives.NodeIO, g, domain) -> collectives.NodeIO:
    """A scale-up domain seen by collectives as one node: its nodes' NICs, host memory and
    sockets together, every GPU on the scale-up fabric."""
    k = domain / g
    return collectives.NodeIO(
        gpus_per_node=domain, nic_bw_gbyte_s=io.nic_bw_gbyte_s * k, host_mem_bw_gbyte_s=io.host_mem_bw_gbyte_s * k,
        pcie_bw_gbyte_s=io.pcie_bw_gbyte_s, root_port_bw_gbyte_s=io.root_port_bw_gbyte_s,
        shared_root_ports=io.shared_root_ports * k, p2p_bw_gbyte_s=io.p2p_bw_gbyte_s,
        scaleup_bw_gbyte_s=io.scaleup_bw_gbyte_s, numa_domains=io.numa_domains * k)
