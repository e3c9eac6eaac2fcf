from csp.constants import UNSAFE_INLINE
from csp.decorators import csp_update
from django.contrib import admin
from django.contrib.auth.decorators import login_required
from django.core.exceptions import DisallowedHost
from django.http import JsonResponse
from django.urls import include, path
from django.views import defaults
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from config import health
from config.observability import metrics
from planner.api.problems import PROBLEM_MEDIA_TYPE, problem

# Swagger UI with its start-up script served as a file (no inline script) and a way back to the app
# (frontend/api_docs.html); its stylesheet has an
# inline <style> block, so this one page allows inline styles. The schema and the docs describe
# every operation, so they are for signed-in users and token holders only (docs/THREAT_MODEL.md).
api_docs = login_required(csp_update({"style-src": [UNSAFE_INLINE]})(
    SpectacularSwaggerSplitView.as_view(url_name="api-schema", template_name="frontend/api_docs.html")))

urlpatterns = [
    path("healthz/", health.ready, name="healthz"),
    path("healthz/live/", health.live, name="healthz-live"),
    path("healthz/ready/", health.ready, name="healthz-ready"),
    path("metrics/", metrics, name="metrics"),
    path("admin/", admin.site.urls),
    path("api/", include("planner.api.urls")),
    path("api/", include("twin.api.urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("api/docs/", api_docs, name="api-docs"),
    path("", include("frontend.urls")),
]



def not_found(request, exception):
    """A path nothing serves: JSON under /api/ (what an API client parses), the site's page elsewhere."""
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": "Not found."}, status=404)
    return defaults.page_not_found(request, exception)


def bad_request(request, exception):
    """A request Django refuses before any view (a Host header not in ALLOWED_HOSTS, say): a problem
    document under /api/ (what an API client parses), the site's page elsewhere."""
    if request.path.startswith("/api/"):
        detail = ("the Host header names no host this server answers for (ALLOWED_HOSTS)"
                  if isinstance(exception, DisallowedHost) else "the request cannot be read")
        return JsonResponse(problem(400, {"detail": detail}), status=400, content_type=PROBLEM_MEDIA_TYPE)
    return defaults.bad_request(request, exception)


handler400 = bad_request
handler404 = not_found
