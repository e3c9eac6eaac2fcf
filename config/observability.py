"""Request ids, JSON logs and Prometheus metrics.

Every log line of the web, the Celery workers and the twin driver is one JSON object (unless
``LOG_FORMAT=text``) with an ISO 8601 UTC ``time``, its ``level``, ``logger``, the request id
and the Celery task id. Every request gets an id (the client's ``X-Request-ID`` when it is a
short token, else a new one), sent back in the ``X-Request-ID`` response header and written on
every log line the request causes, with one access line per request. ``/metrics/`` serves the
Prometheus metrics (django-prometheus's request metrics and the planner's counters in
``planner.metrics``) to the addresses in ``METRICS_ALLOWED_ADDRESSES`` and to staff.
"""
import contextvars
import logging
import re
import time
import uuid
from datetime import datetime, timezone

from django.conf import settings
from django.http import HttpResponseForbidden
from django_prometheus.exports import ExportToDjangoView
from pythonjsonlogger.json import JsonFormatter

request_id_var = contextvars.ContextVar("request_id", default="-")
REQUEST_ID_PATTERN = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
access_log = logging.getLogger("planner.access")

class RequestIdMiddleware:
    """Tags the request, its log lines and its response with a request id; logs one access line."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        offered = request.headers.get("X-Request-ID", "")
        request_id = offered if REQUEST_ID_PATTERN.match(offered) else uuid.uuid4().hex
        token = request_id_var.set(request_id)
        request.request_id = request_id
        start = time.perf_counter()
        try:
            response = self.get_response(request)
            response["X-Request-ID"] = request_id
            access_log.info("%s %s %s", request.method, request.path, response.status_code, extra={
                "method": request.method, "path": request.path, "status": response.status_code,
                "duration_ms": round((time.perf_counter() - start) * 1000, 1)})
            return response
        finally:
            request_id_var.reset(token)


class RequestIdFilter(logging.Filter):
    """Puts the current request's id and the current Celery task's id (``-`` outside either) on
    every log record."""

    def filter(self, record):
        from celery import current_task

        record.request_id = request_id_var.get()
        record.task_id = getattr(current_task, "request", None) and current_task.request.id or "-"
        return True


class UtcJsonFormatter(JsonFormatter):
    """JSON lines whose ``time`` is ISO 8601 in UTC with its zone (``2026-12-02T05:20:00.123+00:00``)."""

    def formatTime(self, record, datefmt=None):
        return datetime.fromtimestamp(record.created, timezone.utc).isoformat(timespec="milliseconds")


def metrics(request):
    """Prometheus metrics, for the allowed addresses (a scraper) and staff. The address is the
    client's behind the ``LOGIN_PROXY_COUNT`` proxies the operator declared; a request that came
    through a proxy nobody declared (it carries X-Forwarded-For) is a client's, whatever the proxy's
    own address, so a same-host proxy does not open the metrics to everyone."""
    from axes.helpers import get_client_ip_address  # not at import: the logging set-up imports this module

    undeclared_proxy = "HTTP_X_FORWARDED_FOR" in request.META and not settings.AXES_IPWARE_PROXY_COUNT
    allowed = get_client_ip_address(request) in settings.METRICS_ALLOWED_ADDRESSES and not undeclared_proxy
    if not (allowed or (request.user.is_authenticated and request.user.is_staff)):
        return HttpResponseForbidden("metrics are served to METRICS_ALLOWED_ADDRESSES and staff only")
    return ExportToDjangoView(request)
