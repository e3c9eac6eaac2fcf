"""The planner's Prometheus counters: engine evaluations and their time, work-budget refusals,
sweep chunks and points, twin advances. ``/metrics/`` (config.observability) serves them."""
from prometheus_client import Counter, Histogram

EVALUATIONS = Counter("planner_evaluations_total", "Engine evaluations run (cache misses)", ["kind"])
EVALUATION_SECONDS = Histogram("planner_evaluation_seconds", "Engine time per evaluation", ["kind"],
                               buckets=(0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10))
WORK_REFUSED = Counter("planner_work_budget_refusals_total", "Requests refused by the engine work budget")
SWEEP_CHUNKS = Counter("planner_sweep_chunks_total", "Sweep chunks evaluated and stored")
SWEEP_POINTS = Counter("planner_sweep_points_total", "Sweep points evaluated")
TWIN_TICKS = Counter("planner_twin_ticks_total", "Digital-twin advances saved")
