"""Throughput benchmarks for the engine (printed figures, not timed tests).

* analytical: one scenario document whose fields are arrays of ``points`` values (node count,
  radix, layers and message size vary), evaluated in one call, fabric, power, cost, storage,
  collectives, training and closed-form reliability included;
* layouts: the same for a grid that varies the parallel layout (TP, PP, micro-batch, virtual
  stages, EP) of an MoE on DGX H100 nodes;
* Monte Carlo: failure injection for a 10,000-GPU cluster over one year x ``replicas`` replicas
  (event counts by category and ETTR of a whole-cluster job);
* work costs: the unit costs the web's work budget estimates with (:mod:`simcore.budget`).
"""
import json
import time
from functools import partial

import numpy as np

from simcore import budget
from simcore.document import parse
from simcore.formulas import reliability
from simcore.stages.scenario import EngineParams, evaluate, evaluate_parsed
from simcore.tools.references import FF_2ZONE, LLAMA3_NODE, LLAMA_13B


def grid_document(points: int, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    nodes = rng.integers(64, 4096, points)
    document = {
        "cluster": {
            **FF_2ZONE,
            "node_count": nodes.tolist(),
            "fabric": {"switch_radix": rng.choice([40, 64, 128], points).tolist(),
                       "switch_gbit_s": 200, "layers": rng.choice([2, 3], points).tolist(),
                       "zones": 1},
        },
        "workload": {**LLAMA_13B, "gpus": (nodes * 8).tolist(), "global_batch": (nodes * 8 * 4).tolist()},
        "options": {"message_bytes": rng.uniform(1e6, 1e9, points).tolist()},
    }
    return document


# The layout grid's model: a Mixtral-8x7B-like MoE (32 layers, hidden 4,096, GQA 32/8, 8 experts of
# 14,336, top 2) on 256 DGX H100 nodes, sequence 4,096, 4,096 sequences a step.
LAYOUT_MOE = {"kind": "transformer", "layers": 32, "hidden": 4096, "heads": 32, "kv_heads": 8, "ffn_hidden": 14336,
              "gated_mlp": True, "tied_embeddings": False, "vocab": 32000, "seq_len": 4096, "experts": 8,
              "moe_top_k": 2, "precision": "bf16", "sequence_parallel": True, "zero_stage": 1, "grad_bytes": 2,
              "global_batch": 4096}
LAYOUT_AXES = {"tp": (1, 2, 4, 8), "pp": (1, 2, 4, 8), "micro_batch": (1, 2, 4), "virtual_stages": (1, 2, 4),
               "ep": (1, 2, 4, 8)}


def layout_grid_document(points: int, seed: int = 0) -> dict:
    """A grid that varies the parallel layout at every point: TP, PP, micro-batch, virtual stages and
    EP drawn from ``LAYOUT_AXES`` (layouts that cannot run are points marked infeasible, as in a sweep)."""
    rng = np.random.default_rng(seed)
    layout = {name: rng.choice(values, points).tolist() for name, values in LAYOUT_AXES.items()}
    return {"cluster": {"node_count": 256, "node": LLAMA3_NODE, "fabric": {"switch_radix": 64, "switch_gbit_s": 400,
                                                                          "layers": 2}, "prices": {"currency": "REL"}},
            "workload": {**LAYOUT_MOE, **layout}}


GRIDS = {"analytical": grid_document, "layouts": layout_grid_document}


def bench_analytical(points: int = 1_000_000, repeats: int = 3, grid: str = "analytical") -> dict:
    """Best of ``repeats``: the engine on arrays (``evaluate_parsed``), and the whole public call
    (``evaluate``: validation, the engine and conversion to JSON-ready lists), on one of ``GRIDS``."""
    document = GRIDS[grid](points)
    parsed = parse(document)
    params = EngineParams()
    best = best_public = np.inf
    for _ in range(repeats):
        start = time.perf_counter()
        result = evaluate_parsed(parsed, params)
        best = min(best, time.perf_counter() - start)
        start = time.perf_counter()
        public = evaluate(document, params)
        best_public = min(best_public, time.perf_counter() - start)
    assert np.shape(result["training"]["step_time_s"]) == (points,)
    assert len(public["training"]["step_time_s"]) == points
    return {"points": points, "seconds": best, "points_per_s": points / best,
            "public_seconds": best_public, "public_points_per_s": points / best_public}


def bench_monte_carlo(gpus: int = 10_000, nodes: int = 1_250, years: float = 1.0, replicas: int = 1_000,
                      repeats: int = 3) -> dict:
    categories = reliability.fire_flyer_categories()
    hours = years * 8760
    units = reliability.unit_counts(gpus, nodes, link=reliability.FF_LINKS * nodes / reliability.FF_NODES, nic=nodes)
    rate_s = reliability.interruption_rate_per_hour(categories, units) / 3600
    best = np.inf
    for attempt in range(repeats):
        rng = np.random.default_rng(attempt)
        start = time.perf_counter()
        counts = reliability.sample_category_counts(categories, units, hours, replicas, rng)
        interval = reliability.optimal_interval_s(60.0, rate_s)
        segments = int(hours * 3600 / (interval + 60.0))
        ettr = reliability.ettr_monte_carlo(interval, 60.0, 600.0, rate_s, segments=segments, replicas=replicas,
                                            rng=rng)
        best = min(best, time.perf_counter() - start)
    gpu_years = gpus * years * replicas
    return {"gpus": gpus, "years": years, "replicas": replicas, "seconds": best,
            "gpu_years_per_s": gpu_years / best, "events_per_replica": float(counts.sum() / replicas),
            "ettr_mean": float(ettr.mean())}


def bench_work_costs(repeats: int = 3) -> dict[str, float]:
    """The unit costs of :mod:`simcore.budget` measured here (best of ``repeats``), to set
    :class:`~simcore.budget.WorkCosts` from: seconds per point of ``evaluate`` on the benchmark grid,
    per point of writing its result as JSON (what a web answer costs on top), per Poisson category
    count, per failure draw of the ETTR simulation, per simulated twin GPU."""
    from simcore.tools.twin import Job, Twin

    categories = reliability.fire_flyer_categories()
    units = reliability.unit_counts(10_000, 1_250, link=reliability.FF_LINKS, nic=1_250)
    rate_s, interval_s, restart_s, segments, replicas = 1e-4, 3600.0, 600.0, 10_000, 500
    draws = replicas * budget.ettr_failure_draws(segments, interval_s + 60.0, restart_s, rate_s)
    document = grid_document(20_000)
    result = evaluate(document)
    cases = {
        "point_s": (lambda: evaluate(document), 20_000),
        "response_point_s": (lambda: json.dumps(result), 20_000),
        "category_draw_s": (lambda: reliability.sample_category_counts(
            categories, units, np.full(100, 8760.0), 1_000, np.random.default_rng(0)), 100 * 1_000 * len(categories)),
        "failure_draw_s": (lambda: reliability.ettr_monte_carlo(
            interval_s, 60.0, restart_s, rate_s, segments=segments, replicas=replicas, rng=np.random.default_rng(0)),
            float(draws)),
        "twin_gpu_s": (lambda: Twin(nodes=16_384, gpus_per_node=8, jobs=[Job("j", 15_000, 1e9, 3600.0, 60.0, 60.0)])
                       .to_bytes(), 131_072),
    }
    return {name: best_seconds(run, repeats) / units_of_work for name, (run, units_of_work) in cases.items()}


def best_seconds(run, repeats: int) -> float:
    """The shortest of ``repeats`` timed calls of ``run``."""
    best = np.inf
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
    return best


def point_costs_by_grid(points: int = 20_000, repeats: int = 3) -> dict[str, float]:
    """Seconds per point of ``evaluate`` (best of ``repeats``) for each kind of grid the work budget's
    one ``point_s`` must cover: the analytical grid, the layout grid (a few distinct GEMM shapes,
    each timed once), and the layout grid with a distinct sequence length at every point (every
    point's GEMMs timed on their own)."""
    distinct = layout_grid_document(points)
    distinct["workload"]["seq_len"] = np.random.default_rng(1).integers(1024, 8192, points).tolist()
    documents = {"analytical": grid_document(points), "layouts": layout_grid_document(points),
                 "layouts, every shape distinct": distinct}
    return {name: best_seconds(partial(evaluate, document), repeats) / points
            for name, document in documents.items()}


def run_all(points: int = 1_000_000, replicas: int = 1_000) -> list[str]:
    analytical = bench_analytical(points)
    layouts = bench_analytical(points, grid="layouts")
    mc = bench_monte_carlo(replicas=replicas)
    costs = bench_work_costs()
    by_grid = point_costs_by_grid()
    return [
        f"analytical: {analytical['points']:,} scenario points in {analytical['seconds']:.3f} s "
        f"= {analytical['points_per_s']:,.0f} points/s (engine on arrays)",
        f"analytical via evaluate(): {analytical['public_seconds']:.3f} s "
        f"= {analytical['public_points_per_s']:,.0f} points/s (with validation and JSON-ready output)",
        f"layouts: {layouts['points']:,} points varying TP, PP, micro-batch, virtual stages and EP in "
        f"{layouts['seconds']:.3f} s = {layouts['points_per_s']:,.0f} points/s (engine on arrays; "
        f"{layouts['public_points_per_s']:,.0f} via evaluate())",
        f"monte carlo: {mc['gpus']:,} GPUs x {mc['years']:g} year x {mc['replicas']:,} replicas in "
        f"{mc['seconds']:.3f} s = {mc['gpu_years_per_s']:,.0f} GPU-years/s "
        f"({mc['events_per_replica']:,.0f} failure events per replica, mean ETTR {mc['ettr_mean']:.4f})",
        "work-budget unit costs (simcore.budget.WorkCosts), measured here against the defaults: " + ", ".join(
            f"{name} {value:.3g} ({getattr(budget.WORK_COSTS, name):.3g})" for name, value in costs.items()),
        f"evaluate() per point by kind of grid, against point_s {budget.WORK_COSTS.point_s:.3g}: " + ", ".join(
            f"{name} {value:.3g}" for name, value in by_grid.items()),
    ]
