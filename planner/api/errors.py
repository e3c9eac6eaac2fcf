"""JSON errors for the API, in one place: field-level messages (400) for bad input (model
validation, a service's InputError, the engine's ScenarioError), 400 with the reasons for an
impossible plan, 503 when the task queue is down, 409 for protected deletes and work already under
way, 412 for a write that did not see the latest change."""
from django.core.exceptions import ObjectDoesNotExist
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db.models import ProtectedError
from rest_framework import exceptions, status
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

import simcore
from planner import metrics
from planner.serializers import as_drf_validation_error
from planner.services.errors import InputError
from planner.services.plans import PlanInfeasible
from planner.tasks import QueueUnavailable


class Conflict(exceptions.APIException):
    status_code = status.HTTP_409_CONFLICT
    default_detail = "conflicts with work under way"
    default_code = "conflict"


class PreconditionFailed(exceptions.APIException):
    status_code = status.HTTP_412_PRECONDITION_FAILED
    default_detail = "changed since you read it"
    default_code = "precondition_failed"


def _describe(obj) -> str:
    """Catalogue entries by name; anything a user owns (plans, sweeps, twins) only by its kind,
    so that a 409 never reveals another user's private work. One deleted meanwhile (its deferred
    fields can no longer be read) is named by its kind too."""
    try:
        if hasattr(obj, "owner_id"):
            return f"a {obj._meta.verbose_name}"
        return str(obj)
    except ObjectDoesNotExist:
        return f"a {obj._meta.verbose_name}"


def exception_handler(exc, context):
    """The error's JSON answer, rendered as JSON whatever format the request asked for (a CSV
    download's 404 is still the error body clients parse)."""
    response = _error_response(exc, context)
    request = context.get("request")
    if response is not None and request is not None:
        request.accepted_renderer, request.accepted_media_type = JSONRenderer(), "application/json"
    return response


def _error_response(exc, context):
    if isinstance(exc, DjangoValidationError):
        exc = as_drf_validation_error(exc)
    if isinstance(exc, InputError):
        return Response(exc.errors, status=status.HTTP_400_BAD_REQUEST)
    if isinstance(exc, simcore.ScenarioError):
        if isinstance(exc, simcore.budget.WorkBudgetExceeded):
            metrics.WORK_REFUSED.inc()
        return Response({exc.field: [exc.reason]}, status=status.HTTP_400_BAD_REQUEST)
    if isinstance(exc, PlanInfeasible):
        return Response({"feasible": False, "reasons": exc.reasons, "details": exc.details},
                        status=status.HTTP_400_BAD_REQUEST)
    if isinstance(exc, QueueUnavailable):
        return Response({"detail": exc.MESSAGE}, status=status.HTTP_503_SERVICE_UNAVAILABLE)
    if isinstance(exc, ProtectedError):
        used_by = sorted(_describe(obj) for obj in exc.protected_objects)
        return Response(
            {"detail": "this entry is still referenced and cannot be deleted", "referenced_by": used_by},
            status=status.HTTP_409_CONFLICT,
        )
    return drf_exception_handler(exc, context)
