"""The engine work a request asks for, estimated before it runs.

A web server holds a worker for as long as an evaluation takes, and each request limit alone (points,
replicas, horizon, cluster size) allows requests that multiply to minutes of work and gigabytes of
memory. :func:`check` estimates the seconds an evaluation will take from what it will compute, and
refuses (a :class:`WorkBudgetExceeded`, a field error) what would exceed a budget:

* ``points x point_s``: the analytical model over the scenario points;
* ``points x response_point_s``: writing that result as the JSON answer (about 2.8 kB a point with
  a workload; at 50,000 points the encoding took 30 times the engine's time and 139 MB);
* with Monte Carlo, ``replicas x points x categories x category_draw_s`` for the event counts, plus
  ``failure_draw_s`` per failure and failed restart the ETTR simulation draws (its expected number
  follows from the job's interruption rate, known once the analytical model has run);
* a digital twin: ``twin_gpu_s`` per GPU it simulates.

The costs are seconds on one core of the reference machine (2-core x86-64), measured by
``python -m simcore bench`` (which prints them again for the machine it runs on) and kept at the
dearer end of what was seen, since the budget exists for large requests: ``point_s`` 21 us per point
of a 100,000-point evaluation (10 us at 20,000 points; grids that vary the parallel layout cost
less, 3.5 us, or 7.5 us when no GEMM shape repeats, so one figure covers every kind of grid);
``response_point_s`` 60 us (53 us at 20,000 points, 55 us plus 7 us of ``to_json`` at 50,000);
``category_draw_s`` 66-73 ns; ``failure_draw_s`` 73 ns over 690 million draws (27 ns over 2 million);
``twin_gpu_s`` 37 ns.
"""
from dataclasses import dataclass

import numpy as np

from simcore.arrays import where
from simcore.errors import ScenarioError


@dataclass(frozen=True)
class WorkCosts:
    point_s: float = 20e-6
    response_point_s: float = 60e-6
    category_draw_s: float = 70e-9
    failure_draw_s: float = 75e-9
    twin_gpu_s: float = 5e-8


WORK_COSTS = WorkCosts()


class WorkBudgetExceeded(ScenarioError):
    """The request would take more engine time than the budget allows."""

    def __init__(self, field: str, estimate_s: float, budget_s: float, advice: str):
        self.estimate_s = estimate_s
        self.budget_s = budget_s
        super().__init__(field, f"needs about {estimate_s:.3g} s of engine work; at most {budget_s:g} s per "
                                f"request (the work budget): {advice}")


def check(field: str, estimate_s: float, budget_s: float | None, advice: str) -> None:
    """Raise :class:`WorkBudgetExceeded` when ``estimate_s`` is over ``budget_s`` (None: no budget)."""
    if budget_s is not None and estimate_s > budget_s:
        raise WorkBudgetExceeded(field, float(estimate_s), budget_s, advice)


def answer_s(points: int, costs: WorkCosts = WORK_COSTS) -> float:
    """The analytical model over the points and the JSON answer that carries every point back."""
    return points * (costs.point_s + costs.response_point_s)


def monte_carlo_s(replicas: int, points: int, categories: int, failure_draws_per_replica,
                  costs: WorkCosts = WORK_COSTS) -> float:
    """Event counts for every category, then the ETTR simulation's failure draws (summed over
    points; NaN where no job runs counts as none)."""
    draws = float(np.nansum(failure_draws_per_replica)) * replicas
    return replicas * points * categories * costs.category_draw_s + draws * costs.failure_draw_s


def ettr_failure_draws(segments, segment_s, restart_s, rate_per_s):
    """Expected failures plus failed restarts per replica of :func:`reliability.ettr_monte_carlo`:
    segments x (1 - p) / p failed attempts (p = e^(-rate x segment)), each restarting with
    (1 - q) / q failed restarts (q = e^(-rate x restart)); a hopeless cell draws nothing."""
    with np.errstate(over="ignore", invalid="ignore"):
        p = np.exp(-np.asarray(rate_per_s, float) * segment_s)
        q = np.exp(-np.asarray(rate_per_s, float) * restart_s)
        failures = where(p < 1e-9, 0.0, segments * (1 - p) / p)
        return where(q < 1e-9, 0.0, failures / q)


def twin_s(gpus: int, costs: WorkCosts = WORK_COSTS) -> float:
    return gpus * costs.twin_gpu_s
