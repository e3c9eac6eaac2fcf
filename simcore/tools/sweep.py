"""Sweeps: grids of scenario points, evaluated in chunks, and goal seeking over the results.

An axis names a numeric field of the scenario document by its dotted path (``cluster.node_count``,
``workload.tp``) and gives its values as a list or a range. The grid is the Cartesian product of
the axes, in the order given, the last axis varying fastest; point ``i`` of the grid is the
``np.unravel_index`` of ``i``. A chunk of points becomes one scenario document whose axis fields
are arrays, evaluated in one vectorized call.

Goal seeking picks, among the points that are valid and meet every constraint, the one with the
best objective, and the Pareto front of pairs of metrics; for an infeasible goal it says which
constraint bound (the one no valid point meets, or that removes the most points).
"""
import copy
from dataclasses import dataclass

import numpy as np

from simcore.document import parse
from simcore.errors import ScenarioError
from simcore.outputs import HIGHER, better_way, dig
from simcore.stages.cluster import NIC_LAYOUT
from simcore.stages.scenario import EngineParams, evaluate_parsed

MAX_AXIS_VALUES = 100_000
# An axis that sizes the cluster to the job: its values are data-parallel degrees, the job takes
# TP x PP x CP x DP GPUs and the cluster the nodes that hold them (:func:`size_to_job`).
DATA_PARALLEL_AXIS = "job.data_parallel"

@dataclass(frozen=True)
class Axis:
    path: str
    values: np.ndarray  # numeric values, or an object array of strings for a categorical axis

    @property
    def categorical(self) -> bool:
        return self.values.dtype == object


def parse_axis(path: str, spec) -> Axis:
    """An axis from ``[v1, v2, ...]``, ``{"values": [...]}``, ``{"start", "stop", "steps"}``
    (inclusive, evenly spaced) or ``{"start", "stop", "step"}`` (inclusive where it lands)."""
    where = f"axes.{path}"
    if isinstance(spec, list):
        spec = {"values": spec}
    if not isinstance(spec, dict):
        raise ScenarioError(where, "must be a list of values or an object with values or a range")
    unknown = set(spec) - {"values", "start", "stop", "steps", "step"}
    if unknown:
        raise ScenarioError(f"{where}.{sorted(unknown)[0]}",
                            "unknown field (use values, or start/stop with steps or step)")
    if "values" in spec:
        values = spec["values"]
        if not isinstance(values, list) or not values:
            raise ScenarioError(where, "values must be a non-empty list")
        if all(isinstance(v, str) for v in values):
            return Axis(path, np.array(values, dtype=object))
        if any(isinstance(v, bool) or not isinstance(v, int | float) for v in values):
            raise ScenarioError(where, "values must be all numbers or all names")
        array = np.array(values, dtype=float)
    else:
        for key in ("start", "stop"):
            if not isinstance(spec.get(key), int | float) or isinstance(spec.get(key), bool):
                raise ScenarioError(f"{where}.{key}", "a range needs numeric start and stop")
        start, stop = float(spec["start"]), float(spec["stop"])
        if ("steps" in spec) == ("step" in spec):
            raise ScenarioError(where, "a range needs exactly one of steps or step")
        if "steps" in spec:
            steps = spec["steps"]
            if not isinstance(steps, int) or isinstance(steps, bool) or steps < 1:
                raise ScenarioError(f"{where}.steps", "must be a whole number of at least 1")
            if steps > MAX_AXIS_VALUES:
                raise ScenarioError(f"{where}.steps", f"at most {MAX_AXIS_VALUES:,} values per axis")
            array = np.linspace(start, stop, steps) if steps > 1 else np.array([start])
        else:
            step = spec["step"]
            if not isinstance(step, int | float) or isinstance(step, bool) or step <= 0 or not np.isfinite(step):
                raise ScenarioError(f"{where}.step", "must be a number greater than zero")
            span = np.floor((stop - start) / step + 1e-9) + 1
            if not np.isfinite(span) or span > MAX_AXIS_VALUES:
                raise ScenarioError(where,
                                    f"gives more than {MAX_AXIS_VALUES:,} values; at most {MAX_AXIS_VALUES:,} per axis")
            count = int(span)
            if count < 1:
                raise ScenarioError(where, "stop is below start: the range is empty")
            array = start + step * np.arange(count)
    if len(array) > MAX_AXIS_VALUES:
        raise ScenarioError(where, f"at most {MAX_AXIS_VALUES:,} values per axis")
    if not np.all(np.isfinite(array)):
        raise ScenarioError(where, "values must be finite")
    return Axis(path, array)


def grid_shape(axes: list[Axis]) -> tuple[int, ...]:
    return tuple(len(axis.values) for axis in axes)


def grid_size(axes: list[Axis]) -> int:
    return int(np.prod(grid_shape(axes), dtype=np.int64)) if axes else 1


def axis_indices(axes: list[Axis], start: int, stop: int) -> list[np.ndarray]:
    """For grid points ``start..stop-1``, the index into each axis's values."""
    flat = np.arange(start, stop, dtype=np.int64)
    return list(np.unravel_index(flat, grid_shape(axes))) if axes else []


def set_path(document: dict, path: str, value):
    node = document
    *parents, leaf = path.split(".")
    for key in parents:
        child = node.get(key)
        if child is None:
            child = node[key] = {}
        if not isinstance(child, dict):
            raise ScenarioError(path, f"'{key}' is not a section of the scenario")
        node = child
    node[leaf] = value



def size_to_job(document: dict, data_parallel: np.ndarray):
    """The job on TP x PP x CP x ``data_parallel`` GPUs (the workload's degrees, swept or not) and
    the cluster of as many nodes as hold them."""
    workload = document.get("workload")
    if workload is None:
        raise ScenarioError(DATA_PARALLEL_AXIS, "sizes the cluster to a job: the sweep needs a workload")
    gpus = np.asarray(data_parallel, dtype=float)
    for degree in ("tp", "pp", "cp"):
        gpus = gpus * np.asarray(workload.get(degree, 1), dtype=float)
    workload["gpus"] = gpus
    document["cluster"]["node_count"] = np.ceil(gpus / document["cluster"]["node"]["gpus"])


def evaluate_points(base_document: dict, numeric_axes: list[Axis], indices: list[np.ndarray], outputs,
                    params: EngineParams | None = None) -> dict[str, np.ndarray]:
    """Evaluate the points whose axis indices are given, in one call: metric path -> array.

    Invalid points (a workload that cannot run, a fabric that cannot hold the build) are kept,
    with ``valid`` false and ``invalid_reason`` saying why.
    """
    document = copy.deepcopy(base_document)
    count = len(indices[0]) if indices else 1
    sizing = None
    for axis, index in zip(numeric_axes, indices):
        if axis.path == DATA_PARALLEL_AXIS:
            sizing = axis.values[index]
        else:
            set_path(document, axis.path, axis.values[index])
    if sizing is not None:
        size_to_job(document, sizing)
    parsed = parse(document)
    result = evaluate_parsed(parsed, params or EngineParams())
    columns = {}
    for path in outputs:
        value = dig(result, path)
        if isinstance(value, dict | str | list) or np.asarray(value).dtype.kind not in "biuf":
            raise ScenarioError(path, "is not a numeric metric (name a number in the result)")
        value = np.asarray(value)
        columns[path] = np.broadcast_to(value.astype(float), (count,)).copy()
    fits = np.broadcast_to(np.asarray(result["fabric"]["fits"]), (count,))
    layout = [c["message"] for c in result["constraints"] if c["code"] == NIC_LAYOUT]
    unfit = "the fabric cannot hold the endpoints" + (f" or breaks a rule ({'; '.join(layout)})" if layout else "")
    reason = np.where(fits, "", unfit).astype(object)
    if "training" in result:
        feasible = np.broadcast_to(np.asarray(result["training"]["feasible"]), (count,))
        training_reason = np.broadcast_to(np.asarray(result["training"]["infeasible_reason"], dtype=object), (count,))
        reason = np.where((reason == "") & ~feasible, training_reason, reason)
    columns["valid"] = (reason == "").astype(float)
    columns["invalid_reason"] = reason
    return columns


@dataclass(frozen=True)
class Constraint:
    metric: str
    low: float | None = None
    high: float | None = None

    def describe(self) -> str:
        if self.low is not None and self.high is not None:
            return f"{self.low:g} <= {self.metric} <= {self.high:g}"
        sense, bound = (">=", self.low) if self.low is not None else ("<=", self.high)
        return f"{self.metric} {sense} {bound:g}"

    def satisfied(self, values: np.ndarray) -> np.ndarray:
        ok = np.isfinite(values)
        if self.low is not None:
            ok &= values >= self.low
        if self.high is not None:
            ok &= values <= self.high
        return ok


@dataclass(frozen=True)
class ParetoPair:
    """Two metrics traded against each other, each minimised or maximised (``x_sense``, ``y_sense``)."""

    x: str
    y: str
    x_sense: str
    y_sense: str


@dataclass(frozen=True)
class Goal:
    objective: str
    sense: str  # "min" or "max"
    constraints: tuple[Constraint, ...]
    pareto: tuple[ParetoPair, ...]


SENSES = ("min", "max")


def default_sense(metric: str, objective: str, objective_sense: str) -> str:
    """Which way a Pareto metric is better when the goal does not say: the objective's sense for the
    objective, else the output registry's (higher-is-better outputs maximised), else minimised."""
    if metric == objective:
        return objective_sense
    return "max" if better_way(metric) == HIGHER else "min"


def _parse_pareto(item, where: str, objective: str, sense: str) -> ParetoPair:
    """A pair as ``[x, y]`` (directions from :func:`default_sense`) or ``{"x", "y", "x_sense",
    "y_sense"}`` (each sense "min" or "max", defaulted the same way)."""
    if isinstance(item, list):
        if not (len(item) == 2 and all(isinstance(m, str) for m in item)):
            raise ScenarioError(where, "must be a pair of metric paths")
        item = {"x": item[0], "y": item[1]}
    if not isinstance(item, dict):
        raise ScenarioError(where, "must be a pair of metric paths or an object with x, y, x_sense and y_sense")
    extra = set(item) - {"x", "y", "x_sense", "y_sense"}
    if extra:
        raise ScenarioError(f"{where}.{sorted(extra)[0]}", "unknown field")
    for axis in ("x", "y"):
        if not isinstance(item.get(axis), str):
            raise ScenarioError(f"{where}.{axis}", "must be a metric path")
        if item.get(f"{axis}_sense") not in (None, *SENSES):
            raise ScenarioError(f"{where}.{axis}_sense", "must be min or max")
    return ParetoPair(item["x"], item["y"], item.get("x_sense") or default_sense(item["x"], objective, sense),
                      item.get("y_sense") or default_sense(item["y"], objective, sense))


def parse_goal(spec) -> Goal:
    """``{"minimize"|"maximize": metric, "constraints": [{"metric", "min"|"max"}...],
    "pareto": [[metric_a, metric_b] | {"x", "y", "x_sense", "y_sense"}, ...]}``."""
    if not isinstance(spec, dict):
        raise ScenarioError("goal", "must be an object")
    unknown = set(spec) - {"minimize", "maximize", "constraints", "pareto"}
    if unknown:
        raise ScenarioError(f"goal.{sorted(unknown)[0]}", "unknown field")
    if ("minimize" in spec) == ("maximize" in spec):
        raise ScenarioError("goal", "give exactly one of minimize or maximize")
    sense = "min" if "minimize" in spec else "max"
    objective = spec["minimize" if sense == "min" else "maximize"]
    if not isinstance(objective, str):
        raise ScenarioError("goal.objective", "must be a metric path")
    for key in ("constraints", "pareto"):
        if not isinstance(spec.get(key, []), list):
            raise ScenarioError(f"goal.{key}", "must be a list")
    constraints = []
    for i, item in enumerate(spec.get("constraints", [])):
        where = f"goal.constraints.{i}"
        if not isinstance(item, dict) or not isinstance(item.get("metric"), str):
            raise ScenarioError(where, "needs a metric and a min or max")
        extra = set(item) - {"metric", "min", "max"}
        if extra:
            raise ScenarioError(f"{where}.{sorted(extra)[0]}", "unknown field")
        bounds = {k: item.get(k) for k in ("min", "max")}
        if all(v is None for v in bounds.values()):
            raise ScenarioError(where, "needs a min or a max")
        for key, value in bounds.items():
            if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
                raise ScenarioError(f"{where}.{key}", "must be a number")
        constraints.append(Constraint(item["metric"], bounds["min"], bounds["max"]))
    pairs = tuple(_parse_pareto(pair, f"goal.pareto.{i}", objective, sense)
                  for i, pair in enumerate(spec.get("pareto", [])))
    return Goal(objective, sense, tuple(constraints), pairs)


def goal_spec(goal: Goal) -> dict:
    """The goal as a request gives it, every default filled in (each Pareto pair's senses): what a
    sweep stores, so reading it back later gives the same fronts whatever the registry says then."""
    return {"minimize" if goal.sense == "min" else "maximize": goal.objective,
            "constraints": [{"metric": c.metric, **({"min": c.low} if c.low is not None else {}),
                             **({"max": c.high} if c.high is not None else {})} for c in goal.constraints],
            "pareto": [{"x": p.x, "y": p.y, "x_sense": p.x_sense, "y_sense": p.y_sense} for p in goal.pareto]}


def goal_metrics(goal: Goal) -> list[str]:
    pareto = (m for pair in goal.pareto for m in (pair.x, pair.y))
    metrics = [goal.objective, *(c.metric for c in goal.constraints), *pareto]
    return list(dict.fromkeys(metrics))


def pareto_front(x: np.ndarray, y: np.ndarray, candidates: np.ndarray) -> np.ndarray:
    """Indices of the candidate points no other candidate beats on both x and y (both minimised),
    sorted by x. Sort by (x, y), then keep each point whose y is below every earlier y."""
    index = np.flatnonzero(candidates)
    if index.size == 0:
        return index
    order = index[np.lexsort((y[index], x[index]))]
    ys = y[order]
    best_before = np.minimum.accumulate(np.concatenate(([np.inf], ys[:-1])))
    keep = ys < best_before
    return order[keep]


def feasibility(columns: dict[str, np.ndarray], goal: Goal):
    """(valid mask, constraints applied, {constraint: mask}, feasible mask) for a goal.

    When the goal involves a price, points with an unpriced part are rejected: their totals are
    null, never a cheaper sum over fewer parts.
    """
    valid = columns["valid"].astype(bool)
    constraints = list(goal.constraints)
    uses_cost = any(m.startswith(("cost.", "training.cost")) for m in goal_metrics(goal))
    if uses_cost and "cost.unpriced_count" in columns:
        constraints.append(Constraint("cost.unpriced_count", high=0.0))
    satisfied = {c.describe(): c.satisfied(columns[c.metric]) for c in constraints}
    feasible = valid.copy()
    for ok in satisfied.values():
        feasible &= ok
    return valid, constraints, satisfied, feasible


def goal_seek(columns: dict[str, np.ndarray], goal: Goal) -> dict:
    """The feasible optimum (a grid position), the Pareto fronts and why rejected points failed."""
    valid, constraints, satisfied, feasible = feasibility(columns, goal)
    objective = columns[goal.objective]
    rejected = {
        "invalid": int((~valid).sum()),
        **{name: int((valid & ~ok).sum()) for name, ok in satisfied.items()},
    }
    outcome = {"objective": goal.objective, "sense": goal.sense, "points": int(valid.size),
               "valid": int(valid.sum()), "feasible": int(feasible.sum()), "rejected_by": rejected}
    candidates = feasible & np.isfinite(objective)
    if candidates.any():
        signed = objective if goal.sense == "min" else -objective
        best = int(np.flatnonzero(candidates)[np.argmin(signed[candidates])])
        outcome["optimum"] = best
        outcome["binding"] = None
    else:
        outcome["optimum"] = None
        outcome["binding"] = _binding_constraint(valid, satisfied, columns, constraints)
    outcome["pareto"] = []
    for pair in goal.pareto:
        xa = columns[pair.x] * (-1.0 if pair.x_sense == "max" else 1.0)
        yb = columns[pair.y] * (-1.0 if pair.y_sense == "max" else 1.0)
        ok = feasible & np.isfinite(xa) & np.isfinite(yb)
        outcome["pareto"].append({"x": pair.x, "y": pair.y, "x_sense": pair.x_sense, "y_sense": pair.y_sense,
                                  "points": pareto_front(xa, yb, ok).tolist()})
    if "point" in columns:  # positions -> grid point numbers
        points = columns["point"]
        if outcome["optimum"] is not None:
            outcome["optimum"] = int(points[outcome["optimum"]])
        for front in outcome["pareto"]:
            front["points"] = points[front["points"]].tolist()
    return outcome


def _binding_constraint(valid, satisfied, columns, constraints):
    if not valid.any():
        return {"constraint": "valid points", "reason": "no point of the grid is valid"}
    for name, ok in satisfied.items():
        if not (valid & ok).any():
            constraint = next(c for c in constraints if c.describe() == name)
            values = columns[constraint.metric][valid]
            values = values[np.isfinite(values)]
            best = None if values.size == 0 else float(values.max() if constraint.low is not None else values.min())
            return {"constraint": name, "reason": "no valid point meets it", "best_value": best}
    worst = max(satisfied, key=lambda name: int((valid & ~satisfied[name]).sum()))
    return {"constraint": worst, "reason": "each constraint is met somewhere, but never all together; "
                                           "this one rejects the most valid points"}
