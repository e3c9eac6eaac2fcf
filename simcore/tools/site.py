"""Site-first planning: from a facility, a budget and a goal to a ranked list of builds.

A sweep evaluates every catalogue build (a template plan with the site's racks, hall and price
book) at many sizes and layouts (:mod:`simcore.tools.sweep`). This module turns its columns into
the answer a buyer reads: for each build, owned and rented, the best point that meets every limit
of the site, ranked by the goal, and for each the limit that binds it.

The limits, each a mask over the points:

* ``power``: facility power (IT power through the PUE) within the site's megawatts;
* ``floor``: racks (compute and scale-up network racks) within the site's floor;
* ``rack_power``: a rack's maximum draw within the site's rack power and cooling limit;
* ``priced``: the build's cost is known (owned: every counted part priced; rented: a GPU-hour price
  for its GPU on some rental term), so that an incomplete bill never looks cheaper;
* ``budget``: the cost within the budget (owned: buying the build plus the run's energy, the
  engine's ``buy_and_run_cost``; rented: the run's GPU-hours at the cheapest rental term that covers
  its days, ``rent_cost_to_train``);
* ``deadline``: the tokens trained by the date (days of wall time, through the job's ETTR).

The goals: ``by_date`` minimises the cost of having the tokens trained by the date; ``per_dollar``
minimises the cost per million tokens (owned: the capital amortized over the book's years plus
energy, the engine's ``cost_per_million_tokens``; rented: ``rent_cost_per_million_tokens``).

A build's binding limit is the one that stops it doing better: among its valid points whose
objective beats its best point's, the limit that rejects the most. A build with no point meeting
every limit names the limit no valid point meets, else the one rejecting the most of them.
"""
from dataclasses import dataclass

import numpy as np

OWNERSHIPS = ("owned", "rented")
GOALS = ("by_date", "per_dollar")
# Limit key -> what its sentence calls it.
LIMITS = {"power": "site power", "floor": "floor space", "rack_power": "rack power", "priced": "prices",
          "budget": "budget", "deadline": "deadline"}
# The sweep outputs the ranking reads.
SITE_OUTPUTS = ("training.time_to_train_days", "training.step_time_s", "training.mfu", "training.buy_and_run_cost",
                "training.cost_per_million_tokens", "training.rent_cost_to_train", "training.rent_term_code",
                "training.rent_cost_per_million_tokens", "cost.capex_total", "cost.capex_low", "cost.capex_high",
                "cost.unpriced_count",
                "power.facility_w", "racks.total_count", "racks.within_power_limit", "cluster.gpus", "cluster.nodes")


@dataclass(frozen=True)
class Site:
    """A facility, a budget and a goal (the units in the names; None: no such limit)."""

    facility_w: float
    floor_racks: int
    goal: str
    deadline_days: float | None = None
    budget: float | None = None


def objective(columns: dict, goal: str, ownership: str) -> np.ndarray:
    """The value a goal minimises, per point, for one way of paying."""
    if goal == "by_date":
        return columns["training.buy_and_run_cost"] if ownership == "owned" else columns["training.rent_cost_to_train"]
    return columns["training.cost_per_million_tokens" if ownership == "owned"
                   else "training.rent_cost_per_million_tokens"]


def limit_masks(columns: dict, site: Site, ownership: str) -> dict[str, np.ndarray]:
    """Each limit of the site as a mask of the points that meet it (NaN never meets one)."""
    cost = columns["training.buy_and_run_cost"] if ownership == "owned" else columns["training.rent_cost_to_train"]
    with np.errstate(invalid="ignore"):
        masks = {"power": columns["power.facility_w"] <= site.facility_w,
                 "floor": columns["racks.total_count"] <= site.floor_racks,
                 "rack_power": columns["racks.within_power_limit"] > 0,
                 "priced": np.isfinite(cost),
                 "budget": cost <= (np.inf if site.budget is None else site.budget),
                 "deadline": columns["training.time_to_train_days"] <= (
                     np.inf if site.deadline_days is None else site.deadline_days)}
    masks["deadline"] &= np.isfinite(columns["training.time_to_train_days"])
    return masks


def _binding(valid: np.ndarray, masks: dict, better: np.ndarray | None, reasons: np.ndarray) -> dict:
    """What binds a build: with a best point, the limit rejecting most of the valid points that beat
    it (``better``); with none, the limit no valid point meets, else the one rejecting the most; with
    no valid point at all, the commonest reason its points are invalid (``reasons``, the build's)."""
    if not valid.any():
        found, counts = np.unique(reasons.astype(str), return_counts=True)
        return {"limit": "valid", "reason": f"no size or layout is valid: {found[np.argmax(counts)]}"}
    if better is not None:
        if not better.any():
            return {"limit": None, "reason": "its best point meets every limit: none binds"}
        key = max(masks, key=lambda k: int((better & ~masks[k]).sum()))
        return {"limit": key, "reason": f"the points that would do better break the {LIMITS[key]} limit"}
    for key, ok in masks.items():
        if not (valid & ok).any():
            return {"limit": key, "reason": f"no valid point meets the {LIMITS[key]} limit"}
    key = max(masks, key=lambda k: int((valid & ~masks[k]).sum()))
    return {"limit": key, "reason": f"each limit is met somewhere, never all together; the {LIMITS[key]} "
                                    "limit rejects the most points"}


def rank_builds(columns: dict, build: np.ndarray, layers: np.ndarray, site: Site) -> list[dict]:
    """Every build (a combination index, its fabric layers, owned or rented) with its best point
    (the position in ``columns``) under the site's limits, best first; builds with no point
    meeting every limit follow, each with its binding limit. Ties go to the lower position."""
    valid = columns["valid"].astype(bool)
    ranked = []
    for ownership in OWNERSHIPS:
        masks = limit_masks(columns, site, ownership)
        feasible = valid.copy()
        for ok in masks.values():
            feasible &= ok
        value = objective(columns, site.goal, ownership)
        order = np.lexsort((np.arange(value.size), np.where(feasible, value, np.inf)))
        for combo in np.unique(build):  # a few catalogue builds, never the points
            for layer in np.unique(layers[build == combo]):
                mine = (build == combo) & (layers == layer)
                candidates = feasible & mine & np.isfinite(value)
                best = int(order[np.argmax(candidates[order])]) if candidates.any() else None
                better = None
                if best is not None:
                    with np.errstate(invalid="ignore"):
                        better = valid & mine & ~feasible & (value < value[best])
                ranked.append({"build": int(combo), "layers": int(layer), "ownership": ownership, "point": best,
                               "objective": None if best is None else float(value[best]),
                               "binding": _binding(valid & mine, masks, better, columns["invalid_reason"][mine])})
    return sorted(ranked, key=lambda r: (r["point"] is None, r["objective"] if r["objective"] is not None else 0.0))
