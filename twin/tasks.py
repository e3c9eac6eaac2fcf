"""Celery tasks of twins: thin wrappers over :mod:`twin.services.log_ingests`, and queueing a large
kernel log for its ingest."""
from celery import shared_task

from planner.tasks import TRANSIENT, QueueUnavailable, queueing
from twin.models import LogIngest
from twin.services import log_ingests


class LogQueueUnavailable(QueueUnavailable):
    MESSAGE = ("the task queue (Redis) is unreachable, so the kernel log was not queued and nothing of it was saved; "
               "send it again when the queue is back")


@shared_task(bind=True, acks_late=True, reject_on_worker_lost=True, autoretry_for=TRANSIENT, retry_backoff=True,
             retry_backoff_max=60, max_retries=5)
def ingest_kernel_log(self, ingest_id: int) -> bool:
    try:
        return log_ingests.log_ingest_run(ingest_id=ingest_id)
    except TRANSIENT:
        raise
    except Exception as error:
        log_ingests.log_ingest_fail(ingest_id=ingest_id, error=f"{type(error).__name__}: {error}")
        raise


def log_ingest_enqueue(ingest: LogIngest) -> LogIngest:
    """Queue a recorded log's ingest (the embedded default runs it in this process, so it comes back
    finished). A broker that cannot be reached raises :class:`LogQueueUnavailable` and the record is
    deleted: nothing of a log that could not be queued stays."""
    try:
        with queueing(LogQueueUnavailable):
            ingest_kernel_log.apply_async(args=(ingest.pk,), queue="celery")
    except LogQueueUnavailable:
        ingest.delete()
        raise
    ingest.refresh_from_db()
    return ingest
