"""A sweep request checked against the engine and the catalogue: its axes (scenario fields and
catalogue parts), goal and outputs, the documents of each part combination, a sample evaluated
before anything is stored, and the input hash identical sweeps share."""
import copy
import hashlib
import json

import numpy as np
from django.core.exceptions import ValidationError

import simcore
from planner.adapters import scenario_document
from planner.models import ClusterPlan, ComputeNodeType, Sweep, Switch, Workload
from planner.services.errors import InputError
from simcore.outputs import sweep_defaults
from simcore.tools import sweep as engine

# Axes that swap a catalogue part of the plan: path -> (model, plan field).
CATEGORICAL_AXES = {
    "plan.node_type": (ComputeNodeType, "node_type"),
    "plan.switch": (Switch, "switch"),
}
SAMPLE_POINTS = 2_000
MAX_COMBINATIONS = 64
# Metrics only some workloads have (time and cost to train need tokens_to_train): a sweep stores
# them when it names them in its outputs.
OPTIONAL_OUTPUTS = {"training.time_to_train_days", "training.cost_to_train", "training.rent_cost_to_train",
                    "training.buy_and_run_cost", "training.rent_term_code"}


class SweepInputError(InputError):
    """Bad sweep input: ``errors`` maps a field to its reasons (answered as HTTP 400)."""


def _field_error(error: simcore.ScenarioError) -> SweepInputError:
    return SweepInputError({error.field: [error.reason]})


def parse_spec(spec: dict, has_workload: bool):
    """Axes, goal and outputs of a sweep request, validated (a SweepInputError names the field)."""
    if not isinstance(spec, dict):
        raise SweepInputError({"spec": ["must be an object with axes (and optionally goal and outputs)"]})
    unknown = set(spec) - {"axes", "goal", "outputs"}
    if unknown:
        raise SweepInputError({sorted(unknown)[0]: ["unknown field (known: axes, goal, outputs)"]})
    axes_spec = spec.get("axes")
    if not isinstance(axes_spec, dict) or not axes_spec:
        raise SweepInputError({"axes": ["give at least one axis: a scenario field path and its values"]})
    try:
        axes = [engine.parse_axis(path, value) for path, value in axes_spec.items()]
        goal = engine.parse_goal(spec["goal"]) if spec.get("goal") is not None else None
    except simcore.ScenarioError as error:
        raise _field_error(error) from error
    for axis in axes:
        if axis.categorical and len(set(axis.values)) != len(axis.values):
            raise SweepInputError({f"axes.{axis.path}": ["lists a part twice"]})
        if axis.categorical and axis.path not in CATEGORICAL_AXES:
            raise SweepInputError({f"axes.{axis.path}": [
                f"takes numbers; named values work only for {', '.join(CATEGORICAL_AXES)}"]})
        if not axis.categorical and axis.path in CATEGORICAL_AXES:
            raise SweepInputError({f"axes.{axis.path}": ["takes catalogue slugs"]})
        if axis.path.startswith("workload.") and not has_workload:
            raise SweepInputError({f"axes.{axis.path}": ["the sweep has no workload"]})
    paths = {axis.path for axis in axes}
    if engine.DATA_PARALLEL_AXIS in paths and paths & {"cluster.node_count", "workload.gpus"}:
        raise SweepInputError({f"axes.{engine.DATA_PARALLEL_AXIS}": [
            "sizes the cluster and the job itself: drop the cluster.node_count and workload.gpus axes"]})
    combinations = int(np.prod([len(a.values) for a in axes if a.categorical])) if axes else 1
    if combinations > MAX_COMBINATIONS:
        raise SweepInputError({"axes": [f"{combinations} combinations of catalogue parts; at most {MAX_COMBINATIONS}"]})
    outputs = spec.get("outputs")
    if outputs is None:
        outputs = sweep_defaults(has_workload)
        outputs = [path for path in outputs if path not in OPTIONAL_OUTPUTS]
    if not isinstance(outputs, list) or not all(isinstance(o, str) for o in outputs) or not outputs:
        raise SweepInputError({"outputs": ["must be a non-empty list of result metric paths"]})
    if goal is not None:
        outputs = list(dict.fromkeys([*outputs, *engine.goal_metrics(goal)]))
    return axes, goal, outputs


def combination_documents(plan: ClusterPlan, workload: Workload | None, categorical: list[engine.Axis]):
    """One base scenario document per combination of categorical values (row-major), and the
    reason a combination cannot be built ('' when it can)."""
    documents, reasons = [], []
    combos = np.array(np.meshgrid(*[np.arange(len(a.values)) for a in categorical], indexing="ij")).reshape(
        len(categorical), -1).T if categorical else np.zeros((1, 0), dtype=int)
    for combo in combos:
        variant = copy.copy(plan)
        for axis, index in zip(categorical, combo):
            model, field = CATEGORICAL_AXES[axis.path]
            slug = axis.values[index]
            part = model.objects.filter(slug=slug).first()
            if part is None:
                raise SweepInputError({f"axes.{axis.path}": [f"no {model._meta.verbose_name} '{slug}'"]})
            setattr(variant, field, part)
        try:
            variant.clean()
            reasons.append("")
        except ValidationError as error:
            reasons.append("; ".join(f"{k}: {' '.join(v)}" for k, v in error.message_dict.items()))
        documents.append(scenario_document(variant, workload))
    return documents, reasons


def input_hash(base: dict, spec: dict) -> str:
    canonical = json.dumps({"base": base, "spec": spec, "engine": simcore.ENGINE_VERSION}, sort_keys=True)
    return hashlib.sha256(canonical.encode()).hexdigest()


def check_sample(base: dict, axes: list[engine.Axis], outputs: list[str]):
    """Evaluate up to SAMPLE_POINTS points spread over the grid: unknown fields or metrics and a
    grid where every sampled point is invalid answer 400 before any work is queued."""
    size = engine.grid_size(axes)
    points = np.unique(np.linspace(0, size - 1, min(size, SAMPLE_POINTS)).astype(np.int64))
    numeric = [a for a in axes if not a.categorical]
    # Every value of every axis passes the engine's field checks: one evaluation per document, its
    # points walking each axis's values together (the k-th point takes each axis's k-th value, the
    # shorter axes repeating), so that each value is checked once.
    longest = max((len(a.values) for a in numeric), default=0)
    walk = [np.arange(longest) % len(a.values) for a in numeric]
    paths = {a.path for a in numeric}
    try:
        for document, reason in zip(base["documents"], base["invalid"]):
            if reason or not numeric:
                continue
            try:
                engine.evaluate_points(document, numeric, walk, outputs)
            except simcore.ScenarioError as error:
                if error.field in paths:
                    raise
        columns = evaluate_chunk(base, axes, outputs, points)
    except simcore.ScenarioError as error:
        field = f"axes.{error.field}" if any(a.path == error.field for a in axes) else error.field
        raise SweepInputError({field: [error.reason]}) from error
    if not columns["valid"].any():
        reasons, counts = np.unique(columns["invalid_reason"], return_counts=True)
        ranked = [f"{reason} ({count} of {len(points)} sampled points)" for reason, count in
                  sorted(zip(reasons, counts), key=lambda rc: -rc[1])]
        raise SweepInputError({"axes": ["every point of the grid is invalid: " + "; ".join(ranked)]})


def evaluate_chunk(base: dict, axes: list[engine.Axis], outputs: list[str], points: np.ndarray) -> dict:
    """Evaluate grid points (flat indices), grouped by categorical combination."""
    shape = engine.grid_shape(axes)
    indices = list(np.unravel_index(points, shape)) if axes else []
    categorical = [i for i, a in enumerate(axes) if a.categorical]
    numeric = [i for i, a in enumerate(axes) if not a.categorical]
    if categorical:
        combo = np.ravel_multi_index([indices[i] for i in categorical], [shape[i] for i in categorical])
    else:
        combo = np.zeros(len(points), dtype=np.int64)
    columns = {path: np.full(len(points), np.nan) for path in outputs}
    columns["valid"] = np.zeros(len(points))
    columns["invalid_reason"] = np.full(len(points), "", dtype=object)
    for value in np.unique(combo):  # a few catalogue combinations, never the points themselves
        selected = combo == value
        reason = base["invalid"][value]
        if reason:
            columns["invalid_reason"][selected] = reason
            continue
        try:
            part = engine.evaluate_points(base["documents"][value], [axes[i] for i in numeric],
                                          [indices[i][selected] for i in numeric], outputs)
        except simcore.ScenarioError as error:
            if error.field in outputs or any(axes[i].path == error.field for i in numeric):
                raise  # a bad axis value or output name: the caller reports it
            columns["invalid_reason"][selected] = f"{error.field}: {error.reason}"  # this part combination
            continue
        for path, array in part.items():
            columns[path][selected] = array
    return columns


def sweep_axes(sweep: Sweep):
    """The stored sweep's axes (in grid order), goal and outputs."""
    spec = sweep.spec
    axes = [engine.parse_axis(axis["path"], axis["values"]) for axis in spec["axes"]]
    goal = engine.parse_goal(spec["goal"]) if spec.get("goal") is not None else None
    return axes, goal, spec["outputs"]
