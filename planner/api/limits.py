"""The API's limits on what one request may ask of the engine."""
import threading
from contextlib import contextmanager

from django.conf import settings
from django.core.cache import cache
from rest_framework import serializers
from rest_framework.exceptions import APIException

import simcore


def enforce_engine_limits(document) -> None:
    """Refuse (400) requests that would ask the engine for more than one request may: too many
    scenario points or Monte Carlo replicas (API_MAX_SCENARIO_POINTS, API_MAX_MONTE_CARLO_REPLICAS)."""
    options = document.get("options") if isinstance(document, dict) else None
    replicas = options.get("monte_carlo_replicas") if isinstance(options, dict) else None
    cap = settings.API_MAX_MONTE_CARLO_REPLICAS
    if isinstance(replicas, int | float) and not isinstance(replicas, bool) and replicas > cap:
        raise serializers.ValidationError({"options.monte_carlo_replicas": [f"at most {cap:,} through the API"]})
    points = simcore.stages.scenario.point_count(document)
    if points > settings.API_MAX_SCENARIO_POINTS:
        raise serializers.ValidationError({"(document)": [
            f"{points:,} scenario points; at most {settings.API_MAX_SCENARIO_POINTS:,} per request "
            "(submit a sweep for more)"]})


class CacheUnavailable(APIException):
    status_code = 503
    default_detail = ("the shared cache (Redis) is unreachable, so this cannot be run one at a time now: "
                      "try again shortly")
    default_code = "cache_unavailable"


# A lock's lease: held for this long, renewed a third of the way through while its holder runs, so that
# a holder killed inside it (its process gone) frees it within a lease.
LEASE_S = 30.0


@contextmanager
def one_at_a_time(key: str, busy: Exception, lease_s: float = LEASE_S):
    """Run the block only if no other holds ``key`` (across processes, through the cache); else
    raise ``busy`` (a 409 or 429 answer), or :class:`CacheUnavailable` (503) when the cache cannot be
    reached, so that nobody holds the key (the fail-soft cache answers as an empty one). The key is a
    lease of ``lease_s`` a thread renews while the block runs; it is freed when the block ends, or
    within ``lease_s`` should the process die inside it."""
    if not cache.add(key, 1, timeout=lease_s):
        raise busy if cache.get(key) is not None else CacheUnavailable()
    done = threading.Event()

    def renew():
        while not done.wait(lease_s / 3):
            cache.touch(key, lease_s)

    renewer = threading.Thread(target=renew, name=f"lease {key}", daemon=True)
    renewer.start()
    try:
        yield
    finally:
        done.set()
        renewer.join()
        cache.delete(key)
