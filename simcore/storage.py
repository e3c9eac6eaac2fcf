"""Storage: aggregate read and write bounds and checkpoint save/load times.

Aggregate bound = min(storage NICs x line rate, SSDs x SSD bandwidth, clients' NICs x line rate)
(FF VI-B2: 360 x 200 Gb/s = 9 TB/s network bound, 8 TB/s read achieved). A checkpoint of B bytes
takes B / min(per-node write rate x writing nodes, storage aggregate) (FF VII-A: > 10 GiB/s per
node with the batch write API).
"""
import numpy as np

from simcore.arrays import binding

STORAGE_LABELS = ("storage-node NICs", "SSDs", "compute-node NICs")
CHECKPOINT_LABELS = ("per-node write rate", "storage aggregate")


def storage_throughput_gbyte_s(storage_nodes, nics_per_storage_node, nic_gbit_s, ssds_per_node,
                               ssd_gbyte_s, client_nodes, client_nic_gbyte_s):
    """Aggregate storage bandwidth (GB/s) and the binding limit, for reads (SSD read rate) or
    writes (SSD write rate); an unknown SSD rate (NaN) is not a limit."""
    network = storage_nodes * nics_per_storage_node * nic_gbit_s / 8
    ssd = np.where(np.isnan(ssd_gbyte_s), np.inf, storage_nodes * ssds_per_node * np.nan_to_num(ssd_gbyte_s))
    clients = client_nodes * client_nic_gbyte_s
    return binding(STORAGE_LABELS, network, ssd, clients)


def checkpoint_time_s(checkpoint_bytes, writing_nodes, per_node_write_gbyte_s, aggregate_gbyte_s):
    """Time to save (or load) a checkpoint, and which limit sets it. The per-node rate is the
    checkpoint API's (FF VII-A: > 10 GiB/s per node), assumed the same for loading."""
    rate, bound = binding(CHECKPOINT_LABELS, writing_nodes * per_node_write_gbyte_s, aggregate_gbyte_s)
    return checkpoint_bytes / (rate * 1e9), bound
