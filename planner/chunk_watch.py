"""The workers' watch for lost sweep chunks, on the broker's Redis.

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

from planner.models import Sweep
from planner.services.sweeps import sweep_settle

logger = logging.getLogger(__name__)
CHUNK_TASK = "planner.tasks.run_sweep_chunk"
SCAN_LOCK = "sweep-chunk-watch"


def _claim_key(sweep_id: int, index: int) -> str:
    return f"sweep-chunk-claim:{sweep_id}:{index}"


def _missing_key(sweep_id: int, index: int) -> str:
    return f"sweep-chunk-missing:{sweep_id}:{index}"


@contextmanager
def broker_redis():
    """The broker's Redis client, on a connection from the app's pool (the ``redis`` transport's
    own connection settings)."""
    with current_app.pool.acquire(block=True) as connection:
        yield connection.default_channel.client


@contextmanager
def claimed(sweep_id: int, index: int):
    """Hold a claim on one chunk for as long as the block runs. A claim is best effort: Redis out
    of reach leaves the chunk unclaimed (at worst computed twice), never fails it."""
    ttl_s = settings.SWEEP_CLAIM_TTL_S
    key = _claim_key(sweep_id, index)
    done = threading.Event()

    def claim(action):
        try:
            with broker_redis() as redis:
                action(redis)
        except (RedisError, BrokerError, OSError) as error:
            logger.warning("could not %s the claim on chunk %d of sweep %d: %s", action.__name__, index, sweep_id,
                           error)

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


def queued_chunks(redis) -> set[tuple[int, int]]:
    """(sweep id, chunk index) of every chunk message waiting in the ``sim`` queue (Celery's
    message protocol 2: the body is the base64 JSON ``[args, kwargs, embed]``)."""
    found = set()
    for raw in redis.lrange("sim", 0, -1):
        message = json.loads(raw)
        if message.get("headers", {}).get("task") != CHUNK_TASK:
            continue
        args = json.loads(base64.b64decode(message["body"]))[0]
        found.add((int(args[0]), int(args[1])))
    return found


def lost_chunks(redis, sweep: Sweep, queued: set[tuple[int, int]], now_s: float) -> list[int]:
    """The sweep's chunks missing from the store, the queue and the claims in this scan and in an
    earlier one at least half SWEEP_WATCH_S ago; the first sighting of each is recorded in Redis."""
    pending = [i for i in sweep_settle(sweep=sweep) if (sweep.pk, i) not in queued]
    if not pending:
        return []
    claims = redis.mget([_claim_key(sweep.pk, i) for i in pending])
    missing = [i for i, claim in zip(pending, claims) if claim is None]
    if not missing:
        return []
    seen = redis.mget([_missing_key(sweep.pk, i) for i in missing])
    lost = [i for i, first_s in zip(missing, seen) if first_s is not None
            and now_s - float(first_s) >= settings.SWEEP_WATCH_S / 2]
    with redis.pipeline() as pipe:
        for index, first_s in zip(missing, seen):
            if index in lost:
                pipe.delete(_missing_key(sweep.pk, index))
            elif first_s is None:
                pipe.set(_missing_key(sweep.pk, index), repr(now_s), ex=int(4 * settings.SWEEP_WATCH_S))
        pipe.execute()
    return lost


def scan_for_lost_chunks(enqueue) -> dict[int, list[int]]:
    """One scan (skipped while another worker's scan holds the lock): queue every lost chunk again
    with ``enqueue(sweep, indices)``; returns {sweep id: the chunks queued again}."""
    requeued = {}
    with broker_redis() as redis:
        if not redis.set(SCAN_LOCK, "1", nx=True, ex=max(1, int(settings.SWEEP_WATCH_S * 0.8))):
            return requeued
        queued = queued_chunks(redis)
        now_s = time.time()
        for sweep in Sweep.objects.filter(status__in=[Sweep.Status.PENDING, Sweep.Status.RUNNING]):
            if lost := lost_chunks(redis, sweep, queued, now_s):
                enqueue(sweep, lost)
                requeued[sweep.pk] = lost
    return requeued
