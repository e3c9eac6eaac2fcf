"""Every error under ``/api/`` as an RFC 9457 problem document (``application/problem+json``).

The views, the exception handler and the request limits answer errors as JSON; this middleware,
outermost of them, writes each as one problem document: ``type`` (``about:blank``: the status
says it), ``title`` (the status's phrase), ``status``, ``detail`` (what went wrong, the bad
fields' reasons summed up where there are some) and ``errors``, each bad field with its reasons (a
scenario document's by its dotted path). An impossible plan adds its ``feasible``, ``reasons`` and
``details``; a protected delete its ``referenced_by``. Each bad field also stands as a member of
its own, as the API answered before, unless its name is one of RFC 9457's (a field ``status``
is in ``errors`` alone).
"""
import json
from http import HTTPStatus

PROBLEM_MEDIA_TYPE = "application/problem+json"
RFC_MEMBERS = ("type", "title", "status", "detail", "instance")
EXTENSIONS = ("feasible", "reasons", "details", "referenced_by")


def problem(status: int, body) -> dict:
    """The problem document of an error answer ``body`` (the JSON the API wrote) at ``status``."""
    body = body if isinstance(body, dict) else {"non_field_errors": body if isinstance(body, list) else [body]}
    errors = {key: value for key, value in body.items() if key != "detail" and key not in EXTENSIONS}
    summary = "; ".join(f"{field}: {' '.join(map(str, reasons)) if isinstance(reasons, list) else reasons}"
                        for field, reasons in errors.items())
    reasons = "; ".join(map(str, body.get("reasons") or []))
    detail = body.get("detail")
    document = {"type": "about:blank", "title": HTTPStatus(status).phrase, "status": status,
                "detail": str(detail) if detail is not None else (summary or reasons or HTTPStatus(status).description)}
    document.update({key: body[key] for key in EXTENSIONS if key in body})
    if errors:
        document["errors"] = errors
        document.update({field: value for field, value in errors.items() if field not in RFC_MEMBERS})
    return document


class ProblemDetailsMiddleware:
    """Rewrites every JSON error answer under /api/ as its problem document."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if (request.path.startswith("/api/") and response.status_code >= 400 and not response.streaming
                and response.get("Content-Type", "").startswith("application/json")):
            response.content = json.dumps(problem(response.status_code, json.loads(response.content or b"null")))
            response["Content-Type"] = PROBLEM_MEDIA_TYPE
            if response.has_header("Content-Length"):
                response["Content-Length"] = str(len(response.content))
        return response
