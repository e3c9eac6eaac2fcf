"""The reliability stage: failure categories for the scenario, cluster-wide rates, a job's
interruptions, checkpoints, restarts and ETTR, and the Monte Carlo check (formulas and sources in
:mod:`simcore.formulas.reliability` and :mod:`simcore.formulas.storage`)."""
from dataclasses import dataclass

import numpy as np

from simcore import budget
from simcore.arrays import label, where
from simcore.errors import ScenarioError
from simcore.formulas import reliability, storage


def failure_categories(rel, spans_nodes=False, xids=True, nvlink=True):
    """The profile's categories that can happen on the build (with the scale-up domain's own where
    it spans nodes), with any rate the scenario replaces (``category_rates``), and the excluded
    ones with their reasons."""
    rate = None
    if rel["profile"] == "per-node-rate":
        rate = rel["failures_per_1000_node_days"]
        if np.any(np.isnan(rate)):
            raise ScenarioError("cluster.reliability.failures_per_1000_node_days",
                                "is required by the per-node-rate profile")
        if rate.ndim:
            raise ScenarioError("cluster.reliability.failures_per_1000_node_days", "takes one value")
        rate = float(rate)
    categories = reliability.build_categories(
        rel["profile"], failures_per_1000_node_days=rate, rates=rel["category_rates"],
        flap_share=float(rel["link_flap_share"]), flap_s=float(rel["link_flap_s"]), domain_spans_nodes=spans_nodes,
        xids=xids, nvlink=nvlink, field="cluster.reliability.category_rates")
    return categories, reliability.excluded_categories(rel["profile"], xids=xids, nvlink=nvlink)


def reliability_cluster(categories, units):
    """Cluster-wide event rates (job-caused ones at the measured fleet rate), the platform faults
    that would stop a job spanning the cluster, the fabric's share of them and of repair work,
    node availability and MTTR."""
    def per_day(weight, job_fault_factor=1.0):
        return reliability.rate_per_hour(categories, units, weight, job_fault_factor) * 24

    platform_stops = per_day(lambda c: c.interrupts_job and c.cause == reliability.PLATFORM)
    fabric_stops = per_day(lambda c: c.interrupts_job and c.fabric)
    repair_h = per_day(lambda c: c.repair_h)
    fabric_repair_h = per_day(lambda c: c.repair_h * c.fabric)
    availability, mttr_h = node_availability(categories, units)
    return {
        "events_per_day": per_day(lambda c: 1.0),
        "platform_interruptions_per_day": platform_stops,
        "fabric_interruptions_per_day": fabric_stops,
        "fabric_interruption_share": where(platform_stops > 0, fabric_stops / where(platform_stops > 0,
                                                                                          platform_stops, 1), 0.0),
        "repair_hours_per_day": repair_h,
        "fabric_repair_hours_per_day": fabric_repair_h,
        "fabric_repair_share": where(repair_h > 0, fabric_repair_h / where(repair_h > 0, repair_h, 1), 0.0),
        "node_availability": availability,
        "node_mttr_h": mttr_h,
        "by_category_per_day": reliability.category_rates(categories, units, hours=24),
        "categories": [{"key": c.key, "label": c.label, "unit": c.unit, "cause": c.cause, "detection": c.detection,
                        "interrupts_job": c.interrupts_job} for c in categories],  # sources: describe_profiles()
    }


def node_availability(categories, units):
    """A node's steady-state availability and MTTR from the faults that take it out of service:
    its GPUs', its own, its NICs' and their links' (one link per NIC) and its scale-up domain's
    (platform faults only, a job's own faults leave the hardware up)."""
    node_units = {**units, "link": units["nic"], "domain": units["node"]}  # each node shares its domain's fate
    node_level = lambda c: c.unit in ("gpu", "node", "nic", "link", "domain")  # noqa: E731
    down_per_node = reliability.rate_per_hour(categories, node_units, lambda c: node_level(c) and c.repair_h > 0,
                                              0.0) / units["node"]
    repair_hours_per_node = reliability.rate_per_hour(categories, node_units, lambda c: c.repair_h * node_level(c),
                                                      0.0) / units["node"]
    mttr_h = where(down_per_node > 0, repair_hours_per_node / where(down_per_node > 0, down_per_node, 1), 0.0)
    return reliability.node_availability(down_per_node, mttr_h), mttr_h


@dataclass(frozen=True)
class JobCycle:
    """What the job's reliability hands the cost stage and the Monte Carlo check, arrays over
    scenario points: the checkpoint ``interval_s``, the job's stall per checkpoint
    ``checkpoint_s`` and its ``restart_s`` (s), its ``interruptions_per_s``, the share of time
    link flaps stall it (``flap_stall_fraction``) and its ETTR (fraction of wall time)."""

    interval_s: np.ndarray
    checkpoint_s: np.ndarray
    restart_s: np.ndarray
    interruptions_per_s: np.ndarray
    flap_stall_fraction: np.ndarray
    ettr: np.ndarray


def _checkpoint_policy(rel, job, node, sto, rates) -> dict:
    """What a checkpoint costs the job (reliability module docstring, checkpoint policy): the
    storage write and load (unknown without a storage plane), the snapshot to host memory over
    PCIe, and for in-memory copies the copy to a peer's host memory over the compute NICs; the
    stall, what runs behind the job (``behind_s``: a failure loses it too) and what a restart loads."""
    per_node, fixed_s = sto["checkpoint_write_gbyte_s_per_node"], rel["checkpoint_fixed_s"]
    size = job.checkpoint_bytes
    write_s, write_bound = storage.checkpoint_time_s(size, job.nodes, per_node, rates.write_gbyte_s, fixed_s)
    load_s, load_bound = storage.checkpoint_time_s(size, job.nodes, per_node, rates.read_gbyte_s)
    peer_s = size / job.nodes / (node["compute_nics"] * node["compute_nic_gbit_s"] / 8 * 1e9)
    snapshot_s = size / job.gpus / (node["pcie_bw_gbyte_s"] * 1e9) + fixed_s
    in_memory = rel["checkpoint_in_memory"]
    asynchronous = rel["checkpoint_mode"] == "async"
    behind_s = where(in_memory, peer_s, write_s)  # what runs behind the job when it does not wait for it
    stall_s = where(asynchronous, snapshot_s, where(in_memory, snapshot_s + peer_s, write_s))
    return {"write_s": write_s, "write_bound": write_bound, "load_s": where(in_memory, peer_s, load_s),
            "load_bound": load_bound, "in_memory": in_memory, "asynchronous": asynchronous, "peer_s": peer_s,
            "stall_s": stall_s, "behind_s": where(asynchronous, behind_s, 0.0)}


def _checked_interval(rel, behind_s, optimal):
    """The plan's checkpoint interval, or the optimum; one shorter than the write running behind it is bad input."""
    given = rel["checkpoint_interval_s"]
    too_short = np.broadcast_to(given < behind_s, np.broadcast(given, behind_s).shape)
    if np.any(too_short):
        first = np.flatnonzero(too_short.ravel())[0]
        raise ScenarioError("cluster.reliability.checkpoint_interval_s",
                            f"{float(np.broadcast_to(given, too_short.shape).ravel()[first]):.3g} s is shorter than "
                            f"the checkpoint write running behind it "
                            f"({float(np.broadcast_to(behind_s, too_short.shape).ravel()[first]):.3g} s): "
                            "a snapshot cannot start before the previous one is written")
    return where(np.isnan(given), optimal, given)


def _spares(categories, units, job_nodes, confidence):
    """Spare nodes for the job, and per scale-up domain (NaN where domains are nodes): without
    multi-node domains the job's nodes are one pool, the one-domain case of the same sizing."""
    availability = node_availability(categories, units)[0]
    domains = units["domain"]
    per_domain = reliability.spares_per_domain(np.ceil(job_nodes / np.maximum(domains, 1)), domains, availability,
                                               confidence)
    return per_domain * np.maximum(domains, 1), where(domains > 0, per_domain, np.nan)


def reliability_job(p, categories, job, units, node, sto, rates) -> tuple[dict, JobCycle]:
    """The job's interruptions (platform faults on ``units``, its parts, and its own faults at its
    stated rate), checkpoint policy (``rates``: the storage's), restart time in parts, interval and
    ETTR (reliability module docstring): the result's figures and what later stages take."""
    rel = p["cluster"]["reliability"]
    factor = job.fault_factor
    ckpt = _checkpoint_policy(rel, job, node, sto, rates)
    load_s, stall_s, behind_s = ckpt["load_s"], ckpt["stall_s"], ckpt["behind_s"]
    timing = reliability.restart_timing(rel["restart_profile"],
                                        **{name: rel[name] for name in reliability.RESTART_TIMING_FIELDS})
    kinds, restart_s, parts, by_kind = reliability.job_interruptions(categories, units, factor, timing, job.gpus,
                                                                     load_s, behind_s)
    rate_h = sum(kinds.values())
    rate_s = rate_h / 3600
    given_restart = ~np.isnan(rel["restart_s"])
    restart_s = where(given_restart, rel["restart_s"], restart_s)
    by_kind = {kind: where(given_restart, rel["restart_s"], seconds) for kind, seconds in by_kind.items()}
    optimal = reliability.optimal_interval_s(stall_s, rate_s)
    optimal = np.maximum(optimal, behind_s)
    interval = _checked_interval(rel, behind_s, optimal)
    spares, per_domain = _spares(categories, units, job.nodes, rel["spare_confidence"])
    flap_stall = reliability.flap_stall_fraction(categories, units, rel["link_flap_s"])
    with np.errstate(divide="ignore"):
        mtbi_h = 1 / rate_h
    cycle = JobCycle(interval_s=interval, checkpoint_s=stall_s, restart_s=restart_s, interruptions_per_s=rate_s,
                     flap_stall_fraction=flap_stall,
                     ettr=reliability.ettr_closed_form(interval, stall_s, restart_s, rate_s) * (1 - flap_stall))
    return {
        "job_interruptions_per_day": rate_h * 24,
        "job_mtbi_h": mtbi_h,
        "job_by_category_per_day": reliability.category_rates(categories, units, factor, lambda c: c.interrupts_job,
                                                              hours=24),
        "job_caused_interruptions_per_day": (kinds[(reliability.JOB, reliability.CRASH)]
                                             + kinds[(reliability.JOB, reliability.HANG)]) * 24,
        "checkpoint_mode": rel["checkpoint_mode"],
        "checkpoint_bytes": job.checkpoint_bytes,
        "checkpoint_time_s": stall_s,
        "checkpoint_write_time_s": ckpt["write_s"],
        "checkpoint_bound": label(storage.CHECKPOINT_LABELS, ckpt["write_bound"]),
        "checkpoint_peer_copy_s": where(ckpt["in_memory"], ckpt["peer_s"], np.nan),
        "checkpoint_load_time_s": load_s,
        "checkpoint_load_bound": where(ckpt["in_memory"], "peer host memory over the compute NICs",
                                          label(storage.CHECKPOINT_LABELS, ckpt["load_bound"])),
        "restart_profile": rel["restart_profile"],
        "restart_time_s": restart_s,
        "restart_parts_s": parts,
        "restart_given": given_restart,
        "restart_by_kind_s": by_kind,
        "checkpoint_interval_s": interval,
        "optimal_interval_s": optimal,
        "young_interval_s": reliability.young_interval_s(stall_s, rate_s),
        "daly_interval_s": reliability.daly_interval_s(stall_s, rate_s),
        "link_flap_stall_fraction": flap_stall,
        "ettr": cycle.ettr,
        "ettr_at_optimum": reliability.ettr_closed_form(optimal, stall_s, restart_s, rate_s) * (1 - flap_stall),
        "spare_nodes": spares,
        "spare_nodes_per_domain": per_domain,
    }, cycle


def monte_carlo(p, categories, units, points, work_budget_s, cycle: JobCycle | None = None, feasible=None):
    """Monte Carlo event counts for the whole cluster over the horizon and, with a job (``cycle``:
    :func:`reliability_job`'s; ``feasible``: where it can run), its ETTR; refused first if its
    estimated work is over ``work_budget_s``."""
    opts = p["options"]
    replicas = int(opts["monte_carlo_replicas"])
    hours = opts["monte_carlo_horizon_h"]
    simulate_ettr = cycle is not None and np.any(feasible) and np.isfinite(cycle.ettr).all()
    if simulate_ettr:
        segment = cycle.interval_s + cycle.checkpoint_s
        segments = int(np.clip(np.min(hours * 3600 / segment), 1, 1_000_000))
    draws = (budget.ettr_failure_draws(segments, segment, cycle.restart_s, cycle.interruptions_per_s)
             if simulate_ettr else 0.0)
    budget.check("options.monte_carlo_replicas", budget.monte_carlo_s(replicas, points, len(categories), draws),
                 work_budget_s, f"{replicas:,} replicas over {hours:g} h; fewer replicas or a shorter horizon")
    rng = np.random.default_rng(int(opts["seed"]))
    counts = reliability.sample_category_counts(categories, units, hours, replicas, rng)
    out = {
        "replicas": replicas,
        "horizon_h": hours,
        "events_mean": {c.key: counts[..., i].mean(axis=0) for i, c in enumerate(categories)},
    }
    if simulate_ettr:
        ettr = reliability.ettr_monte_carlo(cycle.interval_s, cycle.checkpoint_s, cycle.restart_s,
                                            cycle.interruptions_per_s, segments=segments, replicas=replicas, rng=rng)
        ettr = ettr * (1 - cycle.flap_stall_fraction)
        out["ettr_mean"] = ettr.mean(axis=0)
        out["ettr_p05"] = np.quantile(ettr, 0.05, axis=0)
    return out
