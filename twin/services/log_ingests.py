"""Kernel logs too large for their request (more than ``TWIN_INGEST_INLINE_MAX_LINES`` lines): the
log is recorded as a :class:`~twin.models.LogIngest` and a Celery task reads it block by block,
recording the lines read, then applies it in one transaction with its result. One ingest per twin
at a time: while one is queued or running, the next log into that twin answers 409."""
from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from twin.models import LogIngest, Twin
from twin.services.errors import TwinInputError
from twin.services.ingestion import KernelLog, kernel_log_upload, twin_ingest_log

ACTIVE = (LogIngest.Status.QUEUED, LogIngest.Status.RUNNING)
LOST_WORKER = ("its worker stopped before it finished (no progress for longer than a task may run); nothing of it "
               "was applied: send the log again")


def runs_after_its_request(upload: KernelLog) -> bool:
    """Whether a log is large enough to be ingested by a task rather than in its request."""
    return len(upload.lines) > settings.TWIN_INGEST_INLINE_MAX_LINES


def ingest_in_progress(twin: Twin) -> bool:
    """Whether a log is being ingested into the twin. An ingest that has made no progress for longer
    than a task may run (``CELERY_TASK_TIME_LIMIT``) lost its worker, and is marked failed."""
    lost_before = timezone.now() - timedelta(seconds=settings.CELERY_TASK_TIME_LIMIT)
    LogIngest.objects.filter(twin=twin, status__in=ACTIVE, updated_at__lt=lost_before).update(
        status=LogIngest.Status.FAILED, error=LOST_WORKER, log="", finished_at=timezone.now())
    return LogIngest.objects.filter(twin=twin, status__in=ACTIVE).exists()


def log_ingest_create(*, twin: Twin, upload: KernelLog, boot_time, year, timezone_name: str) -> LogIngest:
    """Record a checked log for its task (its lines, which read back as they are)."""
    return LogIngest.objects.create(twin=twin, node=upload.node, lines_total=len(upload.lines),
                                    log="".join(line + "\n" for line in upload.lines),
                                    boot_time=boot_time, year=year, timezone=timezone_name)


def _record(ingest_id: int, **fields) -> None:
    LogIngest.objects.filter(pk=ingest_id).update(updated_at=timezone.now(), **fields)


def log_ingest_touch(*, ingest_id: int) -> None:
    """Record that an ingest was queued again."""
    _record(ingest_id)


def _finish(ingest_id: int, **fields) -> None:
    _record(ingest_id, log="", finished_at=timezone.now(), **fields)


def log_ingest_run(*, ingest_id: int) -> bool:
    """Read and apply a recorded log; False if it had already finished (a task delivered twice) or is
    gone. Its result is stored in the transaction that applies it, so a worker killed mid-way
    leaves nothing applied and the redelivered task starts again from the first line."""
    if not LogIngest.objects.filter(pk=ingest_id, status__in=ACTIVE).update(
            status=LogIngest.Status.RUNNING, lines_read=0, updated_at=timezone.now()):
        return False
    ingest = LogIngest.objects.select_related("twin").get(pk=ingest_id)
    try:
        upload = kernel_log_upload(twin=ingest.twin, node=ingest.node, text=ingest.log, boot_time=ingest.boot_time,
                                   year=ingest.year, timezone_name=ingest.timezone)
        twin_ingest_log(twin=ingest.twin, upload=upload, progress=lambda read: _record(ingest_id, lines_read=read),
                        on_applied=lambda result: _finish(ingest_id, status=LogIngest.Status.DONE, result=result))
    except TwinInputError as error:
        _finish(ingest_id, status=LogIngest.Status.FAILED, errors=error.errors)
    return True


def log_ingest_fail(*, ingest_id: int, error: str) -> None:
    """Record why a task could not ingest its log (anything but bad input)."""
    _finish(ingest_id, status=LogIngest.Status.FAILED, error=error)


def log_ingest_json(ingest: LogIngest) -> dict:
    return {"id": ingest.pk, "twin": ingest.twin_id, "node": ingest.node, "status": ingest.status,
            "lines_total": ingest.lines_total, "lines_read": ingest.lines_read,
            "progress": ingest.lines_read / ingest.lines_total if ingest.lines_total else 1.0,
            "result": ingest.result or None, "errors": ingest.errors or None, "error": ingest.error,
            "created_at": ingest.created_at, "updated_at": ingest.updated_at, "finished_at": ingest.finished_at}
