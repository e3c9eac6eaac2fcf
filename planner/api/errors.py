"""JSON errors for the API: field-level messages for bad input, 409 for protected deletes."""
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db.models import ProtectedError
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from planner.serializers import as_drf_validation_error


def _describe(obj) -> str:
    """Catalogue entries by name; anything a user owns (plans, sweeps, twins) only by its kind,
    so that a 409 never reveals another user's private work."""
    if hasattr(obj, "owner_id"):
        return f"a {obj._meta.verbose_name}"
    return str(obj)


def exception_handler(exc, context):
    if isinstance(exc, DjangoValidationError):
        exc = as_drf_validation_error(exc)
    if isinstance(exc, ProtectedError):
        used_by = sorted(_describe(obj) for obj in exc.protected_objects)
        return Response(
            {"detail": "this entry is still referenced and cannot be deleted", "referenced_by": used_by},
            status=status.HTTP_409_CONFLICT,
        )
    return drf_exception_handler(exc, context)
