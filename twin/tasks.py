"""Celery tasks of twins: thin wrappers over :mod:`twin.services.log_ingests`, queueing a large
kernel log for its ingest, and the workers' part in the watch for lost ingests."""
from celery import shared_task
from celery.signals import worker_ready

from planner import chunk_watch
from planner.tasks import TRANSIENT, QueueUnavailable, queueing, runs_in_process, watch_every_round
from twin import ingest_watch
from twin.models import LogIngest
from twin.services import log_ingests


class LogQueueUnavailable(QueueUnavailable):
    MESSAGE = ("the task queue (Redis) is unreachable, so the kernel log was not queued and nothing of it was saved; "
               "send it again when the queue is back")


@shared_task(bind=True, acks_late=True, reject_on_worker_lost=True, autoretry_for=TRANSIENT, retry_backoff=True,
             retry_backoff_max=60, max_retries=5)
def ingest_kernel_log(self, ingest_id: int) -> bool:
    try:
        if runs_in_process():
            return log_ingests.log_ingest_run(ingest_id=ingest_id)
        with chunk_watch.claimed_key(ingest_watch.claim_key(ingest_id)):
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


def log_ingest_resend(ingest_id: int) -> None:
    """Queue a recorded log's ingest again (the watch for lost ingests), its record touched so that
    it is not judged lost meanwhile."""
    log_ingests.log_ingest_touch(ingest_id=ingest_id)
    ingest_kernel_log.apply_async(args=(ingest_id,), queue="celery")


@worker_ready.connect
def watch_for_lost_ingests(sender, **kwargs):
    """Every worker takes part in the watch for lost kernel-log ingests (twin.ingest_watch)."""
    watch_every_round(sender, lambda: ingest_watch.scan_for_lost_ingests(log_ingest_resend), "kernel-log ingests")
