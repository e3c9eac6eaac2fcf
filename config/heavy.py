"""How many requests that run the engine one user and one process run at once."""
import re
from contextlib import contextmanager

from django.conf import settings
from django.core.cache import cache
from redis.exceptions import RedisError
from rest_framework.authentication import get_authorization_header

from config.limits import turn
from config.lockout import busy_response
from planner.api.authentication import AccessTokenAuthentication
from planner.models import AccessToken
from planner.models.tokens import token_key_digest

# Requests that run the engine (evaluations, previews, comparisons, bills, NetBox files, a sweep's or
# a site plan's sampled check, a twin's set-up, a measurement read and compared) and the pages that evaluate a
# plan or compare plans.
HEAVY_PATHS = re.compile(r"^/api/(evaluate|plans/(compare(/file)?|preview)|plans/[^/]+/(evaluate|bom(/file)?|netbox)"
                         r"|workloads/preview)/$|^/(plans/[^/]+|compare)/$")
HEAVY_POSTS = re.compile(r"^/api/(sweeps|sweeps/site|twins|measurements)/$")


def caller_id(request) -> int | None:
    """The id of the user a request comes from: its session's, else its token's (one indexed
    read); None for an anonymous caller or an unknown token (the view answers those)."""
    if request.user.is_authenticated:
        return request.user.pk
    words = get_authorization_header(request).split()
    if len(words) != 2 or words[0].lower() not in AccessTokenAuthentication.KEYWORDS:
        return None
    try:
        digest = token_key_digest(words[1].decode())
    except UnicodeError:
        return None
    return AccessToken.objects.filter(key_digest=digest).values_list("user_id", flat=True).first()


@contextmanager
def user_heavy_slot(user_id: int):
    """Hold one of the user's HEAVY_REQUESTS_PER_USER slots (counted in the shared cache, across
    processes) for the block; False when all are taken. The count lapses after 10 minutes should
    a process die holding a slot; with the cache unreachable every request gets a slot (as the
    throttles fail open)."""
    key = f"heavy-requests:{user_id}"
    cache.add(key, 0, timeout=600)
    try:
        held = cache.incr(key)
    except (ValueError, RedisError):  # the cache lost the key, or cannot be reached: this one goes uncounted
        held = None
    try:
        yield held is None or held <= settings.HEAVY_REQUESTS_PER_USER
    finally:
        if held is not None:
            try:
                cache.decr(key)
            except (ValueError, RedisError):
                pass  # the count lapsed meanwhile, or the cache went down


class HeavyRequestMiddleware:
    """At most HEAVY_REQUESTS_PER_USER requests that run the engine (:data:`HEAVY_PATHS`,
    :data:`HEAVY_POSTS`) of one user at once, across processes (429 with Retry-After beyond), and
    at most HEAVY_REQUESTS_AT_ONCE of them per process, each holding its turn until its database
    connection is back in the pool (one finding no turn within HEAVY_QUEUE_WAIT_S answers 503 with
    Retry-After): one user's burst of site plans or evaluations takes neither the database pool nor
    the process from the others, whose reads need no turn."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        heavy = HEAVY_PATHS.match(request.path) or (request.method == "POST" and HEAVY_POSTS.match(request.path))
        user_id = caller_id(request) if heavy and request.method in ("GET", "POST") else None
        if user_id is None:
            return self.get_response(request)
        with user_heavy_slot(user_id) as free:
            if not free:
                return busy_response(request, "Too many requests at once", (
                    f"you have {settings.HEAVY_REQUESTS_PER_USER} requests running the engine already "
                    "(HEAVY_REQUESTS_PER_USER): send the next when one has answered"), status=429)
            with turn("heavy", settings.HEAVY_REQUESTS_AT_ONCE, settings.HEAVY_QUEUE_WAIT_S) as taken:
                if taken:
                    return self.get_response(request)
            return busy_response(request, "Server busy", "many requests are running the engine here at once "
                                                         "(HEAVY_REQUESTS_AT_ONCE): try again in a second")
