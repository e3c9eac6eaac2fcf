"""The answer to a login refused because its username or address is locked out (django-axes)."""
from django.conf import settings
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
