"""A finished site-first plan's answer: its sweep's points ranked build by build under the site's
limits (:func:`simcore.tools.site.rank_builds`), each best point with its figures and the error
band of its time to train: the published runs like it and, on a build the owner owns, the owner's
own runs, as its plan page has them (a ranking made before the owner's runs changed is made again
when the owner reads it, :func:`site_result_for`). Planning at a confidence, a row's days and cost are one quantile of
their bands (:func:`simcore.tools.site.figures_at`), the engine's days beside them."""
import logging

import numpy as np

from planner.choices import CHEAPEST_TERM
from planner.models import ClusterPlan, MeasuredRun, Sweep
from planner.services.engine import step_time_band
from planner.services.runs import own_rows
from planner.services.sweep_spec import sweep_axes
from planner.services.sweep_store import sweep_columns
from simcore.formulas.cost import RENT_TERM_LABELS
from simcore.tools import site as site_engine
from simcore.tools.sweep import DATA_PARALLEL_AXIS, grid_shape, pareto_front

logger = logging.getLogger(__name__)
# A best point's figures: result path -> the ranking row's key.
FIGURES = {"cluster.gpus": "gpus", "cluster.nodes": "node_count", "training.mfu": "mfu",
           "power.facility_w": "facility_w", "power.facility_provisioned_w": "facility_provisioned_w",
           "racks.total_count": "racks", "cost.capex_total": "capex",
           "cost.capex_low": "capex_low", "cost.capex_high": "capex_high", "training.rent_cost_to_train": "rent_cost"}


def _number(value) -> float | None:
    """A figure for JSON: null where the engine has none (NaN: unpriced, infeasible)."""
    value = float(value)
    return value if np.isfinite(value) else None


def site_limits(site: dict) -> site_engine.Site:
    return site_engine.Site(facility_w=site["facility_w"], floor_racks=site["floor_racks"], goal=site["goal"],
                            deadline_days=site["deadline_days"], budget=site["budget"],
                            confidence=site.get("confidence"))


def _run_ids(sweep: Sweep) -> list[int]:
    return sorted(MeasuredRun.objects.filter(owner_id=sweep.owner_id).values_list("pk", flat=True))


def site_result_for(sweep: Sweep, user) -> dict | None:
    """A finished site plan's ranking as ``user`` may read it. Its owner reads it as their runs now
    stand: ranked again (and stored) when a run was added or deleted since it was made, so that its
    bands are their plan pages' bands. Anyone else (staff) reads it as stored, without the owner's run
    ids: runs are their owner's alone. A ranking stored by an older engine that cannot be made again is
    answered as stored."""
    result = sweep.site_result
    if result is None:
        return None
    if user.pk != sweep.owner_id:
        return {key: value for key, value in result.items() if key != "runs"}
    if result.get("runs", []) == _run_ids(sweep):
        return result
    try:
        sweep.site_result = site_ranking(sweep)
    except (KeyError, ValueError, IndexError):
        logger.warning("site plan %s: stored by an older engine, not ranked again", sweep.pk, exc_info=True)
        return result
    Sweep.objects.filter(pk=sweep.pk, status=Sweep.Status.DONE).update(site_result=sweep.site_result)
    return sweep.site_result


def _rent(site: dict, build: int, term: str) -> dict | None:
    """The rate a rented row pays a GPU-hour, with its provider and date (a site stored before rates
    were kept with it: None)."""
    rents = site.get("rents")
    return None if rents is None else rents[build].get(term)


def _unrented_reason(site: dict, build: int) -> str | None:
    """Why a build cannot be rented on the site's term: its book has no rate for its GPU there."""
    if site.get("rents") is None or site["rents"][build]:
        return None
    term = site["rent_term"]
    return (f"the book has no {'' if term == CHEAPEST_TERM else term + ' '}GPU-hour rate for its GPU"
            f"{' on any term' if term == CHEAPEST_TERM else ''}: renting it is unpriced")


def _build_bands(sweep: Sweep) -> tuple[list[int], list[dict]]:
    """The owner's run ids, and each build's step-time band: the owner's runs join the bands of their
    own builds, as on those builds' pages; a shared build's is the published runs'."""
    site = sweep.site
    run_ids = _run_ids(sweep)
    rows_of_runs = own_rows(sweep.owner) if run_ids else []
    owned = set(ClusterPlan.objects.filter(slug__in=site["builds"], owner_id=sweep.owner_id)
                .values_list("slug", flat=True))
    made = {}  # (family, owned) -> its band
    for family, slug in zip(site["families"], site["builds"]):
        if (family, slug in owned) not in made:
            made[family, slug in owned] = step_time_band(family, sweep.workload, rows_of_runs if slug in owned else ())
    return run_ids, [made[family, slug in owned] for family, slug in zip(site["families"], site["builds"])]


def site_ranking(sweep: Sweep) -> dict:
    """Every build, owned and rented, with its best point and binding limit, best first; the
    Pareto front of time to train against cost over the builds' best points. ``runs``: the owner's
    runs the bands were made with."""
    site = sweep.site
    run_ids, band_of = _build_bands(sweep)
    columns = sweep_columns(sweep)
    columns.setdefault("power.facility_provisioned_w", site_engine.provisioned_w(columns))  # (a sweep before 0.15.1)
    axes, _, _ = sweep_axes(sweep)
    index = dict(zip((a.path for a in axes), np.unravel_index(columns["point"], grid_shape(axes))))
    values = {a.path: a.values[index[a.path]] for a in axes}
    for key in ("low_error", "high_error"):  # each point's band: its build's
        columns[f"band.{key}"] = np.array([band[key] for band in band_of])[index["site.build"]]
    limits = site_limits(site)
    ranking = site_engine.rank_builds(columns, index["site.build"], values["cluster.fabric.layers"], limits)
    # The days and cost each row shows: the engine's, or one quantile of both bands at the confidence.
    planned = {ownership: site_engine.figures_at(columns, limits, ownership) for ownership in site_engine.OWNERSHIPS}
    engine_costs = {ownership: site_engine.objective(columns, "by_date", ownership)
                    for ownership in site_engine.OWNERSHIPS}
    rows = []
    for entry in ranking:
        build, at = entry["build"], entry["point"]
        row = {"build": site["builds"][build], "name": site["build_names"][build], "family": site["families"][build],
               "announced": site.get("announced", [False] * len(site["builds"]))[build],
               "carried": site.get("carried", [[]] * len(site["builds"]))[build],
               "layers": entry["layers"], "ownership": entry["ownership"], "objective": entry["objective"],
               "binding": entry["binding"], "point": None if at is None else int(columns["point"][at]),
               "deadline_probability": entry["deadline_probability"],
               "budget_probability": entry["budget_probability"]}
        if at is not None:
            row.update({"dp": int(values[DATA_PARALLEL_AXIS][at]), "tp": int(values["workload.tp"][at]),
                        "pp": int(values["workload.pp"][at]),
                        **{key: _number(columns[path][at]) for path, key in FIGURES.items()},
                        "engine_time_to_train_days": _number(columns["training.time_to_train_days"][at]),
                        "time_to_train_days": _number(planned[entry["ownership"]]["days"][at]),
                        "cost": _number(planned[entry["ownership"]]["cost"][at]),
                        "engine_cost": _number(engine_costs[entry["ownership"]][at]),
                        "rent_term": RENT_TERM_LABELS[int(columns["training.rent_term_code"][at])]})
            row["rent"] = _rent(site, build, row["rent_term"]) if entry["ownership"] == "rented" else None
            band = band_of[build]
            days = row["engine_time_to_train_days"]
            row["time_band"] = {**band, "days_low": days / (1 + band["high_error"]),
                                "days_high": days / (1 + band["low_error"])}
        unrented = _unrented_reason(site, build) if entry["ownership"] == "rented" else None
        if unrented:
            row["binding"] = {"limit": "priced", "reason": unrented}
        rows.append(row)
    ranked = [r for r in rows if r["point"] is not None]
    front = pareto_front(np.array([r["time_to_train_days"] for r in ranked]), np.array([r["cost"] for r in ranked]),
                         np.ones(len(ranked), dtype=bool))
    on_front = set(front.tolist())
    for i, row in enumerate(ranked):
        row["pareto"] = i in on_front
    return {"builds": rows, "feasible": len(ranked), "points": int(columns["point"].size),
            "confidence": site.get("confidence"), "runs": run_ids}
