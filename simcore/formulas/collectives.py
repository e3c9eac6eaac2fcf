"""Collectives: alpha-beta ring, tree and double binary tree; NCCL on PCIe nodes; HFReduce.

Bandwidths are in GB/s (10^9 bytes per second) and sizes in bytes. ``algbw = size / time``; the
bus bandwidth of nccl-tests (doc/PERFORMANCE.md) is ``algbw x 2(n-1)/n`` for allreduce. The
Fire-Flyer figures (FF Fig. 7) and this module's HFReduce and NCCL results are per-GPU ``algbw``
in the paper's sense: one GPU's gradient size over the allreduce time.

Every node-level function returns a :class:`CollectiveResult` whose ``bound`` indexes
``labels``: the constraint that set the bandwidth.
"""
from dataclasses import dataclass

import numpy as np

from simcore.arrays import as_array, binding, label, where

GB = 1e9


@dataclass(frozen=True)
class CollectiveParams:
    """Calibrated collective constants.

    hop_latency_s: one network hop of a ring or tree step. Basis: 64 B IB latency across leaves,
        3.7 us (DeepSeek ISCA'25 Table 5).
    scaleup_latency_s: one step of a collective over NVLink. Basis: 64 B NVLink latency, 3.33 us
        (DeepSeek ISCA'25 Table 5).
    hfreduce_level_s: time each level of HFReduce's pipelined double binary tree adds (a chunk's
        RDMA write, its completion and the CPU reduce hand-off, independent of the bandwidth that
        binds). Basis: the fall of FF Fig. 7a and 7b with node count; 0.45 ms.
    root_port_efficiency: achieved / nominal fabric rate of a PCIe root port carrying two GPUs'
        concurrent DMA in both directions. Basis: FF Fig. 7a's 16-GPU point (8.10 GB/s against
        the 9.4 GB/s bound of 37.5 GB/s shared by 4 units of traffic); 0.89.
    nccl_chunk_bytes: NCCL's pipeline slice: its default 4 MiB channel buffer in 8 steps (NCCL
        documentation, NCCL_BUFFSIZE and NCCL_STEPS), 512 KiB.
    nccl_tree_min_ranks: rank count from which NCCL's tuner picks the tree for large allreduces
        (its ring latency grows with ranks). Basis: FF Fig. 7a, where NCCL drops between 512 and
        1,024 GPUs; it is a property of NCCL's tuning, not of the hardware.
    root_port_shared_by_both_directions: whether a root port's fabric limit caps reads and writes
        together. Basis: FF IV-D3 attributes HFReduce's ~8 GB/s to the GPU5/GPU6 root port,
        which only binds if D2H and H2D traffic share its ~37.5 GB/s.
    host_memory_efficiency: practical / peak host memory bandwidth, used when a node has no
        measurement. Basis: FF IV-D3, 320 GB/s measured on 16-channel DDR4-3200 (409.6 peak).
    ll_base_latency_s, ll_step_latency_s: NCCL's LL protocol on a ring over NVLink, which NCCL's
        tuner picks for small messages: its fixed start and each step's latency. Basis: NCCL's
        tuner constants, ``src/graph/tuning.cc`` (NVIDIA/nccl at 5067397): baseLat[ring][LL] 6.6 us,
        hwLat[NVLink][ring][LL] 0.6 us.
    ll_bw_share: the share of the link's bandwidth LL carries: each 8-byte store holds 4 bytes of
        data beside a 4-byte flag (NCCL's LL protocol), 0.5.
    """

    hop_latency_s: float = 3.7e-6
    scaleup_latency_s: float = 3.33e-6
    hfreduce_level_s: float = 0.45e-3
    root_port_efficiency: float = 0.89
    nccl_chunk_bytes: float = 512 * 2**10
    nccl_tree_min_ranks: int = 1024
    root_port_shared_by_both_directions: bool = True
    host_memory_efficiency: float = 320 / 409.6
    ll_base_latency_s: float = 6.6e-6
    ll_step_latency_s: float = 0.6e-6
    ll_bw_share: float = 0.5


@dataclass(frozen=True)
class NodeIO:
    """What a node offers a collective; every field is an array that broadcasts over scenarios.

    nic_bw_gbyte_s: computation-network bandwidth per node, one direction, all NICs.
    host_mem_bw_gbyte_s: practical host memory bandwidth, all sockets.
    pcie_bw_gbyte_s: practical host-link bandwidth of one GPU, one direction.
    root_port_bw_gbyte_s: root-port-to-CPU-fabric limit (relevant where two GPUs share a port).
    shared_root_ports: root ports carrying two GPUs.
    p2p_bw_gbyte_s: GPU-to-NIC peer-to-peer ceiling (GPUDirect RDMA), one direction.
    scaleup_bw_gbyte_s: achievable NVLink/HCCS bus bandwidth per GPU, one direction.
    numa_domains: CPU sockets (HFReduce's GDRCopy reads host memory once per NUMA domain).
    """

    gpus_per_node: np.ndarray
    nic_bw_gbyte_s: np.ndarray
    host_mem_bw_gbyte_s: np.ndarray
    pcie_bw_gbyte_s: np.ndarray
    root_port_bw_gbyte_s: np.ndarray
    shared_root_ports: np.ndarray
    p2p_bw_gbyte_s: np.ndarray
    scaleup_bw_gbyte_s: np.ndarray
    numa_domains: np.ndarray


@dataclass(frozen=True)
class CollectiveResult:
    """Time and algorithm bandwidth, the index of the binding constraint, and every bound (GB/s,
    before efficiencies) by label, so that the ones that did not bind are visible too."""

    time_s: np.ndarray
    algbw_gbyte_s: np.ndarray
    bound: np.ndarray
    labels: tuple[str, ...]
    bounds_gbyte_s: dict

    @property
    def binding(self):
        return label(self.labels, self.bound)


def algorithm_bandwidth(size_bytes, time_s):
    """algbw = size / time in GB/s; infinite for a collective over one rank (no time)."""
    shape = np.broadcast_shapes(np.shape(size_bytes), np.shape(time_s))
    return np.divide(size_bytes, np.asarray(time_s) * GB, out=np.full(shape, np.inf), where=np.asarray(time_s) > 0)


def ring_allreduce_time_s(size_bytes, ranks, bus_bw_gbyte_s, hop_latency_s):
    """Ring allreduce: 2(n-1) steps, each moving size/n: t = 2(n-1) alpha + 2(n-1)/n S/B."""
    n = np.maximum(ranks, 1)
    return 2 * (n - 1) * hop_latency_s + 2 * (n - 1) / n * size_bytes / (bus_bw_gbyte_s * GB)


def low_latency_allreduce_time_s(size_bytes, ranks, bus_bw_gbyte_s, params: CollectiveParams = CollectiveParams()):
    """A ring allreduce in NCCL's LL protocol over NVLink (``params.ll_*``): a fixed start, steps of
    well under a microsecond, half the bandwidth. NCCL's tuner takes it for small messages, where
    it beats the Simple protocol's per-step latency (:func:`ring_allreduce_time_s`)."""
    return params.ll_base_latency_s + ring_allreduce_time_s(size_bytes, ranks, bus_bw_gbyte_s * params.ll_bw_share,
                                                            params.ll_step_latency_s)


def low_latency_ring_time_s(size_bytes, ranks, bw_gbyte_s, params: CollectiveParams = CollectiveParams()):
    """An allgather, reduce-scatter or all-to-all in NCCL's LL protocol over NVLink, likewise."""
    return params.ll_base_latency_s + ring_collective_time_s(size_bytes, ranks, bw_gbyte_s * params.ll_bw_share,
                                                             params.ll_step_latency_s)


def pipelined_tree_time_s(size_bytes, depth, bw_gbyte_s, hop_latency_s, chunk_bytes):
    """Pipelined tree reduce then broadcast: the last chunk climbs and descends ``depth`` hops.

    t = S/B + 2 depth (alpha + c/B). A double binary tree (Sanders, Speck and Traeff 2009; NCCL
    2.4) sends half the data down each of two complementary trees, so every rank sends and
    receives the full size once per phase, the same bandwidth term as one tree, with O(log n)
    latency.
    """
    bw = bw_gbyte_s * GB
    return size_bytes / bw + 2 * depth * (hop_latency_s + np.minimum(chunk_bytes, size_bytes) / bw)


def tree_depth(nodes):
    """Depth of a binary tree over ``nodes`` leaves-and-inner ranks: ceil(log2 n), 0 for one."""
    return np.ceil(np.log2(np.maximum(nodes, 1)))


def ring_collective_time_s(size_bytes, ranks, bw_gbyte_s, hop_latency_s):
    """Allgather, reduce-scatter (size = the full gathered buffer) or all-to-all (size = bytes
    each rank sends in all): (n-1) steps of size/n; t = (n-1) alpha + (n-1)/n S/B."""
    n = np.maximum(ranks, 1)
    return (n - 1) * hop_latency_s + (n - 1) / n * size_bytes / (bw_gbyte_s * GB)


def network_units(nodes):
    """Units of data each node sends (and receives) in a double-binary-tree allreduce.

    Inner in one tree and leaf in the other, a node sends and receives two halves per phase,
    2 units (FF IV-D3: "each node sends 2 and receives 2 units"); two nodes just swap, 1 unit;
    one node, none.
    """
    return where(nodes >= 3, 2.0, where(nodes == 2, 1.0, 0.0))


HFREDUCE_LABELS = (
    "host memory bandwidth",
    "NIC bandwidth",
    "GPU PCIe link",
    "shared PCIe root port",
)


def hfreduce_memory_units(gpus_per_node, nodes, numa_domains, nvlink):
    """Host-memory traffic per unit of one GPU's gradient (FF IV-D3: 24 for 8 GPUs, many nodes).

    D2H writes g (g/2 with NVLink: one GPU of each pair copies the pair's sum), the CPU reduce
    reads as many and writes 1, IB send reads k, IB receive writes k, reduce-add reads k/2, and
    H2D (GDRCopy) reads once per NUMA domain; k from :func:`network_units`.
    """
    d2h = where(nvlink, gpus_per_node / 2, gpus_per_node)
    k = network_units(nodes)
    return 2 * d2h + 1 + k + k + k / 2 + numa_domains


def hfreduce(size_bytes, nodes, io: NodeIO, *, nvlink=False, cross_zone=False,
             params: CollectiveParams = CollectiveParams()) -> CollectiveResult:
    """HFReduce allreduce (FF IV): D2H copy, CPU reduce, double-binary-tree RDMA, H2D copy.

    Bound = min(host memory / traffic units, NIC / network units, GPU PCIe link, shared root port
    x efficiency / its traffic units). Without NVLink every GPU copies S down and S up, so a port
    shared by two GPUs carries 4 units in both directions together. With NVLink pairs (FF IV-C)
    the pair reduces over NVLink, one GPU of each pair copies the sum down (the one off the shared
    port) and each GPU receives half the result, so the shared port carries 1 unit; the bridge
    itself (300 GB/s each way for S/2) never binds.
    Time = S / bound + 2 x tree depth x ``hfreduce_level_s``; a job across zones adds one level
    each way through the inter-zone switches (FF III-B).
    """
    size = as_array(size_bytes, "collective.size_bytes", positive=True)
    nodes = as_array(nodes, "collective.nodes", positive=True, integer=True)
    mem = io.host_mem_bw_gbyte_s / hfreduce_memory_units(io.gpus_per_node, nodes, io.numa_domains, nvlink)
    k = network_units(nodes)
    nic = where(k > 0, io.nic_bw_gbyte_s / np.maximum(k, 1), np.inf)
    pcie = io.pcie_bw_gbyte_s
    port_units = where(nvlink, 1.0, 4.0 if params.root_port_shared_by_both_directions else 2.0)
    port = where(io.shared_root_ports > 0,
                    io.root_port_bw_gbyte_s * params.root_port_efficiency / port_units, np.inf)
    bw, bound = binding(HFREDUCE_LABELS, mem, nic, pcie, port)
    depth = tree_depth(nodes) + where(np.asarray(cross_zone, bool), 1, 0)
    time_s = size / (bw * GB) + 2 * depth * params.hfreduce_level_s
    bounds = dict(zip(HFREDUCE_LABELS, np.broadcast_arrays(mem, nic, pcie, port)))
    return CollectiveResult(time_s, algorithm_bandwidth(size, time_s), bound, HFREDUCE_LABELS, bounds)


NCCL_LABELS = (
    "ring: GPU-to-NIC peer-to-peer limit",
    "ring: shared PCIe root port",
    "ring: NIC bandwidth",
    "ring: GPU PCIe link",
    "tree: GPU-to-NIC peer-to-peer limit",
    "tree: NIC bandwidth",
    "ring: scale-up link",
    "tree: scale-up link",
)


def nccl_allreduce(size_bytes, nodes, io: NodeIO, *, nvlink_all_to_all=False,
                   params: CollectiveParams = CollectiveParams()) -> CollectiveResult:
    """NCCL allreduce on GPU nodes, ring below ``nccl_tree_min_ranks`` ranks and tree above.

    Ring (n = all GPUs): each GPU sends and receives 2(n-1)/n S; each node's NIC carries one
    ring crossing per direction. Bus bandwidth is bounded by the GPU-to-NIC P2P ceiling (FF
    IV-D2: Rome lacks chained write, ~9 GiB/s), the shared root port (a GPU's send and receive
    both cross it), the NIC, and each GPU's PCIe link; on NVSwitch nodes the intra-node hops use
    the scale-up link instead and the NICs are the limit.
    Tree: a chain inside each node feeding a double binary tree across nodes; the GPU at the
    chain's head both sends and receives ``network_units`` per unit of data through the P2P
    path, which on these nodes caps both directions together.
    """
    size = as_array(size_bytes, "collective.size_bytes", positive=True)
    nodes = as_array(nodes, "collective.nodes", positive=True, integer=True)
    g = io.gpus_per_node
    ranks = nodes * g
    multi = nodes > 1
    inf = np.inf
    all_to_all = np.asarray(nvlink_all_to_all, bool)
    ring_p2p = where(multi & ~all_to_all, io.p2p_bw_gbyte_s, inf)
    ring_port = where((io.shared_root_ports > 0) & ~all_to_all,
                         io.root_port_bw_gbyte_s * params.root_port_efficiency
                         / (4 if params.root_port_shared_by_both_directions else 2), inf)
    ring_nic = where(multi, io.nic_bw_gbyte_s, inf)
    ring_pcie = where(all_to_all, inf, io.pcie_bw_gbyte_s)
    ring_scaleup = where(all_to_all, io.scaleup_bw_gbyte_s, inf)
    k = network_units(nodes)
    tree_p2p = where(all_to_all, inf, io.p2p_bw_gbyte_s / np.maximum(2 * k, 1))
    tree_nic = io.nic_bw_gbyte_s / np.maximum(k, 1)
    tree_scaleup = where(all_to_all, io.scaleup_bw_gbyte_s, inf)  # every GPU still sends over its link
    use_tree = multi & (ranks >= params.nccl_tree_min_ranks)
    inf_if_tree = where(use_tree, inf, 0.0)
    inf_if_ring = where(use_tree, 0.0, inf)
    candidates = (ring_p2p, ring_port, ring_nic, ring_pcie, tree_p2p, tree_nic, ring_scaleup, tree_scaleup)
    in_use = (inf_if_tree,) * 4 + (inf_if_ring,) * 2 + (inf_if_tree, inf_if_ring)
    bus_bw, bound = binding(NCCL_LABELS, *(c + mask for c, mask in zip(candidates, in_use)))
    bw = bus_bw
    ring_t = ring_allreduce_time_s(size, ranks, bw, params.hop_latency_s)
    tree_t = pipelined_tree_time_s(size, tree_depth(nodes) + g, bw, params.hop_latency_s,
                                   params.nccl_chunk_bytes)
    time_s = where(use_tree, tree_t, ring_t)
    bounds = dict(zip(NCCL_LABELS, np.broadcast_arrays(*candidates)))
    return CollectiveResult(time_s, algorithm_bandwidth(size, time_s), bound, NCCL_LABELS, bounds)
