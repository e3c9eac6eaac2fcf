"""A notebook-style session with the engine alone (`pip install ./engine`), run by the test suite.

How many switches, what capital cost and what step time does a LLaMa-13B-like model get, trained
on every GPU with four sequences per data-parallel rank, as a Fire-Flyer-like PCIe cluster grows
from 200 to 1,250 nodes? One vectorized evaluation answers for every size, and
simcore.table turns the result into columns (simcore.to_frame into a pandas DataFrame).
"""
import simcore

NODE = {
    "gpus": 8, "nvlink_topology": "pairs", "cpus": 2, "cpu_tdp_w": 225, "compute_nics": 1, "compute_nic_gbit_s": 200,
    "accelerator": {"peak_tf32_tflops": 156, "peak_fp16_tflops": 312, "memory_gib": 40, "tdp_w": 250,
                    "scaleup_bw_gbyte_s": 600, "family": "ampere"},
}
sizes = list(range(200, 1251, 50))
scenario = {
    "cluster": {"node_count": sizes, "node": NODE,
                "fabric": {"switch_radix": 40, "switch_gbit_s": 200, "zones": 2},
                # Fire-Flyer's relative units (FF Table III): a PCIe node 9.0, a switch 2.95 with the
                # cabling included, so the links' parts cost nothing more.
                "prices": {"currency": "REL", "node": 9.0, "switch": 2.95, "transceiver": 0, "fiber": 0,
                           "endpoint_cable": 0}},
    "workload": {"kind": "transformer", "layers": 40, "hidden": 5120, "heads": 40, "vocab": 32000, "seq_len": 2048,
                 "global_batch": [n * 8 for n in sizes], "micro_batch": 1, "tp": 1, "pp": 4,
                 "gpus": [n * 8 for n in sizes], "collective": "hfreduce", "zero_stage": 1, "recompute": "full"},
}
result = simcore.evaluate(scenario)
columns = simcore.table(result)



def shown(value, digits: int) -> str:
    return "-" if value is None else f"{value:.{digits}f}"  # None: the job cannot run at that size


print(f"{'nodes':>6} {'switches':>9} {'capex':>8} {'step (s)':>9} {'MFU':>6}")
for nodes, switches, capex, step, mfu in zip(columns["cluster.nodes"], columns["fabric.switches"],
                                             columns["cost.capex_total"], columns["training.step_time_s"],
                                             columns["training.mfu"]):
    print(f"{nodes:>6} {switches:>9} {shown(capex, 1):>8} {shown(step, 2):>9} {shown(mfu, 3):>6}")

assert len(columns["fabric.switches"]) == len(sizes)
assert all(capex is not None for capex in columns["cost.capex_total"])  # every counted part is priced
assert columns["fabric.switches"] == sorted(columns["fabric.switches"])  # more nodes never need fewer switches
assert all(columns["training.feasible"]) and max(columns["training.step_time_s"]) < 2 * min(
    columns["training.step_time_s"])  # weak scaling: the step stays within a factor of two
