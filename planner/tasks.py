"""Celery tasks: thin wrappers over the sweep services. Chunks go to the ``sim`` queue."""
from celery import shared_task
from django.db import OperationalError

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


def sweep_enqueue(sweep) -> None:
    """Queue every chunk not yet stored (the embedded default runs them in this process)."""
    for index in sweeps.pending_chunks(sweep):
        run_sweep_chunk.apply_async(args=(sweep.pk, index), queue="sim")
