"""Storage: aggregate read and write bounds and checkpoint save/load times.

Aggregate bound = min(storage NICs x line rate, SSDs x SSD bandwidth, clients' NICs x line rate)
(FF VI-B2: 360 x 200 Gb/s = 9 TB/s network bound, 8 TB/s read achieved). A checkpoint of B bytes
takes B / min(per-node write rate x writing nodes, storage aggregate) (FF VII-A: > 10 GiB/s per
node with the batch write API), plus a fixed cost per checkpoint (barrier, metadata). A storage
system outside the plan is given by its operators' sustained rate (Llama 3, arXiv:2407.21783
section 3.3.1: Tectonic, 2 TB/s sustained), bounded by the compute nodes' NICs. With neither the
checkpoint time is unknown (NaN), never the unbounded per-node rate.
"""
import numpy as np

from simcore.arrays import binding, where

STORAGE_LABELS = ("storage-node NICs", "SSDs", "compute-node NICs")
CHECKPOINT_LABELS = ("per-node write rate", "storage aggregate", "no storage plane: unknown")
NO_STORAGE = 2


def storage_throughput_gbyte_s(storage_nodes, nics_per_storage_node, nic_gbit_s, ssds_per_node,
                               ssd_gbyte_s, client_nodes, client_nic_gbyte_s):
    """Aggregate storage bandwidth (GB/s) and the binding limit, for reads (SSD read rate) or
    writes (SSD write rate); an unknown SSD rate (NaN) is not a limit."""
    network = storage_nodes * nics_per_storage_node * nic_gbit_s / 8
    ssd = where(np.isnan(ssd_gbyte_s), np.inf, storage_nodes * ssds_per_node * ssd_gbyte_s)
    clients = client_nodes * client_nic_gbyte_s
    return binding(STORAGE_LABELS, network, ssd, clients)


def external_rates_gbyte_s(write_gbyte_s, read_gbyte_s, client_nodes, client_nic_gbyte_s):
    """A storage system outside the plan: its published sustained write and read rates (read: the
    write rate unless given), each bounded by the compute nodes' NICs; NaN where none is given."""
    clients = client_nodes * client_nic_gbyte_s
    read_gbyte_s = where(np.isnan(read_gbyte_s), write_gbyte_s, read_gbyte_s)
    return {"write": np.minimum(write_gbyte_s, clients), "read": np.minimum(read_gbyte_s, clients)}


def checkpoint_time_s(checkpoint_bytes, writing_nodes, per_node_write_gbyte_s, aggregate_gbyte_s, fixed_s=0.0):
    """Time to save (or load) a checkpoint, and which limit sets it (``NO_STORAGE``: no storage
    plane, the time NaN). The per-node rate is the checkpoint API's (FF VII-A: > 10 GiB/s per node), assumed the
    same for loading; ``fixed_s`` is the per-checkpoint barrier and metadata cost."""
    unknown = np.isnan(aggregate_gbyte_s)
    rate, bound = binding(CHECKPOINT_LABELS, writing_nodes * per_node_write_gbyte_s,
                          where(unknown, np.inf, aggregate_gbyte_s))
    return where(unknown, np.nan, checkpoint_bytes / (rate * 1e9) + fixed_s), where(unknown, NO_STORAGE, bound)
