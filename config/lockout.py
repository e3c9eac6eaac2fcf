"""Login throttling on every login path, answered 429 with a Retry-After: a progressive delay per
(username, address) pair, and a per-address ceiling that no successful login resets.

django-axes records the failures of each pair. After ``LOGIN_DELAY_AFTER_FAILURES`` of them, each
further attempt on that pair must wait ``LOGIN_DELAY_BASE_S`` doubled for every failure past the
first delayed one (1, 2, 4, 8 ... s by default), at most ``LOGIN_LOCKOUT_MINUTES``, from the last
failure; an attempt during the wait is refused before its password is checked and is not counted.
So guessing one account's password from one address slows exponentially, while the real user who
mistyped waits seconds, not a lockout, and guesses from other addresses never touch their pair. A
success resets only its own pair, so an attacker's logins to an account of their own never clear
their failures against another. NIST SP 800-63B (section 5.2.2, rate limiting) lists a wait after
a failed attempt that grows as failures accumulate among the ways to keep rate limiting from
locking the legitimate claimant out. The ceiling bounds guessing across accounts from one
address: ``LOGIN_ADDRESS_FAILURE_LIMIT`` failures within ``LOGIN_LOCKOUT_MINUTES`` lock the
address, whatever succeeds in between.
"""
import math

from axes.helpers import get_client_ip_address
from axes.models import AccessAttempt
from django.conf import settings
from django.contrib.auth.signals import user_login_failed
from django.core.cache import cache
from django.core.exceptions import PermissionDenied
from django.db.models import Max, Sum
from django.dispatch import receiver
from django.http import JsonResponse
from django.shortcuts import render
from django.utils import timezone
from redis.exceptions import RedisError

from config.limits import turn

LOCKOUT_MESSAGE = ("Too many failed logins from this address: try again in {minutes:g} minutes, or ask staff to "
                   "unlock it.")
WAIT_MESSAGE = ("Several failed logins for this account from this address: wait {seconds} s before the next try "
                "(the wait doubles with each further failure), or ask staff to unlock it.")


def lockout_response(request, original_response=None, credentials=None):
    """429 with a Retry-After header: JSON for the API, the lockout page for the login forms."""
    wait_s = getattr(request, "login_wait_s", None)
    if wait_s is not None:
        retry_after_s = math.ceil(wait_s)
        heading, message = "Login paused", WAIT_MESSAGE.format(seconds=retry_after_s)
    else:
        retry_after_s = int(settings.AXES_COOLOFF_TIME.total_seconds())
        heading, message = "Login locked", LOCKOUT_MESSAGE.format(minutes=retry_after_s / 60)
    if request.path.startswith("/api/"):
        response = JsonResponse({"detail": message, "retry_after_s": retry_after_s}, status=429)
    else:
        response = render(request, "frontend/locked_out.html", {"heading": heading, "message": message},
                          status=429)
    response["Retry-After"] = str(retry_after_s)
    return response


def _address_key(request) -> str:
    return f"login-failures:{get_client_ip_address(request)}"


def _window_s() -> int:
    return int(settings.AXES_COOLOFF_TIME.total_seconds())


def _http_request(request):
    """The HttpRequest under a DRF Request, where the middleware will look for the reservation."""
    return getattr(request, "_request", request)


def _database_failures(request) -> int:
    since = timezone.now() - settings.AXES_COOLOFF_TIME
    return int(AccessAttempt.objects.filter(ip_address=get_client_ip_address(request), attempt_time__gte=since)
               .aggregate(failures=Sum("failures_since_start"))["failures"] or 0)


def _reserve(request) -> int | None:
    """Count this attempt against its address before any password is checked, atomically (Redis
    INCR), so that a burst of parallel attempts cannot all pass the ceiling before the first
    failure is recorded: the count after it, or None while the cache is down."""
    key = _address_key(request)
    try:
        cache.add(key, 0, timeout=_window_s())
        return cache.incr(key)
    except ValueError:  # the window ended between add and incr: this attempt opens the next one
        cache.add(key, 1, timeout=_window_s())
        return 1
    except RedisError:
        return None


def _refund(request) -> None:
    """Take back an attempt's reservation: it succeeded, or it was refused before any password check."""
    http = _http_request(request)
    if getattr(http, "login_reserved", False):
        http.login_reserved = False
        try:
            cache.decr(_address_key(request))
        except (ValueError, RedisError):  # the window ended, or the cache is down: nothing to take back
            pass


@receiver(user_login_failed)
def count_address_failure(sender, credentials=None, request=None, **kwargs):
    """A failed login keeps the count its attempt reserved (:class:`AddressCeilingBackend`); an attempt
    refused before its password was checked is no guess and gives its reservation back."""
    if request is None:
        return
    http = _http_request(request)
    http.login_failed = True
    if getattr(request, "axes_locked_out", False) or getattr(http, "axes_locked_out", False):
        _refund(request)


class AddressCeilingBackend:
    """Listed first in AUTHENTICATION_BACKENDS: reserves the attempt against its address's ceiling
    before any password is checked, and refuses it when the ceiling is reached (axes' middleware
    then answers with :func:`lockout_response`). While the cache is down the ceiling is read from
    axes' database records instead."""

    def authenticate(self, request, **credentials):
        if request is None:
            return None
        count = _reserve(request)
        if count is None:
            over = _database_failures(request) >= settings.LOGIN_ADDRESS_FAILURE_LIMIT
        else:
            _http_request(request).login_reserved = True
            over = count > settings.LOGIN_ADDRESS_FAILURE_LIMIT
        if over:
            request.axes_locked_out = True
            _refund(request)
            raise PermissionDenied("too many failed logins from this address")
        return None


LOGIN_PATHS = frozenset({"/api/auth/token/", "/login/", "/admin/login/"})
BUSY_MESSAGE = "Many logins are being checked at once here: try again in a second."
def busy_response(request, heading: str = "Login busy", message: str = BUSY_MESSAGE, status: int = 503,
                  retry_after_s: int = 1):
    """An answer with Retry-After for a request that found no turn: JSON for the API, a page for the
    site's pages."""
    if request.path.startswith("/api/"):
        response = JsonResponse({"detail": message}, status=status)
    else:
        response = render(request, "frontend/locked_out.html", {"heading": heading, "message": message},
                          status=status)
    response["Retry-After"] = str(retry_after_s)
    return response


class LoginReservationMiddleware:
    """Checks at most LOGIN_CHECKS_AT_ONCE logins at a time per process, each holding its turn until
    its database connection is back in the pool (a login that waits longer than LOGIN_QUEUE_WAIT_S
    for a turn answers 503, uncounted, before anything is read from the database), so a burst of
    logins never takes the pool from other requests; and gives back the reservation of an attempt
    that did not fail (a successful login on any path: the sign-in form, the token endpoint, the
    admin), once its response is ready."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.method != "POST" or request.path not in LOGIN_PATHS:
            return self._answer(request)
        with turn("login", settings.LOGIN_CHECKS_AT_ONCE, settings.LOGIN_QUEUE_WAIT_S) as taken:
            return self._answer(request) if taken else busy_response(request)

    def _answer(self, request):
        response = self.get_response(request)
        if getattr(request, "login_reserved", False) and not getattr(request, "login_failed", False):
            _refund(request)
        return response


def pair_wait_s(request, username: str) -> float:
    """Seconds the (username, address) pair must still wait before its next attempt (0: none), from
    axes' record of its failures within the lockout window."""
    now = timezone.now()
    failed = AccessAttempt.objects.filter(
        username=username, ip_address=get_client_ip_address(request),
        attempt_time__gte=now - settings.AXES_COOLOFF_TIME).aggregate(
        failures=Sum("failures_since_start"), last=Max("attempt_time"))
    past_free = (failed["failures"] or 0) - settings.LOGIN_DELAY_AFTER_FAILURES
    if past_free < 0:
        return 0.0
    delay_s = min(settings.LOGIN_DELAY_BASE_S * 2.0 ** min(past_free, 64), settings.AXES_COOLOFF_TIME.total_seconds())
    return max(0.0, (failed["last"] - now).total_seconds() + delay_s)


class PairDelayBackend:
    """Refuses an attempt on a (username, address) pair still in its wait (listed after the
    address ceiling and before axes' backend), without checking the password; axes' middleware
    then answers with :func:`lockout_response`, naming the seconds left."""

    def authenticate(self, request, username=None, **credentials):
        if request is None or not username:
            return None
        wait_s = pair_wait_s(request, username)
        if wait_s > 0:
            request.axes_locked_out = True
            request.login_wait_s = wait_s
            raise PermissionDenied("wait before the next login attempt")
        return None
