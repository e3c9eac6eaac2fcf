"""ASGI entry point: HTTP through Django, websockets through Channels.

Websocket routes are added by the apps that own them (sweeps in ``planner``, twins in ``twin``);
every websocket must come from a page of this site (its origin's host in ALLOWED_HOSTS and its host
and port the ones it connected to, or a trusted origin) and is authenticated by session.
"""
import gc
import os

import django
from asgiref.sync import sync_to_async
from django.core.handlers.asgi import ASGIHandler

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.base")
django.setup(set_prefix=False)


class OneHopASGIHandler(ASGIHandler):
    """Django's ASGI handler, with the middleware chain and the view run in one call on the
    process's sync thread.

    Django's own handler runs the chain in async mode and gives each sync step (every middleware's
    ``process_request``, ``process_view`` and ``process_response``, the view, the rendering) its own
    turn on that one thread: 16 turns for a catalogue read, each queued behind the turns of every
    other request in flight, so a cheap read waited for the evaluations around it. The project has
    no async views (websockets go to Channels), so nothing is lost by running the chain as WSGI
    does (docs/performance.md, "Load").
    """

    def load_middleware(self, is_async=False):
        super().load_middleware(is_async=False)

    async def get_response_async(self, request):
        return await sync_to_async(self.get_response, thread_sensitive=True)(request)


django_asgi_app = OneHopASGIHandler()

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402

from config.origins import SameOriginValidator  # noqa: E402
from config.websocket_routes import websocket_urlpatterns  # noqa: E402

application = ProtocolTypeRouter(
    {
        "http": django_asgi_app,
        "websocket": AllowedHostsOriginValidator(
            SameOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns)))
        ),
    }
)
# Everything loaded so far (Django, the apps, NumPy, the engine: some 200,000 objects) lives as
# long as the process. Moving it out of the collector's reach keeps each full collection to the
# objects made since; without this, every few seconds a full collection stopped the server for
# 70-200 ms in the load benchmark (docs/performance.md).
gc.freeze()
