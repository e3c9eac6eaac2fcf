"""The output registry: every metric the product names, with its path into the result, label, unit
and which way is better, mirroring the input field spec (:mod:`simcore.document`).

Comparisons, the ``evaluate_plan`` table, a sweep's default outputs, the pages and the API's
description all read this one list, so a new metric is one entry here. ``unit`` "currency" means the
price book's currency. A metric marked ``workload`` exists only when a workload is trained.
"""
import math
from collections.abc import Callable
from dataclasses import dataclass

from simcore.errors import ScenarioError

LOWER, HIGHER, NEITHER = "lower", "higher", ""


_RAISE = object()


def dig(result: dict, path: str, missing=_RAISE):
    """The value at a dotted result path; where there is none, ``missing`` (or a field error)."""
    value = result
    for key in path.split("."):
        if not isinstance(value, dict) or key not in value:
            if missing is _RAISE:
                raise ScenarioError(path, "is not a result metric")
            return missing
        value = value[key]
    return value


def _gemm_mean(result):
    tf32, fp16 = result["compute"]["gemm_tf32_tflops"], result["compute"]["gemm_fp16_tflops"]
    known = [v for v in (tf32, fp16) if v is not None]
    return sum(known) / len(known) if known else None


def _node_price(result):
    """The price book's price of one compute node (the compute-node line over the node count)."""
    price = result["cost"]["compute_nodes"]
    return None if price is None else price / result["cluster"]["nodes"]


def _per_node_price(result):
    """A node's GEMM (its GPUs' mean of TF32 and FP16) over the node's price: FF Table II's
    cost-performance, fair between nodes of different GPU counts (a GB200 tray's 4, an HGX's 8)."""
    gemm, price = _gemm_mean(result), _node_price(result)
    gpus_per_node = result["cluster"]["gpus"] / result["cluster"]["nodes"]
    return None if gemm is None or not price else gemm * gpus_per_node / price


@dataclass(frozen=True)
class Output:
    key: str
    path: str  # a dotted path into the result; "" where ``derive`` computes the value
    label: str
    unit: str
    better: str = NEITHER
    workload: bool = False
    compare: bool = True  # lined up in comparisons
    chart: bool = False  # charted on the comparison page
    table: bool = False  # printed by manage.py evaluate_plan
    sweep: bool = False  # stored by a sweep that names no outputs
    derive: Callable | None = None

    def read(self, result: dict):
        """The metric from one evaluation (None where the result lacks it), a count as an integer."""
        value = self.derive(result) if self.derive is not None else dig(result, self.path, missing=None)
        if self.unit in COUNT_UNITS and isinstance(value, float) and value.is_integer():
            return int(value)
        return value

    def describe(self) -> dict:
        return {"key": self.key, "path": self.path or None, "label": self.label, "unit": self.unit,
                "better": self.better, "workload": self.workload, "chart": self.chart}


OUTPUTS: list[Output] = [
    Output("gpus", "cluster.gpus", "GPUs", "GPUs", table=True, sweep=True),
    Output("nodes", "cluster.nodes", "compute nodes", "nodes"),
    Output("switches", "fabric.switches", "switches", "switches", LOWER, chart=True, table=True, sweep=True),
    Output("fabric_fits", "fabric.fits", "fabric holds the build", "yes/no", HIGHER, compare=False, sweep=True),
    Output("compute_fabric_switches", "fabric.compute_fabric_switches", "switches, computation fabric", "switches",
           LOWER),
    Output("transceivers", "fabric.transceivers", "optical transceivers", "modules", LOWER),
    Output("network_cost", "cost.network", "network price", "currency", LOWER, table=True),
    Output("capex_total", "cost.capex_total", "total price", "currency", LOWER, chart=True, table=True, sweep=True),
    Output("capex_low", "cost.capex_low", "total price, low end of its band", "currency", LOWER, compare=False,
           table=True),
    Output("capex_high", "cost.capex_high", "total price, high end of its band", "currency", LOWER, compare=False,
           table=True),
    Output("unpriced_count", "cost.unpriced_count", "parts without a price", "parts", LOWER, compare=False, sweep=True),
    Output("node_price", "", "price per compute node", "currency", LOWER, derive=_node_price),
    Output("energy_cost_per_year", "cost.energy_per_year", "energy per year", "currency", LOWER, sweep=True),
    Output("own_per_gpu_hour", "cost.own_per_gpu_hour", "owning a GPU, per hour", "currency", LOWER, table=True,
           sweep=True),
    Output("rent_per_gpu_hour", "cost.rent_per_gpu_hour", "renting a GPU, per hour (cheapest term for the capital's "
           "years)", "currency", LOWER),
    Output("node_power_w", "power.node_w", "power per compute node", "W", LOWER),
    Output("node_max_power_w", "power.node_max_w", "maximum power per compute node", "W", LOWER),
    Output("scaleup_domain_gpus", "cluster.scaleup_domain_gpus", "GPUs per scale-up domain", "GPUs"),
    Output("racks", "racks.count", "compute racks", "racks", LOWER),
    Output("network_racks", "racks.network_count", "scale-up network racks", "racks", LOWER),
    Output("total_racks", "racks.total_count", "racks in all (compute, scale-up network and switch racks)", "racks",
           LOWER, compare=False),
    Output("racks_within_power_limit", "racks.within_power_limit", "every rack within the rack power limit (1: yes)",
           "", compare=False),
    Output("gpus_per_rack", "racks.gpus_per_rack", "GPUs per rack", "GPUs"),
    Output("rack_power_w", "racks.power_w", "power per rack", "W", LOWER, chart=True),
    Output("rack_max_power_w", "racks.max_power_w", "maximum power per rack (provisioned)", "W", LOWER),
    Output("optics_power_w", "power.optics_w", "power of the fabric's optics", "W", LOWER),
    Output("pue", "power.pue", "facility PUE", "ratio", LOWER),
    Output("it_power_w", "power.it_total_w", "cluster IT power", "W", LOWER, table=True, sweep=True),
    Output("facility_power_w", "power.facility_w", "facility power", "W", LOWER, chart=True, sweep=True),
    Output("it_provisioned_power_w", "power.it_provisioned_w", "cluster IT power provisioned (compute nodes at their "
           "maximum)", "W", LOWER),
    Output("facility_provisioned_power_w", "power.facility_provisioned_w", "facility power provisioned (compute nodes "
           "at their maximum, through the PUE)", "W", LOWER, sweep=True),
    Output("gemm_tf32_tflops", "compute.gemm_tf32_tflops", "TF32 GEMM per GPU", "TFLOPS", HIGHER, table=True),
    Output("gemm_fp16_tflops", "compute.gemm_fp16_tflops", "FP16 GEMM per GPU", "TFLOPS", HIGHER, table=True),
    Output("gemm_mean_tflops", "", "GEMM per GPU, mean of TF32 and FP16", "TFLOPS", HIGHER, derive=_gemm_mean),
    Output("gemm_per_node_price", "", "node GEMM per unit of node price", "TFLOPS/currency", HIGHER, chart=True,
      derive=_per_node_price),
    Output("cluster_fp16_pflops", "compute.cluster_fp16_pflops", "cluster FP16 GEMM", "PFLOPS", HIGHER, sweep=True),
    Output("hfreduce_gbyte_s", "collectives.hfreduce.algbw_gbyte_s", "HFReduce across the cluster", "GB/s", HIGHER,
      chart=True, table=True, sweep=True),
    Output("nccl_gbyte_s", "collectives.nccl.algbw_gbyte_s", "NCCL across the cluster", "GB/s", HIGHER, table=True,
      sweep=True),
    Output("interruptions_per_day", "reliability.platform_interruptions_per_day",
      "platform interruptions per day, whole cluster", "1/day", LOWER, chart=True, table=True, sweep=True),
    Output("fabric_interruption_share", "reliability.fabric_interruption_share", "fabric share of interruptions",
      "fraction", LOWER, table=True, sweep=True),
    Output("fabric_interruptions_per_day", "reliability.fabric_interruptions_per_day", "fabric interruptions per day",
      "1/day", LOWER),
    Output("repair_hours_per_day", "reliability.repair_hours_per_day", "repair hours per day", "h/day", LOWER,
      sweep=True),
    Output("fabric_repair_hours_per_day", "reliability.fabric_repair_hours_per_day", "fabric repair hours per day",
      "h/day", LOWER),
    Output("node_availability", "reliability.node_availability", "node availability", "fraction", HIGHER),
    Output("training_feasible", "training.feasible", "the job can run", "yes/no", HIGHER, workload=True, compare=False,
      sweep=True),
    Output("step_time_s", "training.step_time_s", "training step", "s", LOWER, workload=True, chart=True, table=True,
      sweep=True),
    Output("mfu", "training.mfu", "MFU", "fraction", HIGHER, workload=True, table=True, sweep=True),
    Output("hfu", "training.hfu", "HFU (with recomputation)", "fraction", HIGHER, workload=True, sweep=True),
    Output("hardware_tflops_per_gpu", "training.hardware_tflops_per_gpu", "hardware TFLOPS per GPU", "TFLOPS", HIGHER,
      workload=True, sweep=True),
    Output("tokens_per_s", "training.tokens_per_s", "tokens per second", "tokens/s", HIGHER, workload=True, sweep=True),
    Output("memory_fits", "training.memory.fits", "fits in HBM", "yes/no", HIGHER, workload=True, compare=False,
      sweep=True),
    Output("memory_per_gpu_gib", "training.memory.per_gpu_gib", "memory per GPU", "GiB", LOWER, workload=True,
      compare=False, sweep=True),
    Output("pipeline_bubble_s", "training.step_parts_s.pipeline_bubble", "step: pipeline bubble", "s", LOWER,
      workload=True),
    Output("tp_traffic_s", "training.step_parts_s.tp_traffic", "step: tensor-parallel traffic", "s", LOWER,
      workload=True),
    Output("ep_traffic_s", "training.step_parts_s.ep_all_to_all", "step: expert all-to-all", "s", LOWER,
      workload=True, chart=True),
    Output("dp_traffic_s", "training.step_parts_s.dp_exposed", "step: exposed data-parallel traffic",
      "s", LOWER, workload=True),
    Output("host_launch_s", "training.step_parts_s.host_launch", "step: the host launching kernels", "s", LOWER,
      workload=True),
    Output("param_gather_s", "training.dp_detail_s.param_gather",
           "of the data-parallel traffic: parameter all-gathers (ZeRO-3 / FSDP)", "s", LOWER, workload=True),
    Output("grad_reduce_s", "training.dp_detail_s.grad_reduce", "of the data-parallel traffic: gradient reduction",
           "s", LOWER, workload=True),
    Output("fsdp_calls_s", "training.dp_detail_s.fsdp_calls",
           "of the data-parallel traffic: ZeRO-3 / FSDP collective calls (latency and host per call)", "s", LOWER,
           workload=True),
    Output("sustained_clock_s", "training.compute_detail_s.sustained_clock",
           "of the compute: the sustained clock below full", "s", LOWER, workload=True),
    Output("fp8_quantize_s", "training.compute_detail_s.fp8_quantize",
           "of the compute: FP8 and NVFP4 quantization", "s", LOWER, workload=True),
    Output("grouped_gemm_s", "training.compute_detail_s.grouped_gemm", "of the compute: grouped expert GEMMs", "s",
           LOWER, workload=True),
    Output("moe_permute_s", "training.compute_detail_s.moe_permute", "of the compute: MoE token shuffles", "s",
           LOWER, workload=True),
    Output("moe_router_s", "training.compute_detail_s.moe_router", "of the compute: MoE router kernels", "s",
           LOWER, workload=True),
    Output("time_to_train_days", "training.time_to_train_days", "time to train", "days", LOWER, workload=True,
      chart=True, table=True, sweep=True),
    Output("cost_to_train", "training.cost_to_train", "cost to train: the job's share of capital, plus energy",
           "currency", LOWER, workload=True, sweep=True),
    Output("buy_and_run_cost", "training.buy_and_run_cost", "buying the build and powering the run", "currency",
           LOWER, workload=True, sweep=True),
    Output("cost_per_million_tokens", "training.cost_per_million_tokens", "cost per million trained tokens", "currency",
      LOWER, workload=True, chart=True),
    Output("rent_cost_to_train", "training.rent_cost_to_train", "cost to train on rented GPUs", "currency", LOWER,
      workload=True, sweep=True),
    Output("rent_term_code", "training.rent_term_code", "rental term for the run (0 on demand, 1 capacity block, "
           "2 one year, 3 three years, 4 no price)", "", compare=False,
           workload=True),
    Output("rent_cost_per_million_tokens", "training.rent_cost_per_million_tokens",
      "cost per million tokens on rented GPUs", "currency", LOWER, workload=True, chart=True),
    Output("ettr", "reliability.ettr", "effective training time ratio", "fraction", HIGHER, workload=True, table=True,
      sweep=True),
    Output("job_interruptions_per_day", "reliability.job_interruptions_per_day", "job interruptions per day", "1/day",
      LOWER, workload=True, sweep=True),
    Output("restart_time_s", "reliability.restart_time_s", "restart time", "s", LOWER, workload=True, table=True,
      sweep=True),
]


# Units whose values are whole things counted, and the unit of a yes/no flag: a table or a file
# gives these as integers and booleans (``value_kind``), not as the engine's floats.
COUNT_UNITS = frozenset({"GPUs", "nodes", "switches", "racks", "modules", "parts"})
FLAG_UNIT = "yes/no"
_BY_PATH = {o.path: o for o in OUTPUTS if o.path}


def value_kind(path: str) -> str:
    """How a result path's values are typed in tables and files: ``flag`` (true/false),
    ``count`` (an integer) or ``number``, from the registered output's unit (unregistered paths
    are numbers)."""
    output = _BY_PATH.get(path)
    if output is None:
        return "number"
    return "flag" if output.unit == FLAG_UNIT else "count" if output.unit in COUNT_UNITS else "number"


def _whole(value):
    """A count as an integer where it is a whole float (lists element by element; None stays)."""
    if type(value) is list:
        return [_whole(item) for item in value]
    return int(value) if type(value) is float and value.is_integer() else value


def counts_as_integers(result: dict) -> dict:
    """A JSON-ready result document with every registered count (:data:`COUNT_UNITS`: GPUs, nodes,
    switches, racks ...) written as integers, as a file or a table gives them, where the engine's
    arrays hold them as floats. Changed in place, and returned."""
    for output in OUTPUTS:
        if not output.path or output.unit not in COUNT_UNITS:
            continue
        *parents, leaf = output.path.split(".")
        section = result
        for key in parents:
            section = section.get(key) if type(section) is dict else None
        if type(section) is dict and leaf in section:
            section[leaf] = _whole(section[leaf])
    return result


SI_PREFIXES = ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))
SI_UNITS = frozenset({"W", "B", "Wh", "FLOP", "FLOPS"})


def display(value, unit: str = "", *, money: bool = False) -> str:
    """A value as every page, CLI table and report writes it (frontend/static/frontend/js/format.js
    does the same in the browser): thousands separators, integers as integers, four significant
    digits, an exponent only below 0.001 or from 10^15; watts, bytes and FLOPs with an SI prefix (5.17 MW),
    and ``money`` (``unit`` its currency) from a million (48.0 M USD)."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if unit in SI_UNITS or money:
        for scale, prefix in SI_PREFIXES[:4] if money else SI_PREFIXES:
            if abs(value) >= scale:  # three significant digits, as JavaScript's toPrecision(3) writes them
                scaled = f"{value / scale:#.3g}".rstrip(".")
                return f"{scaled} {prefix} {unit}" if money else f"{scaled} {prefix}{unit}"
    if value != 0 and (abs(value) >= 1e15 or abs(value) < 1e-3):
        text = f"{value:.2e}"
    elif float(value).is_integer() or abs(value) >= 1000:
        text = f"{round(value):,}"
    else:
        text = f"{value:.4g}"
    return f"{text} {unit}".strip() if unit else text


def percent(fraction, digits: int = 1) -> str:
    """A fraction as a percentage ("31.4%"; format.js's ``percent``)."""
    if fraction is None or isinstance(fraction, bool) or not math.isfinite(fraction):
        return "–"
    return f"{fraction * 100:.{digits}f}%"


def duration(seconds) -> str:
    """A time in the unit people read it in (format.js's ``duration``): "294 µs", "850 ms", "42 s",
    "9.0 min", "3.2 h", "12.5 days"."""
    if seconds is None or isinstance(seconds, bool) or not math.isfinite(seconds):
        return "–"
    for limit, scale, unit in ((1e-3, 1e6, "µs"), (1, 1e3, "ms"), (120, 1, "s")):
        if abs(seconds) < limit and (seconds or unit == "s"):
            return f"{display(seconds * scale)} {unit}"
    for limit, scale, unit in ((7200, 60, "min"), (172800, 3600, "h")):
        if seconds < limit:
            return f"{seconds / scale:.1f} {unit}"
    return f"{seconds / 86400:.1f} days"


def display_output(value, unit: str, currency: str = "") -> str:
    """A registered output's value with its unit as pages write it, for the command line and reports:
    fractions as percentages, times in readable units, prices in the book's currency, rates per day
    in words, the rest as :func:`display`."""
    if unit == "fraction":
        return percent(value)
    if unit == "s":
        return duration(value)
    if unit == "currency":
        return display(value, currency or "price", money=True)
    if unit == "1/day":
        return f"{display(value)} a day"
    return display(value, unit)


def better_way(path: str) -> str:
    """Which way a registered output is better (``HIGHER``, ``LOWER``; ``NEITHER`` for an
    unregistered path or one with no better way)."""
    output = _BY_PATH.get(path)
    return output.better if output is not None else NEITHER


def selected(flag: str, *, workload: bool | None = None) -> list[Output]:
    """The registry's outputs with ``flag`` set (``compare``, ``chart``, ``table``, ``sweep``), in
    registry order; ``workload`` False keeps only those every evaluation has."""
    return [o for o in OUTPUTS if getattr(o, flag) and (workload is None or workload or not o.workload)]


def sweep_defaults(has_workload: bool) -> list[str]:
    """The result paths a sweep stores when the request names none."""
    return [o.path for o in selected("sweep", workload=has_workload)]


RESULT_SECTIONS = {
    "cluster": "nodes, GPUs and scale-up domains", "racks": "racks under their power limit",
    "compute": "achieved GEMM TFLOPS per precision and the sustained clock",
    "calibration": "each constant a measurement may replace: its value and source (family or measured)",
    "fabric": "switches by layer, endpoints, capacity, NICs, cables, transceivers, fibres",
    "power": "power per part, IT and facility watts, energy", "cost": "extended prices, capex, energy cost",
    "storage": "aggregate storage bandwidth and its bound",
    "collectives": "HFReduce and NCCL across the cluster: bandwidth, time, the binding constraint, every bound",
    "reliability": "interruptions, repair, availability; with a workload the job's, checkpoints and ETTR",
    "training": "with a workload: feasibility, step time and its parts, MFU, HFU, memory, time and cost to train",
}
_METRIC_VALUE = [{"type": "number"}, {"type": "boolean"}, {"type": "null"},
                 {"type": "array", "items": {"type": ["number", "boolean", "null"]}}]


def result_json_schema() -> dict:
    """The engine's result document as a JSON Schema: every section, and in it every registered
    metric with its label, unit (``x-unit``) and which way is better; a section's other figures are
    allowed (docs/scenario-format.md names them). A metric is a number (or true/false), or a list
    of them with one per scenario point."""
    sections = {name: {"type": "object", "description": doc, "properties": {}, "additionalProperties": True}
                for name, doc in RESULT_SECTIONS.items()}
    for output in OUTPUTS:
        if not output.path:
            continue
        section, *inner, leaf = output.path.split(".")
        node = sections[section]
        for key in inner:
            node = node["properties"].setdefault(key, {"type": "object", "properties": {},
                                                       "additionalProperties": True})
        node["properties"][leaf] = {"anyOf": _METRIC_VALUE, "description": f"{output.label} ({output.unit})"
                                    + (f", {output.better} is better" if output.better else ""),
                                    "x-unit": output.unit}
    constraint = {"type": "object", "required": ["code", "message"],
                  "properties": {"code": {"type": "string"}, "message": {"type": "string"}}}
    return {"type": "object", "required": ["engine_version", "cluster", "compute", "fabric", "constraints"],
            "properties": {"engine_version": {"type": "string"}, **sections,
                           "constraints": {"type": "array", "items": constraint,
                                           "description": "what limits the build, each with a stable code"}},
            "additionalProperties": False}
