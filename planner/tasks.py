"""Celery tasks and the broker side of sweeps: thin wrappers over the sweep services, queueing, and
the workers' part in the watch for lost chunks. Chunks go to the ``sim`` queue."""
import logging
from contextlib import contextmanager

from celery import current_app, shared_task
from celery.signals import worker_ready
from django.conf import settings
from django.db import DatabaseError, OperationalError, close_old_connections
from kombu.exceptions import OperationalError as BrokerError
from redis.exceptions import ConnectionError as RedisConnectionError

from planner import chunk_watch
from planner.models import Sweep, TraceRead
from planner.services import sweeps, trace_reads
from planner.services.retention import retention_enforce

logger = logging.getLogger(__name__)
TRANSIENT = (OSError, OperationalError)  # broker or database connection trouble: retry


@shared_task(
    bind=True, acks_late=True, reject_on_worker_lost=True, autoretry_for=TRANSIENT, retry_backoff=True,
    retry_backoff_max=60, max_retries=5, soft_time_limit=540, time_limit=600,
)
def run_sweep_chunk(self, sweep_id: int, index: int) -> bool:
    in_process = runs_in_process()  # every chunk was queued at once: none to release
    try:
        if in_process:
            return sweeps.sweep_run_chunk(sweep_id=sweep_id, index=index)
        with chunk_watch.claimed(sweep_id, index):
            stored = sweeps.sweep_run_chunk(sweep_id=sweep_id, index=index)
    except TRANSIENT:
        raise
    except Exception as error:
        sweeps.sweep_fail(sweep_id=sweep_id, error=f"chunk {index}: {type(error).__name__}: {error}")
        if not in_process:
            release_next(sweep_id)
        raise
    release_next(sweep_id)
    return stored


class QueueUnavailable(RuntimeError):
    """The broker (Redis) cannot be reached, so work could not be queued."""

    MESSAGE = ("the task queue (Redis) is unreachable, so the sweep was not queued and nothing of it was saved; "
               "submit it again when the queue is back")


def runs_in_process() -> bool:
    """Whether queued work runs in the calling process (the embedded default, no broker)."""
    return bool(current_app.conf.task_always_eager)


def sweep_enqueue(sweep, indices: list[int] | None = None) -> None:
    """Queue the given chunks of ``sweep`` (the watch's lost ones), by default the chunks its owner's
    share of the workers lets go now (``planner.services.sweeps.sweep_release``; every chunk when
    they run in this process, as the embedded default runs them).

    Raises :class:`QueueUnavailable` when the broker is unreachable, even when the owner's share
    lets nothing go now (a sweep is not accepted while its chunks could not be queued); chunks
    queued before that are harmless (a chunk of a sweep that no longer exists is skipped, and a
    stored one is never stored twice), and released chunks that were not queued are the watch's to
    find."""
    window = None if runs_in_process() else settings.SWEEP_CHUNKS_IN_FLIGHT_PER_USER
    with queueing(QueueUnavailable):
        chunks = sweeps.sweep_release(owner_id=sweep.owner_id, window=window) if indices is None else {
            sweep.pk: indices}
        if not chunks and window is not None:  # nothing to queue now: the queue must still be there
            with current_app.connection_for_write() as connection:
                connection.ensure_connection(max_retries=1)
        for sweep_id, released in chunks.items():
            for index in released:
                run_sweep_chunk.apply_async(args=(sweep_id, index), queue="sim")


def release_next(sweep_id: int) -> None:
    """After a chunk of ``sweep_id``: queue what its owner's share now lets go. With the broker out
    of reach the released chunks are left to the watch, which queues them once it is back."""
    sweep = Sweep.objects.filter(pk=sweep_id).only("owner_id").first()
    try:
        if sweep is not None:
            sweep_enqueue(sweep)
    except QueueUnavailable as error:
        logger.warning("could not queue the next chunks after sweep %d's: %s", sweep_id, error)


@contextmanager
def queueing(unavailable: type[QueueUnavailable]):
    """Queue work in the block; a broker that cannot be reached raises ``unavailable`` (a 503)."""
    try:
        yield
    except (BrokerError, RedisConnectionError, OSError) as error:
        raise unavailable(str(error)) from error


def watch_every_round(sender, scan, what: str) -> None:
    """Have this worker run ``scan()`` (a watch for lost work, returning what it queued again) every
    SWEEP_WATCH_S; what it queued is logged as a warning, and trouble reaching the database or the
    broker skips the round."""
    def look():
        close_old_connections()
        try:
            if requeued := scan():
                logger.warning("queued lost %s again: %s", what, requeued)
        except (DatabaseError, QueueUnavailable, BrokerError, RedisConnectionError, OSError) as error:
            logger.warning("could not look for lost %s: %s", what, error)
        finally:
            close_old_connections()

    sender.timer.call_repeatedly(settings.SWEEP_WATCH_S, look)


@worker_ready.connect
def watch_for_lost_chunks(sender, **kwargs):
    """Every worker takes part in the watch for lost chunks (planner.chunk_watch)."""
    watch_every_round(sender, lambda: chunk_watch.scan_for_lost_chunks(sweep_enqueue, sweep_enqueue), "sweep chunks")


class TraceQueueUnavailable(QueueUnavailable):
    MESSAGE = ("the task queue (Redis) is unreachable, so the trace was not queued and nothing of it was saved; "
               "send it again when the queue is back")


@shared_task(bind=True, acks_late=True, reject_on_worker_lost=True, autoretry_for=TRANSIENT, retry_backoff=True,
             retry_backoff_max=60, max_retries=5, soft_time_limit=540, time_limit=600)
def read_trace(self, read_id: int) -> bool:
    return run_recorded(chunk_watch.trace_claim_key(read_id), lambda: trace_reads.trace_read_run(read_id=read_id),
                        lambda error: trace_reads.trace_read_fail(read_id=read_id, error=error))


def trace_read_enqueue(read: TraceRead) -> TraceRead:
    """Queue a recorded trace's read (the embedded default runs it in this process, so it comes back
    finished); :func:`enqueue_recorded`."""
    return enqueue_recorded(read_trace, read, TraceQueueUnavailable)


def run_recorded(claim_key: str, run, fail):
    """A task's body for work recorded in the database (a trace's read, a kernel log's ingest):
    ``run()`` under a claim the workers' watch sees (none when tasks run in this process); any
    failure but a transient one, which is retried, recorded by ``fail(reason)``."""
    try:
        if runs_in_process():
            return run()
        with chunk_watch.claimed_key(claim_key):
            return run()
    except TRANSIENT:
        raise
    except Exception as error:
        fail(f"{type(error).__name__}: {error}")
        raise


def enqueue_recorded(task, record, unavailable: type[QueueUnavailable]):
    """Queue ``task`` for a recorded piece of work on the ``celery`` queue and return the record as it
    stands (the embedded default runs it here, so it comes back finished). A broker that cannot be
    reached raises ``unavailable`` and the record is deleted: nothing of work that could not be
    queued stays."""
    try:
        with queueing(unavailable):
            task.apply_async(args=(record.pk,), queue="celery")
    except unavailable:
        record.delete()
        raise
    record.refresh_from_db()
    return record


def trace_read_resend(read_id: int) -> None:
    """Queue a recorded trace's read again (the watch for lost reads), its record touched so that it
    is not judged lost meanwhile."""
    trace_reads.trace_read_touch(read_id=read_id)
    read_trace.apply_async(args=(read_id,), queue="celery")


@worker_ready.connect
def watch_for_lost_trace_reads(sender, **kwargs):
    """Every worker takes part in the watch for lost trace reads (planner.chunk_watch)."""
    watch_every_round(sender, lambda: chunk_watch.scan_for_lost_trace_reads(trace_read_resend), "trace reads")


@shared_task
def enforce_retention() -> dict[str, int]:
    """Hourly (Celery beat): delete what the retention settings no longer keep."""
    return retention_enforce()
