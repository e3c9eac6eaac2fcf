from django.db import connection
from django.http import JsonResponse


def healthz(request):
    """Liveness and database reachability for container healthchecks."""
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except Exception as error:  # noqa: BLE001 - any database failure means unhealthy
        return JsonResponse({"status": "error", "database": str(error)}, status=503)
    return JsonResponse({"status": "ok"})
