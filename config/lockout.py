"""Login lockout: django-axes counts failures per (username, address) pair, and this module adds a
per-address ceiling that no successful login resets; both answer 429 on every login path.

A pair lock stops guessing one account's password from one address without touching the real
user, who logs in from their own address; a success resets only its own pair, so an attacker's
logins to an account of their own never clear their failures against another. The ceiling bounds
guessing across accounts from one address: ``LOGIN_ADDRESS_FAILURE_LIMIT`` failures within
``LOGIN_LOCKOUT_MINUTES`` lock the address, whatever succeeds in between.
"""
from axes.helpers import get_client_ip_address
from django.conf import settings
from django.contrib.auth.signals import user_login_failed
from django.core.cache import cache
from django.core.exceptions import PermissionDenied
from django.dispatch import receiver
from django.http import JsonResponse
from django.shortcuts import render

LOCKOUT_MESSAGE = ("Too many failed logins for this account or from this address: try again in {minutes:g} "
                   "minutes, or ask staff to unlock it.")


def lockout_response(request, original_response=None, credentials=None):
    """429 with a Retry-After header: JSON for the API, the lockout page for the login forms."""
    retry_after_s = int(settings.AXES_COOLOFF_TIME.total_seconds())
    message = LOCKOUT_MESSAGE.format(minutes=retry_after_s / 60)
    if request.path.startswith("/api/"):
        response = JsonResponse({"detail": message, "retry_after_s": retry_after_s}, status=429)
    else:
        response = render(request, "frontend/locked_out.html", {"message": message}, status=429)
    response["Retry-After"] = str(retry_after_s)
    return response


def _address_key(request) -> str:
    return f"login-failures:{get_client_ip_address(request)}"


def address_failures(request) -> int:
    """Failed logins from the request's address in the current window (any username)."""
    return int(cache.get(_address_key(request), 0))


@receiver(user_login_failed)
def count_address_failure(sender, credentials=None, request=None, **kwargs):
    """Every failed login on any path counts against its address for a lockout window from the first."""
    if request is None:
        return
    key = _address_key(request)
    cache.add(key, 0, timeout=int(settings.AXES_COOLOFF_TIME.total_seconds()))
    try:
        cache.incr(key)
    except ValueError:  # the window ended between add and incr: this failure opens the next one
        cache.add(key, 1, timeout=int(settings.AXES_COOLOFF_TIME.total_seconds()))


class AddressCeilingBackend:
    """Refuses every login from an address over the ceiling before any password is checked (listed
    first in AUTHENTICATION_BACKENDS); axes' middleware then answers with :func:`lockout_response`."""

    def authenticate(self, request, **credentials):
        if request is not None and address_failures(request) >= settings.LOGIN_ADDRESS_FAILURE_LIMIT:
            request.axes_locked_out = True
            raise PermissionDenied("too many failed logins from this address")
        return None
