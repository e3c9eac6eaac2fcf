"""Helpers shared by the websocket tests."""
from django.test import Client


def session_headers(user, origin: bytes = b"http://localhost") -> list[tuple[bytes, bytes]]:
    """Headers of a browser signed in as ``user``: its session cookie and an Origin."""
    client = Client()
    client.force_login(user)
    return [(b"origin", origin), (b"cookie", f"sessionid={client.cookies['sessionid'].value}".encode())]
