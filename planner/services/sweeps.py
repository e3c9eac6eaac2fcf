"""Sweep services: create (validate, hash, reuse), run one chunk, cancel, read results, export.

Tasks and the API call these; nothing here knows about Celery. A chunk is idempotent: its row is
unique per sweep and index, so a chunk delivered twice (a worker killed after saving, before
acknowledging) is stored once.
"""
import copy
import csv
import hashlib
import io
import json
import time
from datetime import timedelta

import numpy as np
from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import Max
from django.db.models.functions import Coalesce
from django.utils import timezone

import simcore
from config import observability as metrics
from planner.adapters import scenario_document
from planner.events import publish_sweep_state
from planner.models import ClusterPlan, ComputeNodeType, Sweep, SweepChunk, Switch, Workload
from planner.services.errors import InputError
from simcore import sweep as engine
from simcore.outputs import sweep_defaults

# Axes that swap a catalogue part of the plan: path -> (model, plan field).
CATEGORICAL_AXES = {
    "plan.node_type": (ComputeNodeType, "node_type"),
    "plan.switch": (Switch, "switch"),
}
SAMPLE_POINTS = 2_000
MAX_COMBINATIONS = 64
# Metrics only some workloads have (time and cost to train need tokens_to_train): a sweep stores
# them when it names them in its outputs.
OPTIONAL_OUTPUTS = {"training.time_to_train_days", "training.cost_to_train"}


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


def _combination_documents(plan: ClusterPlan, workload: Workload | None, categorical: list[engine.Axis]):
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


def sweep_create(*, owner, plan: ClusterPlan, workload: Workload | None, spec: dict, name: str = "") -> Sweep:
    """Validate a sweep request and record it; identical finished sweeps are reused, not rerun."""
    axes, goal, outputs = parse_spec(spec, workload is not None)
    size = engine.grid_size(axes)
    cap = settings.SWEEP_MAX_POINTS
    if size > cap:
        raise SweepInputError({"axes": [f"the grid has {size:,} points; the limit is {cap:,} (SWEEP_MAX_POINTS)"]})
    categorical = [a for a in axes if a.categorical]
    documents, reasons = _combination_documents(plan, workload, categorical)
    base = {"categorical": [a.path for a in categorical], "documents": documents, "invalid": reasons}
    # Axes are stored as a list: a JSON object's key order does not survive PostgreSQL's jsonb,
    # and the order defines the grid.
    normalized = {"axes": [{"path": a.path, "values": a.values.tolist()} for a in axes], "outputs": outputs,
                  "goal": spec.get("goal")}
    _check_sample(base, axes, outputs)
    digest = input_hash(base, normalized)
    chunk_size = settings.SWEEP_CHUNK_POINTS
    sweep = Sweep(owner=owner, name=name or f"{plan.slug} sweep", plan=plan, workload=workload, spec=normalized,
                  base_document=base, total_points=size, chunk_size=chunk_size,
                  chunk_count=(size + chunk_size - 1) // chunk_size, engine_version=simcore.ENGINE_VERSION,
                  input_hash=digest)
    previous = (Sweep.objects.filter(owner=owner, input_hash=digest, engine_version=simcore.ENGINE_VERSION,
                                     status=Sweep.Status.DONE, reused_from__isnull=True)
                .order_by("created_at").first())
    if previous is not None:
        sweep.reused_from = previous
        sweep.status = Sweep.Status.DONE
        sweep.completed_chunks = sweep.chunk_count
        sweep.goal_result = previous.goal_result
        sweep.started_at = sweep.finished_at = timezone.now()
    sweep.save()
    return sweep


def _check_sample(base: dict, axes: list[engine.Axis], outputs: list[str]):
    """Evaluate up to SAMPLE_POINTS points spread over the grid: unknown fields or metrics and a
    grid where every sampled point is invalid answer 400 before any work is queued."""
    size = engine.grid_size(axes)
    points = np.unique(np.linspace(0, size - 1, min(size, SAMPLE_POINTS)).astype(np.int64))
    numeric = [a for a in axes if not a.categorical]
    try:
        for axis in numeric:  # every value of every axis passes the engine's field checks
            for document, reason in zip(base["documents"], base["invalid"]):
                if reason:
                    continue
                try:
                    engine.evaluate_points(document, [axis], [np.arange(len(axis.values))], outputs)
                except simcore.ScenarioError as error:
                    if error.field == axis.path:
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


def _pack(columns: dict) -> tuple[bytes, int]:
    reasons, codes = np.unique(columns["invalid_reason"].astype(str), return_inverse=True)
    arrays = {k: v for k, v in columns.items() if k != "invalid_reason"}
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **arrays, reason_code=codes.astype(np.int32), reasons=reasons.astype(str))
    return buffer.getvalue(), int((columns["valid"] == 0).sum())


def _unpack(data: bytes) -> dict:
    with np.load(io.BytesIO(bytes(data)), allow_pickle=False) as npz:
        arrays = {k: npz[k] for k in npz.files}
    arrays["invalid_reason"] = arrays.pop("reasons")[arrays.pop("reason_code")]
    return arrays


def sweep_run_chunk(*, sweep_id: int, index: int) -> bool:
    """Compute and store one chunk unless it is stored already or the sweep is over.
    Returns True when this call stored the chunk."""
    sweep = Sweep.objects.filter(pk=sweep_id).first()
    if sweep is None or sweep.status in Sweep.FINAL:
        return False
    if SweepChunk.objects.filter(sweep_id=sweep_id, index=index).exists():
        _record_progress(sweep_id)  # a redelivery after a crash between storing and recording
        return False
    if sweep.status == Sweep.Status.PENDING:
        Sweep.objects.filter(pk=sweep_id, status=Sweep.Status.PENDING).update(
            status=Sweep.Status.RUNNING, started_at=timezone.now())
    axes, _, outputs = sweep_axes(sweep)
    start = index * sweep.chunk_size
    stop = min(start + sweep.chunk_size, sweep.total_points)
    began = time.perf_counter()
    columns = evaluate_chunk(sweep.base_document, axes, outputs, np.arange(start, stop, dtype=np.int64))
    data, invalid = _pack(columns)
    try:
        with transaction.atomic():
            SweepChunk.objects.create(sweep_id=sweep_id, index=index, start=start, stop=stop, data=data,
                                      invalid_points=invalid, seconds=time.perf_counter() - began)
    except IntegrityError:
        _record_progress(sweep_id)  # another delivery of the same chunk stored it first
        return False
    metrics.SWEEP_CHUNKS.inc()
    metrics.SWEEP_POINTS.inc(stop - start)
    _record_progress(sweep_id)
    return True


def _record_progress(sweep_id: int):
    with transaction.atomic():
        sweep = Sweep.objects.select_for_update().get(pk=sweep_id)
        sweep.completed_chunks = sweep.chunks.count()
        finished = sweep.completed_chunks >= sweep.chunk_count and sweep.status not in Sweep.FINAL
        if finished:
            _, goal, _ = sweep_axes(sweep)
            if goal is not None:
                sweep.goal_result = engine.goal_seek(sweep_columns(sweep), goal)
            sweep.status = Sweep.Status.DONE
            sweep.finished_at = timezone.now()
        sweep.save(update_fields=["completed_chunks", "status", "finished_at", "goal_result"])
    publish_sweep_state(sweep.pk, lambda: sweep_state(sweep), force=finished)


def sweep_fail(*, sweep_id: int, error: str):
    Sweep.objects.filter(pk=sweep_id).exclude(status__in=Sweep.FINAL).update(
        status=Sweep.Status.FAILED, error=error[:2000], finished_at=timezone.now())


def sweep_cancel(*, sweep: Sweep) -> Sweep:
    """Stop a sweep: chunks not yet started are skipped; stored chunks stay readable."""
    Sweep.objects.filter(pk=sweep.pk).exclude(status__in=Sweep.FINAL).update(
        status=Sweep.Status.CANCELLED, finished_at=timezone.now())
    sweep.refresh_from_db()
    publish_sweep_state(sweep.pk, lambda: sweep_state(sweep), force=True)
    return sweep


def stalled_sweeps(*, idle_s: float):
    """Unfinished sweeps that have stored no chunk for ``idle_s`` seconds (counted from submission
    while none is stored)."""
    cutoff = timezone.now() - timedelta(seconds=idle_s)
    return (Sweep.objects.filter(status__in=[Sweep.Status.PENDING, Sweep.Status.RUNNING])
            .annotate(last_progress_at=Coalesce(Max("chunks__created_at"), "created_at"))
            .filter(last_progress_at__lt=cutoff))


def sweep_settle(*, sweep: Sweep) -> list[int]:
    """The chunks a stalled sweep still needs; when it has them all (its worker died between
    storing the last chunk and recording it), record its progress, which finishes it."""
    pending = pending_chunks(sweep)
    if not pending:
        _record_progress(sweep.pk)
    return pending


def pending_chunks(sweep: Sweep) -> list[int]:
    done = set(sweep.chunks.values_list("index", flat=True))
    return [i for i in range(sweep.chunk_count) if i not in done]


def sweep_columns(sweep: Sweep, points: range | None = None) -> dict[str, np.ndarray]:
    """Every stored point's outputs, axis values and validity, in grid order; with ``points``,
    only the chunks that hold those grid points are read (a page without filters)."""
    source = sweep.results_sweep
    chunks = source.chunks.order_by("index")
    if points is not None:
        chunks = chunks.filter(stop__gt=points.start, start__lt=points.stop)
    chunks = list(chunks.values_list("start", "data"))
    axes, _, outputs = sweep_axes(source)
    if not chunks:
        return {"point": np.zeros(0, dtype=np.int64), **{p: np.zeros(0) for p in outputs},
                "valid": np.zeros(0), "invalid_reason": np.zeros(0, dtype=object)}
    parts = [_unpack(data) for _, data in chunks]
    columns = {key: np.concatenate([p[key] for p in parts]) for key in parts[0]}
    points = np.concatenate([np.arange(start, start + len(p["valid"])) for (start, _), p in zip(chunks, parts)])
    columns["point"] = points
    for axis, index in zip(axes, np.unravel_index(points, engine.grid_shape(axes))):
        columns[f"axis:{axis.path}"] = axis.values[index]
    return columns


def sweep_discard(*, sweep: Sweep) -> None:
    """Remove a sweep that could not be queued: nothing of it was computed or is shown anywhere."""
    sweep.delete()


def sweep_state(sweep: Sweep) -> dict:
    return {
        "id": sweep.pk,
        "status": sweep.status,
        "progress": round(sweep.progress, 6),
        "completed_chunks": sweep.completed_chunks,
        "chunk_count": sweep.chunk_count,
        "total_points": sweep.total_points,
        "error": sweep.error,
    }


def _json_value(value):
    if isinstance(value, float | np.floating):
        return float(value) if np.isfinite(value) else None
    if isinstance(value, np.integer):
        return int(value)
    return value


def sweep_rows(columns: dict, selection: np.ndarray) -> list[dict]:
    axis_keys = [k for k in columns if k.startswith("axis:")]
    metric_keys = [k for k in columns if k not in {"point", "valid", "invalid_reason", *axis_keys}]
    rows = []
    for i in selection:
        rows.append({
            "point": int(columns["point"][i]),
            "axes": {k[5:]: _json_value(columns[k][i]) for k in axis_keys},
            "valid": bool(columns["valid"][i]),
            "invalid_reason": str(columns["invalid_reason"][i]),
            "outputs": {k: _json_value(columns[k][i]) for k in metric_keys},
        })
    return rows


def sweep_select(columns: dict, *, valid: bool | None = None, order_by: str | None = None,
                 feasible_points: list[int] | None = None) -> np.ndarray:
    """Row positions that pass the filters, in the requested order (vectorized)."""
    keep = np.ones(len(columns["point"]), dtype=bool)
    if valid is not None:
        keep &= columns["valid"].astype(bool) == valid
    if feasible_points is not None:
        keep &= np.isin(columns["point"], feasible_points)
    selection = np.flatnonzero(keep)
    if order_by:
        key = order_by.lstrip("-")
        if key not in columns or columns[key].dtype == object:
            raise SweepInputError({"order_by": [f"'{key}' is not a stored numeric output or axis"]})
        values = columns[key][selection].astype(float)
        order = np.argsort(np.where(np.isnan(values), np.inf, -values if order_by.startswith("-") else values),
                           kind="stable")
        selection = selection[order]
    return selection


def sweep_csv(columns: dict) -> str:
    out = io.StringIO()
    keys = ["point", *[k for k in columns if k.startswith("axis:")],
            *[k for k in columns if k not in ("point", "valid", "invalid_reason") and not k.startswith("axis:")],
            "valid", "invalid_reason"]
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([k.removeprefix("axis:") for k in keys])
    for i in range(len(columns["point"])):
        writer.writerow(["" if _json_value(columns[k][i]) is None else _json_value(columns[k][i]) for k in keys])
    return out.getvalue()


def sweep_npz(columns: dict) -> bytes:
    buffer = io.BytesIO()
    arrays = {k.replace(":", "__"): (v.astype(str) if v.dtype == object else v) for k, v in columns.items()}
    np.savez_compressed(buffer, **arrays)
    return buffer.getvalue()


def goal_feasible_points(sweep: Sweep, columns: dict) -> list[int]:
    """Grid points meeting the goal, judged exactly as ``goal_seek`` judged them."""
    _, goal, _ = sweep_axes(sweep.results_sweep)
    return columns["point"][engine.feasibility(columns, goal)[3]].tolist()
