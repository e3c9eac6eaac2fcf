"""Profiler traces too large to read in their request (:func:`planner.services.measurements.trace_reads_later`):
the file is recorded as a :class:`~planner.models.TraceRead` and a Celery task reads, compares and
stores it as a measurement, or records why it was refused. One read per user at a time: while one of
theirs is queued or running, their next large trace answers 429. The workers' watch
(:func:`planner.chunk_watch.scan_for_lost_trace_reads`) queues a lost read again; one untouched for
longer than a task may run is failed, freeing the slot. The user's measurement quota is
taken when the read is recorded and again when its measurement is stored, both on the owner's row
locked."""
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from planner.models import ClusterPlan, Measurement, TraceRead
from planner.services.errors import InputError, QuotaExceeded
from planner.services.measurements import measurement_upload, room_for_one_more, trace_upload_check
from planner.services.quotas import lock_owner

ACTIVE = (TraceRead.Status.QUEUED, TraceRead.Status.RUNNING)
LOST_WORKER = ("its worker stopped before it finished (no progress for longer than a task may run); nothing of it "
               "was stored: send the trace again")


def _mark_lost_reads(owner) -> None:
    """An active read that has made no progress for longer than a task may run (``CELERY_TASK_TIME_LIMIT``)
    lost its worker: marked failed, which frees its owner's slot."""
    lost_before = timezone.now() - timedelta(seconds=settings.CELERY_TASK_TIME_LIMIT)
    TraceRead.objects.filter(owner=owner, status__in=ACTIVE, updated_at__lt=lost_before).update(
        status=TraceRead.Status.FAILED, error=LOST_WORKER, content=b"", finished_at=timezone.now())


def trace_read_create(*, owner, plan: ClusterPlan, content: bytes, filename: str, name: str, note: str,
                      use_as_override: bool, traced: dict) -> TraceRead:
    """Record a trace for its task, after the checks that need no reading (a plan and workload, the
    file's size, the measurement quota), on the owner's row locked: 429 while another of the owner's
    traces is being read."""
    trace_upload_check(content, plan, traced)
    first_step, last_step = traced.get("steps") or (None, None)
    with transaction.atomic():
        lock_owner(owner)
        _mark_lost_reads(owner)
        if TraceRead.objects.filter(owner=owner, status__in=ACTIVE).exists():
            raise QuotaExceeded("file", "another trace of yours is being read: send the next when it has finished "
                                        "(GET its Location)", 429)
        room_for_one_more(owner)
        return TraceRead.objects.create(
            owner=owner, plan=plan, workload=traced["workload"], name=name or filename, filename=filename, note=note,
            use_as_override=use_as_override, moe_layers=traced["moe_layers"], dense_layers=traced["dense_layers"],
            first_step=first_step, last_step=last_step, content=content, size_bytes=len(content))


def trace_read_touch(*, read_id: int) -> None:
    """Record that a read was queued again."""
    TraceRead.objects.filter(pk=read_id).update(updated_at=timezone.now())


def _finish(read_id: int, **fields) -> None:
    TraceRead.objects.filter(pk=read_id).update(content=b"", finished_at=timezone.now(), updated_at=timezone.now(),
                                                **fields)


def trace_read_run(*, read_id: int) -> bool:
    """Read, compare and store a recorded trace; False if it had already finished (a task delivered
    twice) or is gone. The measurement and the read's result are stored in one transaction, so a
    worker killed mid-way stores nothing and the redelivered task reads the file again."""
    if not TraceRead.objects.filter(pk=read_id, status__in=ACTIVE).update(
            status=TraceRead.Status.RUNNING, updated_at=timezone.now()):
        return False
    read = TraceRead.objects.select_related("owner", "plan", "workload").get(pk=read_id)
    steps = (read.first_step, read.last_step) if read.first_step is not None else None
    traced = {"workload": read.workload, "moe_layers": read.moe_layers, "dense_layers": read.dense_layers,
              "steps": steps}
    try:
        with transaction.atomic():
            measurement = measurement_upload(
                owner=read.owner, kind=Measurement.Kind.TRACE, content=bytes(read.content), filename=read.filename,
                name=read.name, plan=read.plan, note=read.note, use_as_override=read.use_as_override, traced=traced)
            _finish(read_id, status=TraceRead.Status.DONE, measurement=measurement)
    except InputError as error:
        _finish(read_id, status=TraceRead.Status.FAILED, errors=error.errors)
    return True


def trace_read_fail(*, read_id: int, error: str) -> None:
    """Record why a task could not read its trace (anything but bad input)."""
    _finish(read_id, status=TraceRead.Status.FAILED, error=error)


def trace_read_json(read: TraceRead) -> dict:
    return {"id": read.pk, "status": read.status, "name": read.name, "filename": read.filename,
            "plan": read.plan.slug, "workload": read.workload.slug, "size_bytes": read.size_bytes,
            "measurement": read.measurement_id, "errors": read.errors or None, "error": read.error,
            "created_at": read.created_at, "updated_at": read.updated_at, "finished_at": read.finished_at}
