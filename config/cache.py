"""The shared cache: Django's Redis cache, answering as an empty cache while Redis is down."""
import logging

from django.core.cache.backends.redis import RedisCache
from redis.exceptions import RedisError

logger = logging.getLogger(__name__)


def _unreachable(error: RedisError):
    logger.warning("the cache (Redis) is unreachable, answering as an empty cache: %s", error)


def _soft(method, fallback=None):
    def answer(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except RedisError as error:
            _unreachable(error)
            return fallback
    return answer


class FailSoftRedisCache(RedisCache):
    """Django's Redis cache, shared by every process: request throttles count across all web
    processes, and an evaluation memoized by one process is found by the others.

    While Redis is unreachable, get, set, add, delete and clear (what throttles, the evaluation
    memo and the tests use) answer as an empty cache instead of failing each request: throttles
    then let requests through and evaluations are computed afresh. incr and decr raise Redis's
    error, for callers that count elsewhere while the cache is down (the login lockout).
    """

    def get(self, key, default=None, version=None):
        try:
            return super().get(key, default, version)
        except RedisError as error:
            _unreachable(error)
            return default

    set = _soft(RedisCache.set)
    add = _soft(RedisCache.add, False)
    delete = _soft(RedisCache.delete, False)
    clear = _soft(RedisCache.clear, False)
