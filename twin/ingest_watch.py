"""The workers' watch for lost kernel-log ingests, on the broker's Redis, as for sweep chunks
(:mod:`planner.chunk_watch`): a worker claims each ingest it runs, and every SWEEP_WATCH_S one worker
looks for queued or running ingests whose task is neither waiting in the ``celery`` queue nor
claimed, in two scans at least half SWEEP_WATCH_S apart. Each is queued again: the web killed
between recording a log and queueing it, a worker killed while reading one, or Redis restarted
empty no longer leave the twin refusing logs until the record is judged lost. Queued twice by
mistake, an ingest is applied once (a finished ingest is not run again, and a fault already
ingested is counted, not applied)."""
from planner import chunk_watch
from twin.models import LogIngest
from twin.services.log_ingests import ACTIVE

INGEST_TASK = "twin.tasks.ingest_kernel_log"
SCAN_LOCK = "log-ingest-watch"


def claim_key(ingest_id: int) -> str:
    return f"log-ingest-claim:{ingest_id}"


def scan_for_lost_ingests(enqueue) -> list[int]:
    """One scan: ``enqueue(ingest_id)`` for each lost ingest; returns their ids."""
    active = LogIngest.objects.filter(status__in=ACTIVE).values_list("pk", flat=True)
    return chunk_watch.scan_for_lost_records(active, INGEST_TASK, claim_key, SCAN_LOCK, enqueue)
