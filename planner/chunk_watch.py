"""The workers' watch for lost sweep chunks (and, through its parts, for other lost work), on the
broker's Redis.

A worker claims each chunk it runs: a key that lapses SWEEP_CLAIM_TTL_S after its last renewal,
renewed every third of that by a thread beside the computation, so a claim outlives its worker by
at most SWEEP_CLAIM_TTL_S. Every SWEEP_WATCH_S one worker (whichever takes the scan lock) reads,
for each unfinished sweep, the chunks not yet stored, the chunks waiting in the ``sim`` queue and
the live claims. A chunk that is in none of them in two scans at least half SWEEP_WATCH_S apart is
lost (its worker died, or Redis lost the queue when it restarted) and is queued again. The second
look spares a chunk in flight between the queue and its claim. So a chunk lost with its worker is
queued again at most about SWEEP_CLAIM_TTL_S + 2 x SWEEP_WATCH_S (40 s by default) after the death,
and one lost with the broker about 2 x SWEEP_WATCH_S after Redis is back. Queued twice by mistake,
a chunk costs a duplicate computation and nothing else: a stored chunk is never stored again."""
import base64
import json
import logging
import threading
import time
from contextlib import contextmanager

from celery import current_app
from django.conf import settings
from kombu.exceptions import OperationalError as BrokerError
from redis.exceptions import RedisError

from planner.models import Sweep, TraceRead
from planner.services.sweeps import sweep_settle

logger = logging.getLogger(__name__)
CHUNK_TASK = "planner.tasks.run_sweep_chunk"
SCAN_LOCK = "sweep-chunk-watch"


def _claim_key(sweep_id: int, index: int) -> str:
    return f"sweep-chunk-claim:{sweep_id}:{index}"


@contextmanager
def broker_redis():
    """The broker's Redis client, on a connection from the app's pool (the ``redis`` transport's
    own connection settings)."""
    with current_app.pool.acquire(block=True) as connection:
        yield connection.default_channel.client


@contextmanager
def claimed(sweep_id: int, index: int):
    """Hold a claim on one chunk for as long as the block runs."""
    with claimed_key(_claim_key(sweep_id, index)):
        yield


@contextmanager
def claimed_key(key: str):
    """Hold a claim (the Redis key ``key``, lapsing SWEEP_CLAIM_TTL_S after its last renewal) for as
    long as the block runs. A claim is best effort: Redis out of reach leaves the work unclaimed (at
    worst done twice), never fails it."""
    ttl_s = settings.SWEEP_CLAIM_TTL_S
    done = threading.Event()

    def claim(action):
        try:
            with broker_redis() as redis:
                action(redis)
        except (RedisError, BrokerError, OSError) as error:
            logger.warning("could not %s the claim %s: %s", action.__name__, key, error)

    def renew(redis):
        redis.set(key, "1", ex=ttl_s)

    def release(redis):
        redis.delete(key)

    def keep():
        while not done.wait(ttl_s / 3):
            claim(renew)

    claim(renew)
    renewer = threading.Thread(target=keep, name=f"claim {key}", daemon=True)
    renewer.start()
    try:
        yield
    finally:
        done.set()
        renewer.join()
        claim(release)


def queued_tasks(redis, queue: str, task: str) -> set[tuple[int, ...]]:
    """The arguments (as integers) of every ``task`` message waiting in ``queue`` (Celery's message
    protocol 2: the body is the base64 JSON ``[args, kwargs, embed]``)."""
    found = set()
    for raw in redis.lrange(queue, 0, -1):
        message = json.loads(raw)
        if message.get("headers", {}).get("task") != task:
            continue
        args = json.loads(base64.b64decode(message["body"]))[0]
        found.add(tuple(int(arg) for arg in args))
    return found


def lost_keys(redis, claim_keys: list[str], now_s: float) -> list[str]:
    """Of the given claims of work that should be queued or running and is not in its queue, those
    that are held by nobody in this scan and in an earlier one at least half SWEEP_WATCH_S ago (the
    second look spares work in flight between its queue and its claim); the first sighting of each
    is recorded in Redis."""
    if not claim_keys:
        return []
    claims = redis.mget(claim_keys)
    missing = [key for key, claim in zip(claim_keys, claims) if claim is None]
    if not missing:
        return []
    seen = redis.mget([f"{key}:missing" for key in missing])
    lost = [key for key, first_s in zip(missing, seen) if first_s is not None
            and now_s - float(first_s) >= settings.SWEEP_WATCH_S / 2]
    with redis.pipeline() as pipe:
        for key, first_s in zip(missing, seen):
            if key in lost:
                pipe.delete(f"{key}:missing")
            elif first_s is None:
                pipe.set(f"{key}:missing", repr(now_s), ex=int(4 * settings.SWEEP_WATCH_S))
        pipe.execute()
    return lost


def lost_chunks(redis, sweep: Sweep, queued: set[tuple[int, ...]], now_s: float) -> list[int]:
    """The sweep's released chunks missing from the store, the queue and the claims in two scans
    (:func:`lost_keys`)."""
    pending = {_claim_key(sweep.pk, i): i for i in sweep_settle(sweep=sweep)
               if i < sweep.released_chunks and (sweep.pk, i) not in queued}
    return [pending[key] for key in lost_keys(redis, list(pending), now_s)]


def scan_lock(redis, name: str) -> bool:
    """Whether this worker takes this round's scan ``name`` (one worker a round)."""
    return bool(redis.set(name, "1", nx=True, ex=max(1, int(settings.SWEEP_WATCH_S * 0.8))))


def scan_for_lost_chunks(enqueue, release=None) -> dict[int, list[int]]:
    """One scan (skipped while another worker's scan holds the lock): queue every lost chunk again
    with ``enqueue(sweep, indices)``, then ``release(sweep)`` once per owner of unfinished sweeps
    (their share of the workers, should a finished chunk's release have been lost with its
    worker); returns {sweep id: the chunks queued again}."""
    requeued, owners = {}, {}
    with broker_redis() as redis:
        if not scan_lock(redis, SCAN_LOCK):
            return requeued
        queued = queued_tasks(redis, "sim", CHUNK_TASK)
        now_s = time.time()
        for sweep in Sweep.objects.filter(status__in=[Sweep.Status.PENDING, Sweep.Status.RUNNING]):
            owners.setdefault(sweep.owner_id, sweep)
            if lost := lost_chunks(redis, sweep, queued, now_s):
                enqueue(sweep, lost)
                requeued[sweep.pk] = lost
    for sweep in owners.values() if release is not None else ():
        release(sweep)
    return requeued


def scan_for_lost_records(active_ids, task: str, claim_key, lock: str, enqueue) -> list[int]:
    """One scan for work recorded in the database and run by ``task`` on the ``celery`` queue (a
    kernel log's ingest, a trace's read), skipped while another worker's scan holds ``lock``: each
    record of ``active_ids`` (a query of the ids queued or running) whose task is neither waiting in
    the queue nor claimed (``claim_key(id)``) in two scans is ``enqueue(id)``-ed; returns their ids."""
    with broker_redis() as redis:
        if not scan_lock(redis, lock):
            return []
        queued = [args[0] for args in queued_tasks(redis, "celery", task)]
        claims = {claim_key(pk): pk for pk in active_ids.exclude(pk__in=queued)}
        lost = [claims[key] for key in lost_keys(redis, list(claims), time.time())]
    for record_id in lost:
        enqueue(record_id)
    return lost


TRACE_TASK = "planner.tasks.read_trace"
TRACE_SCAN_LOCK = "trace-read-watch"


def trace_claim_key(read_id: int) -> str:
    return f"trace-read-claim:{read_id}"


def scan_for_lost_trace_reads(enqueue) -> list[int]:
    """One scan for lost trace reads (the web killed between recording a trace and queueing it, a
    worker killed while reading one, Redis restarted empty), which would otherwise hold their owner's
    slot until judged lost: ``enqueue(read_id)`` for each; returns their ids. Queued twice by mistake,
    a read stores one measurement (a finished read is not run again)."""
    active = TraceRead.objects.filter(status__in=[TraceRead.Status.QUEUED, TraceRead.Status.RUNNING]) \
        .values_list("pk", flat=True)
    return scan_for_lost_records(active, TRACE_TASK, trace_claim_key, TRACE_SCAN_LOCK, enqueue)
