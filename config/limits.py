"""Request limits that act before a view reads anything."""
from django.conf import settings
from django.http import JsonResponse


class BodySizeLimitMiddleware:
    """Answer 413 to a request whose declared body is larger than API_MAX_BODY_BYTES, before the
    body is read (a body without a declared length is held to the same limit by Django's
    DATA_UPLOAD_MAX_MEMORY_SIZE, which answers 400)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            return JsonResponse({"detail": "Content-Length must be a whole number of bytes"}, status=400)
        limit = settings.API_MAX_BODY_BYTES
        if length > limit:
            return JsonResponse({"detail": f"request body of {length:,} bytes; at most {limit:,} bytes "
                                           "(API_MAX_BODY_BYTES)"}, status=413)
        return self.get_response(request)
