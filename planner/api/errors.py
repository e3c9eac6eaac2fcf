"""JSON errors for the API, in one place: field-level messages (400) for bad input (model
validation, a service's InputError, the engine's ScenarioError), 400 with the reasons for an
impossible plan, 503 when the task queue is down, 409 for protected deletes, work already under
way and a name another request took at the same moment, 412 for a write that did not see the
latest change."""
from django.apps import apps
from django.core.exceptions import ObjectDoesNotExist
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import IntegrityError
from django.db.models import ForeignKey, ProtectedError, UniqueConstraint
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


# PostgreSQL's SQLSTATE for a unique violation; SQLite says so in its message.
UNIQUE_VIOLATION = "23505"
SQLITE_UNIQUE = "UNIQUE constraint failed:"


def _unique_sets(model) -> list[tuple[str | None, tuple]]:
    """(constraint name or None, fields) of each uniqueness rule of a model: its UniqueConstraints,
    its unique_together sets and its unique fields."""
    meta = model._meta
    sets = [(c.name, tuple(meta.get_field(name) for name in c.fields)) for c in meta.constraints
            if isinstance(c, UniqueConstraint) and c.fields]
    sets += [(None, tuple(meta.get_field(name) for name in names)) for names in meta.unique_together]
    sets += [(None, (field,)) for field in meta.concrete_fields if field.unique and not field.primary_key]
    return sets


def unique_violation_field(exc: IntegrityError) -> str | None:
    """The field a uniqueness violation is about (the last of its set that is not a reference: a
    plan's ``slug``, a token's ``name`` rather than its owner), or None for any other integrity
    error. PostgreSQL names the table and constraint; SQLite lists the table's columns."""
    cause = exc.__cause__
    sqlstate = getattr(cause, "sqlstate", None)
    if sqlstate is not None:
        if sqlstate != UNIQUE_VIOLATION:
            return None
        table, name = cause.diag.table_name, cause.diag.constraint_name or ""
        columns = None
    elif exc.args and isinstance(exc.args[0], str) and exc.args[0].startswith(SQLITE_UNIQUE):
        pairs = [part.strip().rsplit(".", 1) for part in exc.args[0][len(SQLITE_UNIQUE):].split(",")]
        table, name, columns = pairs[0][0], "", {column for _, column in pairs}
    else:
        return None
    model = next((m for m in apps.get_models() if m._meta.db_table == table), None)
    if model is None:
        return None
    def violated(constraint, fields) -> bool:
        if columns is not None:  # SQLite: the set's columns are the ones listed
            return {f.column for f in fields} == columns
        return constraint == name if constraint else all(f.column in name for f in fields)

    for constraint, fields in sorted(_unique_sets(model), key=lambda item: -len(item[1])):
        if violated(constraint, fields):
            named = [f for f in fields if not isinstance(f, ForeignKey)] or list(fields)
            return named[-1].name
    return None


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
        return Response(exc.errors, status=getattr(exc, "status", status.HTTP_400_BAD_REQUEST))
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
    if isinstance(exc, IntegrityError) and (field := unique_violation_field(exc)):
        return Response({field: [f"another request took this {field.replace('_', ' ')} at the same moment: "
                                 "choose another"]}, status=status.HTTP_409_CONFLICT)
    return drf_exception_handler(exc, context)
