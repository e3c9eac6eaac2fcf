"""Curves for the plan page's charts, each from one vectorized evaluation."""
import numpy as np

from simcore.arrays import to_json
from simcore.document import parse
from simcore.errors import ScenarioError
from simcore.formulas import collectives, reliability, training
from simcore.formulas.node import node_io, scaleup_domain_gpus
from simcore.formulas.reliability import SECONDS_PER_DAY
from simcore.stages.cluster import calibrated_family, cluster_allreduces
from simcore.stages.scenario import EngineParams, evaluate_parsed


def curves(document, params: EngineParams | None = None, result: dict | None = None) -> dict:
    """Curves for charts, each from one vectorized call:

    * allreduce algorithm bandwidth (HFReduce, HFReduce with NVLink pairs where the node has them,
      NCCL) against GPU count at ``options.message_bytes``, and against message size across the
      whole cluster, as the collective report computes it (:func:`simcore.stages.cluster.cluster_allreduces`),
      with NCCL's algorithm at each point (ring below ``nccl_tree_min_ranks``, the tree from there:
      the one step in the NCCL curve);
    * with a workload, step time against the job's GPU count for strong scaling (global batch
      fixed) and weak scaling (batch per GPU fixed), with the efficiencies T(n0)/T(n) and
      n0 T(n0) / (n T(n)) against the smallest feasible count;
    * with a workload, ETTR against the checkpoint interval (the closed form of
      ``reliability.ettr_closed_form``, from a tenth to thirty times the optimum), with the
      optimum and the plan's interval marked (from ``result``, the document's evaluation, when
      the caller has it), and ETTR against the restart time at the plan's interval (ten seconds
      to four hours, the plan's restart marked).
    """
    params = params or EngineParams()
    parsed = parse(document)
    c = parsed["cluster"]
    node, g = c["node"], float(c["node"]["gpus"])
    if np.ndim(c["node_count"]) or np.ndim(g):
        raise ScenarioError("cluster.node_count", "curves take one cluster, not a list")
    family = calibrated_family(params.families[node["accelerator"]["family"]], c["calibration"])
    io = node_io(node, node["accelerator"], g, family.scaleup_fraction, params.collectives)
    nodes = np.unique(np.append(2.0 ** np.arange(0, int(np.log2(float(c["node_count"]))) + 1), c["node_count"]))
    sizes = 2.0 ** np.arange(20, 31)  # 1 MiB .. 1 GiB
    msg = float(np.max(parsed["options"]["message_bytes"]))
    domain = scaleup_domain_gpus(node)

    def allreduces(size, count):
        return cluster_allreduces(node, io, np.minimum(domain, count * g), size, count, params)

    by_gpus, by_size = allreduces(msg, nodes), allreduces(sizes, c["node_count"])
    out = {
        "allreduce_vs_gpus": {"gpus": nodes * g, "message_bytes": msg,
                              **{name: r.algbw_gbyte_s for name, r in by_gpus.items()},
                              "nccl_algorithm": nccl_algorithm(by_gpus["nccl"])},
        "allreduce_vs_size": {"message_bytes": sizes, "gpus": float(c["node_count"]) * g,
                              **{name: r.algbw_gbyte_s for name, r in by_size.items()},
                              "nccl_algorithm": nccl_algorithm(by_size["nccl"])},
    }
    if parsed["has_workload"]:
        out["scaling"] = _scaling(document, parsed, params)
        rel = (result or evaluate_parsed(parsed, params))["reliability"]
        if np.isfinite(np.asarray(rel["ettr"], float)).all():  # none where the checkpoint cost is unknown
            out["ettr_vs_interval"] = _ettr_vs_interval(rel)
            out["ettr_vs_restart"] = _ettr_vs_restart(rel)
    return to_json(out)


def nccl_algorithm(result: collectives.CollectiveResult) -> list[str]:
    """'ring' or 'tree' at each point: the algorithm whose bound binds."""
    return [name.split(":")[0] for name in np.ravel(result.binding)]


def _ettr_vs_interval(rel: dict, points: int = 61):
    optimum = float(np.max(rel["optimal_interval_s"]))
    rate_s = float(np.max(rel["job_interruptions_per_day"])) / SECONDS_PER_DAY
    checkpoint_s, restart_s = float(np.max(rel["checkpoint_time_s"])), float(np.max(rel["restart_time_s"]))
    intervals = optimum * np.logspace(-1, np.log10(30), points)
    return {"interval_s": intervals,
            "ettr": reliability.ettr_closed_form(intervals, checkpoint_s, restart_s, rate_s) * _unstalled(rel),
            "optimal_interval_s": optimum, "ettr_at_optimum": float(np.max(rel["ettr_at_optimum"])),
            "plan_interval_s": float(np.max(rel["checkpoint_interval_s"])), "plan_ettr": float(np.max(rel["ettr"]))}


def _unstalled(rel: dict) -> float:
    return 1 - float(np.max(rel["link_flap_stall_fraction"]))


def _ettr_vs_restart(rel: dict, points: int = 61):
    rate_s = float(np.max(rel["job_interruptions_per_day"])) / SECONDS_PER_DAY
    interval_s, checkpoint_s = float(np.max(rel["checkpoint_interval_s"])), float(np.max(rel["checkpoint_time_s"]))
    restarts = np.logspace(1, np.log10(4 * 3600), points)
    return {"restart_s": restarts,
            "ettr": reliability.ettr_closed_form(interval_s, checkpoint_s, restarts, rate_s) * _unstalled(rel),
            "interval_s": interval_s, "plan_restart_s": float(np.max(rel["restart_time_s"])),
            "plan_ettr": float(np.max(rel["ettr"]))}


def _scaling(document, parsed, params):
    w = parsed["workload"]
    cluster_gpus = float(parsed["cluster"]["node_count"] * parsed["cluster"]["node"]["gpus"])
    job = float(np.max(np.where(np.isnan(w["gpus"]), cluster_gpus, w["gpus"])))
    unit = float(np.max(w["tp"] * w["pp"]))
    counts = np.unique(np.append(unit * 2.0 ** np.arange(0, int(np.log2(max(job / unit, 1))) + 1), job))
    per_gpu_batch = float(np.max(w["global_batch"])) / job
    weak_batches = np.maximum(np.round(per_gpu_batch * counts / np.max(w["micro_batch"])), 1) * np.max(w["micro_batch"])
    # Strong (global batch fixed) and weak (batch per GPU fixed) points in one vectorized call.
    strong_batches = np.broadcast_to(np.max(w["global_batch"]), counts.shape)
    both = {**document, "workload": {**document["workload"], "gpus": np.concatenate([counts, counts]).tolist(),
                                     "global_batch": np.concatenate([strong_batches, weak_batches]).tolist()}}
    step_both = evaluate_parsed(parse(both), params)["training"]["step_time_s"]
    step, weak_step = step_both[:counts.size], step_both[counts.size:]
    feasible = np.flatnonzero(np.isfinite(step))
    strong_eff = np.full(counts.shape, np.nan)
    weak_eff = np.full(counts.shape, np.nan)
    if feasible.size:
        first = feasible[0]
        strong_eff = training.strong_scaling_efficiency(counts, step, counts[first], step[first])
        weak_eff = training.weak_scaling_efficiency(weak_step, weak_step[first])
    return {"gpus": counts, "strong_step_time_s": step, "strong_efficiency": strong_eff,
            "weak_global_batch": weak_batches, "weak_step_time_s": weak_step, "weak_efficiency": weak_eff}
