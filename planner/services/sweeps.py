"""Sweep workflows: create (validate, hash, reuse), run one chunk, record progress, cancel, settle.

Tasks and the API call these; nothing here knows about Celery. A chunk is idempotent: its row is
unique per sweep and index, so a chunk delivered twice (a worker killed after saving, before
acknowledging) is stored once.
"""
import time

import numpy as np
from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Sum
from django.db.models.functions import Length
from django.utils import timezone

import simcore
from planner import metrics
from planner.adapters import calibration
from planner.events import publish_sweep_state
from planner.models import ClusterPlan, Sweep, SweepChunk, Workload
from planner.services.errors import QuotaExceeded
from planner.services.quotas import lock_owner
from planner.services.site_results import site_ranking
from planner.services.sweep_results import sweep_state
from planner.services.sweep_spec import (
    SweepInputError,
    check_sample,
    combination_documents,
    evaluate_chunk,
    input_hash,
    parse_spec,
    sweep_axes,
)
from planner.services.sweep_store import pack_columns, pending_chunks, sweep_columns
from simcore.tools import sweep as engine

UNFINISHED = (Sweep.Status.PENDING, Sweep.Status.RUNNING)


def sweep_create(*, owner, plan: ClusterPlan, workload: Workload | None, spec: dict, name: str = "",
                 in_process: bool = False) -> Sweep:
    """Validate a sweep request and record it; identical finished sweeps are reused, not rerun.
    ``in_process``: the chunks will run in the submitting request (no worker), which bounds the grid
    by SWEEP_IN_PROCESS_MAX_POINTS."""
    axes, goal, outputs = parse_spec(spec, workload is not None)
    size = engine.grid_size(axes)
    check_grid_size(size, in_process, "axes")
    categorical = [a for a in axes if a.categorical]
    documents, reasons = combination_documents(plan, workload, categorical)
    base = {"categorical": [a.path for a in categorical], "documents": documents, "invalid": reasons,
            "carried": {constant: fit["carried"] for constant, fit in calibration(plan).items() if fit["carried"]}}
    # Axes are stored as a list: a JSON object's key order does not survive PostgreSQL's jsonb,
    # and the order defines the grid.
    normalized = {"axes": [{"path": a.path, "values": a.values.tolist()} for a in axes], "outputs": outputs,
                  "goal": engine.goal_spec(goal) if goal is not None else None}
    check_sample(base, axes, outputs)
    return sweep_record(owner=owner, plan=plan, workload=workload, name=name or f"{plan.slug} sweep", base=base,
                        spec=normalized, size=size)


def check_grid_size(size: int, in_process: bool, field: str):
    """A grid within SWEEP_MAX_POINTS, and within SWEEP_IN_PROCESS_MAX_POINTS when it will run in
    the submitting request (no worker); else a SweepInputError naming ``field``."""
    cap = settings.SWEEP_MAX_POINTS
    if size > cap:
        raise SweepInputError({field: [f"the grid has {size:,} points; the limit is {cap:,} (SWEEP_MAX_POINTS)"]})
    if in_process and size > settings.SWEEP_IN_PROCESS_MAX_POINTS:
        raise SweepInputError({field: [
            f"the grid has {size:,} points; without a worker (no REDIS_URL) a sweep runs inside its request, "
            f"so at most {settings.SWEEP_IN_PROCESS_MAX_POINTS:,} (SWEEP_IN_PROCESS_MAX_POINTS); start Redis and "
            f"a Celery worker for up to {cap:,}"]})


def check_quotas(owner, size: int) -> None:
    """A new sweep of ``size`` points within its owner's quotas: the points of their unfinished
    sweeps at most SWEEP_USER_MAX_QUEUED_POINTS (429: they free themselves as sweeps finish) and
    their stored results under SWEEP_USER_MAX_STORED_BYTES (409: they delete sweeps to free it)."""
    unfinished = Sweep.objects.filter(owner=owner, status__in=UNFINISHED, reused_from__isnull=True)
    queued = unfinished.aggregate(points=Sum("total_points"))["points"] or 0
    cap = settings.SWEEP_USER_MAX_QUEUED_POINTS
    if queued + size > cap:
        raise QuotaExceeded("SWEEP_USER_MAX_QUEUED_POINTS", (
            f"your unfinished sweeps hold {queued:,} points and this one {size:,}; at most {cap:,} at once: "
            "submit it when some have finished, or cancel one"), status=429)
    stored = SweepChunk.objects.filter(sweep__owner=owner).aggregate(size=Sum(Length("data")))["size"] or 0
    if stored >= settings.SWEEP_USER_MAX_STORED_BYTES:
        raise QuotaExceeded("SWEEP_USER_MAX_STORED_BYTES", (
            f"your sweeps store {stored:,} bytes of results; at most {settings.SWEEP_USER_MAX_STORED_BYTES:,}: "
            "delete sweeps you no longer need"), status=409)


def sweep_record(*, owner, plan: ClusterPlan, workload: Workload | None, name: str, base: dict, spec: dict,
                 size: int, chunk_size: int | None = None, site: dict | None = None) -> Sweep:
    """Save a checked sweep (its base documents and normalized spec; a site plan's inputs in
    ``site``), reusing the results of an identical finished sweep of the same owner, and otherwise
    within the owner's quotas (:func:`check_quotas`)."""
    digest = input_hash(base, {**spec, "site": site} if site else spec)
    chunk_size = chunk_size or settings.SWEEP_CHUNK_POINTS
    sweep = Sweep(owner=owner, name=name, plan=plan, workload=workload, spec=spec, site=site,
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
        sweep.site_result = previous.site_result
        sweep.started_at = sweep.finished_at = timezone.now()
        sweep.save()
        return sweep
    with transaction.atomic():  # the count and the insert on the owner's row locked: racing sweeps see each other
        lock_owner(owner)
        check_quotas(owner, size)
        sweep.save()
    return sweep


def sweep_release(*, owner_id: int, window: int | None) -> dict[int, list[int]]:
    """The owner's share of the workers: the next chunks of their unfinished sweeps, oldest first,
    to queue now so that at most ``window`` of their chunks are queued or running at once (None:
    every chunk, for chunks run in the submitting process); each sweep's ``released_chunks`` counts
    what was released, under the rows' locks. Another user's new sweep so waits behind at most
    ``window`` chunks of each user before it, not behind whole sweeps. Returns {sweep id: chunks}."""
    released = {}
    with transaction.atomic():
        sweeps = list(Sweep.objects.select_for_update().filter(owner_id=owner_id, status__in=UNFINISHED,
                                                               reused_from__isnull=True).order_by("created_at", "pk"))
        free = None if window is None else window - sum(s.released_chunks - s.completed_chunks for s in sweeps)
        for sweep in sweeps:
            count = sweep.chunk_count - sweep.released_chunks
            count = count if free is None else min(count, free)
            if count <= 0:
                continue
            released[sweep.pk] = list(range(sweep.released_chunks, sweep.released_chunks + count))
            Sweep.objects.filter(pk=sweep.pk).update(released_chunks=sweep.released_chunks + count)
            free = None if free is None else free - count
    return released


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
    data, invalid = pack_columns(columns)
    try:
        with transaction.atomic():
            SweepChunk.objects.create(sweep_id=sweep_id, index=index, start=start, stop=stop, data=data,
                                      invalid_points=invalid, seconds=time.perf_counter() - began)
    except IntegrityError:
        _record_progress(sweep_id)  # another delivery stored it first, or the sweep was deleted meanwhile
        return False
    metrics.SWEEP_CHUNKS.inc()
    metrics.SWEEP_POINTS.inc(stop - start)
    _record_progress(sweep_id)
    return True


def _record_progress(sweep_id: int):
    with transaction.atomic():
        sweep = Sweep.objects.select_for_update().filter(pk=sweep_id).first()
        if sweep is None:  # deleted meanwhile
            return
        sweep.completed_chunks = sweep.chunks.count()
        finished = sweep.completed_chunks >= sweep.chunk_count and sweep.status not in Sweep.FINAL
        if finished:
            _, goal, _ = sweep_axes(sweep)
            if goal is not None:
                sweep.goal_result = engine.goal_seek(sweep_columns(sweep), goal)
            if sweep.site is not None:
                sweep.site_result = site_ranking(sweep)
            sweep.status = Sweep.Status.DONE
            sweep.finished_at = timezone.now()
        sweep.save(update_fields=["completed_chunks", "status", "finished_at", "goal_result", "site_result"])
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


def sweep_settle(*, sweep: Sweep) -> list[int]:
    """The chunks an unfinished sweep still needs; when it has them all (its worker died between
    storing the last chunk and recording it), record its progress, which finishes it."""
    pending = pending_chunks(sweep)
    if not pending:
        _record_progress(sweep.pk)
    return pending


def sweep_discard(*, sweep: Sweep) -> None:
    """Remove a sweep that could not be queued: nothing of it was computed or is shown anywhere."""
    sweep.delete()
