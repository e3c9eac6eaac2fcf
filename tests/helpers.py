"""Helpers shared by the websocket tests."""
from django.test import Client

HOST = (b"host", b"localhost")  # the address a browser on a page of http://localhost connects to
ANONYMOUS = [(b"origin", b"http://localhost"), HOST]


def session_headers(user, origin: bytes = b"http://localhost") -> list[tuple[bytes, bytes]]:
    """Headers of a browser signed in as ``user`` on a page of http://localhost: an Origin, its
    session cookie and the Host it connects to."""
    client = Client()
    client.force_login(user)
    return [(b"origin", origin), (b"cookie", f"sessionid={client.cookies['sessionid'].value}".encode()), HOST]
