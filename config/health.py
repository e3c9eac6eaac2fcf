"""Liveness and readiness for container healthchecks and load balancers.

``/healthz/live/`` answers while the process serves requests. ``/healthz/ready/`` (and
``/healthz/``) checks each backing service separately (the database, the Celery broker, the channel
layer and the cache), each within a second or two, and answers 200 or 503. Anyone (a load
balancer, a container healthcheck) gets only up or down; staff also get each service's backend,
latency and error, which name the deployment's parts and so are not for strangers.
"""
import time
import uuid

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.conf import settings
from django.core.cache import cache
from django.db import connection
from django.http import JsonResponse

CHECK_TIMEOUT_S = 2.0


def _database():
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return connection.vendor


def _broker():
    if not settings.CELERY_BROKER_URL or settings.CELERY_BROKER_URL.startswith("memory"):
        return "in-process (no broker configured)"
    from config.celery import app

    with app.connection_for_write() as conn:
        conn.ensure_connection(max_retries=1, timeout=CHECK_TIMEOUT_S)
    return conn.transport_cls


def _channel_layer():
    layer = get_channel_layer()

    async def round_trip():
        import asyncio

        channel = await layer.new_channel()
        await layer.send(channel, {"type": "health.check"})
        await asyncio.wait_for(layer.receive(channel), CHECK_TIMEOUT_S)

    async_to_sync(round_trip)()
    return type(layer).__name__


def _cache():
    key = f"healthz:{uuid.uuid4().hex}"
    cache.set(key, 1, 10)
    if cache.get(key) != 1:
        raise RuntimeError("a value written was not read back")
    cache.delete(key)
    return settings.CACHES["default"]["BACKEND"].rsplit(".", 1)[-1]


CHECKS = {"database": _database, "broker": _broker, "channel_layer": _channel_layer, "cache": _cache}


def live(request):
    """The process is up and serving requests."""
    return JsonResponse({"status": "ok"})


def ready(request):
    """Every backing service reachable: each reported with its backend and latency, or its error."""
    report, healthy = {}, True
    for name, check in CHECKS.items():
        start = time.perf_counter()
        try:
            report[name] = {"status": "ok", "backend": str(check())}
        except Exception as error:  # noqa: BLE001 - any failure of a backing service means not ready
            healthy = False
            report[name] = {"status": "error", "error": f"{type(error).__name__}: {error}"}
        report[name]["ms"] = round((time.perf_counter() - start) * 1000, 1)
    body = {"status": "ok" if healthy else "error"}
    if request.user.is_authenticated and request.user.is_staff:
        body["checks"] = report
    return JsonResponse(body, status=200 if healthy else 503)
