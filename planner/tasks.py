"""Celery tasks: thin wrappers over the sweep services. Chunks go to the ``sim`` queue."""
from celery import shared_task
from django.db import OperationalError
from kombu.exceptions import OperationalError as BrokerError
from redis.exceptions import ConnectionError as RedisConnectionError

from planner.services import sweeps

TRANSIENT = (OSError, OperationalError)  # broker or database connection trouble: retry


@shared_task(
    bind=True, acks_late=True, reject_on_worker_lost=True, autoretry_for=TRANSIENT, retry_backoff=True,
    retry_backoff_max=60, max_retries=5, soft_time_limit=540, time_limit=600,
)
def run_sweep_chunk(self, sweep_id: int, index: int) -> bool:
    try:
        return sweeps.sweep_run_chunk(sweep_id=sweep_id, index=index)
    except TRANSIENT:
        raise
    except Exception as error:
        sweeps.sweep_fail(sweep_id=sweep_id, error=f"chunk {index}: {type(error).__name__}: {error}")
        raise


class QueueUnavailable(RuntimeError):
    """The broker (Redis) cannot be reached, so work could not be queued."""

    MESSAGE = ("the task queue (Redis) is unreachable, so the sweep was not queued and nothing of it was saved; "
               "submit it again when the queue is back")


def sweep_enqueue(sweep) -> None:
    """Queue every chunk not yet stored (the embedded default runs them in this process).

    Raises :class:`QueueUnavailable` when the broker is unreachable; chunks queued before that
    are harmless (a chunk of a sweep that no longer exists is skipped, and a stored one is never
    stored twice)."""
    try:
        for index in sweeps.pending_chunks(sweep):
            run_sweep_chunk.apply_async(args=(sweep.pk, index), queue="sim")
    except (BrokerError, RedisConnectionError, OSError) as error:
        raise QueueUnavailable(str(error)) from error
