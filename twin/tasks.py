"""Celery tasks of twins: thin wrappers over :mod:`twin.services.log_ingests`, queueing a large
kernel log for its ingest, and the workers' part in the watch for lost ingests."""
from celery import shared_task
from celery.signals import worker_ready

from planner.tasks import TRANSIENT, QueueUnavailable, enqueue_recorded, run_recorded, watch_every_round
from twin import ingest_watch
from twin.models import LogIngest
from twin.services import log_ingests


class LogQueueUnavailable(QueueUnavailable):
    MESSAGE = ("the task queue (Redis) is unreachable, so the kernel log was not queued and nothing of it was saved; "
               "send it again when the queue is back")


@shared_task(bind=True, acks_late=True, reject_on_worker_lost=True, autoretry_for=TRANSIENT, retry_backoff=True,
             retry_backoff_max=60, max_retries=5)
def ingest_kernel_log(self, ingest_id: int) -> bool:
    return run_recorded(ingest_watch.claim_key(ingest_id), lambda: log_ingests.log_ingest_run(ingest_id=ingest_id),
                        lambda error: log_ingests.log_ingest_fail(ingest_id=ingest_id, error=error))


def log_ingest_enqueue(ingest: LogIngest) -> LogIngest:
    """Queue a recorded log's ingest (the embedded default runs it in this process, so it comes back
    finished); :func:`planner.tasks.enqueue_recorded`."""
    return enqueue_recorded(ingest_kernel_log, ingest, LogQueueUnavailable)


def log_ingest_resend(ingest_id: int) -> None:
    """Queue a recorded log's ingest again (the watch for lost ingests), its record touched so that
    it is not judged lost meanwhile."""
    log_ingests.log_ingest_touch(ingest_id=ingest_id)
    ingest_kernel_log.apply_async(args=(ingest_id,), queue="celery")


@worker_ready.connect
def watch_for_lost_ingests(sender, **kwargs):
    """Every worker takes part in the watch for lost kernel-log ingests (twin.ingest_watch)."""
    watch_every_round(sender, lambda: ingest_watch.scan_for_lost_ingests(log_ingest_resend), "kernel-log ingests")
