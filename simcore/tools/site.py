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

Risk: a point's time to train has the error band of its family and workload's step time (the
columns ``band.low_error`` and ``band.high_error``: predicted / published - 1 of the validation
record's runs like it), so the time the job really takes lies between days / (1 + high) and days /
(1 + low); its owned cost between the build's price at its low and at its high (the price book's
estimates), plus the energy. Where in its band a run will land, the record does not say: the
chance of meeting the deadline (or the budget) is the share of the band at or under it, the band
taken as uniform (:func:`share_within`). Planning at a confidence c (``Site.confidence``) holds each
point to its band's c-quantile (:func:`at_confidence`) instead of the engine's figure: at 95% a
build meets the deadline only if 95% of its band does, and its cost, ranked and shown, is that of
the same quantile's days (:func:`figures_at`), never the engine's days' cost beside the band's days.
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
                "power.facility_w", "power.facility_provisioned_w", "racks.total_count", "racks.within_power_limit",
                "cluster.gpus", "cluster.nodes")


@dataclass(frozen=True)
class Site:
    """A facility, a budget and a goal (the units in the names; None: no such limit), and the
    confidence to plan at (a share of the band; None: the engine's figures)."""

    facility_w: float
    floor_racks: int
    goal: str
    deadline_days: float | None = None
    budget: float | None = None
    confidence: float | None = None


def at_confidence(low, high, confidence: float):
    """The value a uniform band from ``low`` to ``high`` stays at or under with this confidence."""
    return low + confidence * (high - low)


def share_within(low, high, limit):
    """The share of a uniform band from ``low`` to ``high`` at or under ``limit`` (a band of no
    width: 1 if it is at or under, else 0; NaN stays NaN)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.clip((limit - low) / (high - low), 0.0, 1.0)
    return np.where(high > low, share, np.where(np.isnan(high), np.nan, (high <= limit) * 1.0))


def bands(columns: dict, ownership: str) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Each point's time to train (days) and cost as (low, high): the step time's band, and the cost
    over the same band, since what the run pays by the hour (a rented build's rent, an owned one's
    energy) lasts as long as the run: low at the band's short end (and an owned build's price at
    the price book's low), high at its long end (and the price at its high)."""
    days = columns["training.time_to_train_days"]
    low_error = columns.get("band.low_error", np.zeros_like(days))
    high_error = columns.get("band.high_error", np.zeros_like(days))
    short, long = days / (1 + high_error), days / (1 + low_error)
    with np.errstate(invalid="ignore", divide="ignore"):
        stretches = [np.where(np.isfinite(end / days), end / days, 1.0) for end in (short, long)]
    cost = _cost(columns, ownership)
    if ownership == "owned":
        capex = columns["cost.capex_total"]
        low, high = (columns.get(f"cost.capex_{end}", capex) for end in ("low", "high"))
        low, high = np.where(np.isfinite(low), low, capex), np.where(np.isfinite(high), high, capex)
        costs = (low + (cost - capex) * stretches[0], high + (cost - capex) * stretches[1])
    else:
        costs = (cost * stretches[0], cost * stretches[1])
    return {"days": (short, long), "cost": costs}


def _cost(columns: dict, ownership: str) -> np.ndarray:
    """The engine's cost of the run: buying the build and powering it, or renting it."""
    return columns["training.buy_and_run_cost"] if ownership == "owned" else columns["training.rent_cost_to_train"]


def figures_at(columns: dict, site: Site, ownership: str, found: dict | None = None) -> dict[str, np.ndarray]:
    """Each point's time to train (days) and cost as the site plans them: the engine's figures, or,
    at a confidence, the same quantile of both bands (one answer: the cost of that many days)."""
    if site.confidence is None:
        return {"days": columns["training.time_to_train_days"], "cost": _cost(columns, ownership)}
    found = found or bands(columns, ownership)
    return {key: at_confidence(*found[key], site.confidence) for key in ("days", "cost")}


def objective(columns: dict, goal: str, ownership: str, site: Site | None = None,
              found: dict | None = None) -> np.ndarray:
    """The value a goal minimises, per point, for one way of paying: the cost (by a date) or the
    cost per million tokens, at the site's confidence when it plans at one."""
    engine_cost = _cost(columns, ownership)
    cost = engine_cost if site is None else figures_at(columns, site, ownership, found)["cost"]
    if goal == "by_date":
        return cost
    per_million = columns["training.cost_per_million_tokens" if ownership == "owned"
                          else "training.rent_cost_per_million_tokens"]
    with np.errstate(invalid="ignore", divide="ignore"):
        return per_million * np.where(engine_cost > 0, cost / engine_cost, 1.0)


def provisioned_w(columns: dict) -> np.ndarray:
    """The facility power a site provisions for each point: its compute nodes at their maximum through
    the PUE (a sweep stored before engine 0.15.1 has only the training draw, which stands in)."""
    return columns.get("power.facility_provisioned_w", columns["power.facility_w"])


def limit_masks(columns: dict, site: Site, ownership: str, found: dict | None = None) -> dict[str, np.ndarray]:
    """Each limit of the site as a mask of the points that meet it (NaN never meets one): the time
    and the cost the engine gives, or, planning at a confidence, their bands' quantiles (``found``:
    :func:`bands`, when the caller has them)."""
    planned = figures_at(columns, site, ownership, found)
    days, cost = planned["days"], planned["cost"]
    with np.errstate(invalid="ignore"):
        masks = {"power": provisioned_w(columns) <= site.facility_w,
                 "floor": columns["racks.total_count"] <= site.floor_racks,
                 "rack_power": columns["racks.within_power_limit"] > 0,
                 "priced": np.isfinite(cost),
                 "budget": cost <= (np.inf if site.budget is None else site.budget),
                 "deadline": days <= (np.inf if site.deadline_days is None else site.deadline_days)}
    masks["deadline"] &= np.isfinite(days)
    return masks


def chances(found: dict, site: Site, at: int) -> dict[str, float | None]:
    """A point's chance of meeting the deadline and the budget, from the points' :func:`bands`
    (:func:`share_within`; None: no such limit, or no figure)."""
    shares = {}
    for key, band, limit in (("deadline", found["days"], site.deadline_days), ("budget", found["cost"], site.budget)):
        share = float(share_within(band[0][at], band[1][at], limit)) if limit is not None else np.nan
        shares[f"{key}_probability"] = share if np.isfinite(share) else None
    return shares


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
        found = bands(columns, ownership)
        masks = limit_masks(columns, site, ownership, found)
        feasible = valid.copy()
        for ok in masks.values():
            feasible &= ok
        value = objective(columns, site.goal, ownership, site, found)
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
                               "binding": _binding(valid & mine, masks, better, columns["invalid_reason"][mine]),
                               **(chances(found, site, best) if best is not None else
                                  {"deadline_probability": None, "budget_probability": None})})
    return sorted(ranked, key=lambda r: (r["point"] is None, r["objective"] if r["objective"] is not None else 0.0))
