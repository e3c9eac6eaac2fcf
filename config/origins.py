"""The websocket origin check: a page of this very site, or an origin the deployment trusts."""
from urllib.parse import urlsplit

from channels.security.websocket import WebsocketDenier
from django.conf import settings

DEFAULT_PORTS = {"http": 80, "https": 443}


def same_origin(origin: str, host: str) -> bool:
    """Whether ``origin`` (scheme://host[:port]) names the host and port of the ``host`` header,
    the scheme's default port standing in for a missing one."""
    parsed = urlsplit(origin)
    if parsed.scheme not in DEFAULT_PORTS or not parsed.hostname or not host:
        return False
    connected = urlsplit(f"//{host}")
    default = DEFAULT_PORTS[parsed.scheme]
    try:
        return (parsed.hostname, parsed.port or default) == (connected.hostname, connected.port or default)
    except ValueError:  # a port that is not a number
        return False


class SameOriginValidator:
    """Accept a websocket only from a page of this site: its Origin must name the host and port
    it connected to (the Host header), or be listed in CSRF_TRUSTED_ORIGINS (for a proxy that
    rewrites Host). Channels' AllowedHostsOriginValidator, in front of this, checks the host
    against ALLOWED_HOSTS but accepts any port on it, so a page served from another port of an
    allowed host could open a socket with the user's cookies."""

    def __init__(self, application):
        self.application = application

    async def __call__(self, scope, receive, send):
        headers = {name: value.decode("latin1") for name, value in scope.get("headers", [])}
        origin, host = headers.get(b"origin", ""), headers.get(b"host", "")
        if origin in settings.CSRF_TRUSTED_ORIGINS or same_origin(origin, host):
            return await self.application(scope, receive, send)
        return await WebsocketDenier()(scope, receive, send)
